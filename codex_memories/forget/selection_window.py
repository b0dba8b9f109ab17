"""Forgetting route 2, selection window / top-N cap: summaries that left the selection (spec 6).

Contract: `selection_window_actions(deleted_paths)` turns the `rollout_summaries/` files a
phase-2 sync deleted (`memory_folder.inputs.sync_rollout_summaries` decides which: every file the
selection no longer makes) into one `ForgetAction` per file, in the given order. The same
deletion is also the file side of routes 1, 3, 4 and 5, whose rows are already gone or
disabled; it is audited here, as the sync sees it.

`next_selection_ageing(oldest_ranking_time, max_unused_days)` is when the route next changes the
selection by time alone: the oldest selectable output's ranking time (the store's
`Phase2InputsState.oldest_ranking_time`) leaving the window; phase 2's early finish keeps a
settled folder until then (`forget.routes`).

Pure: no I/O. The caller (`consolidate.steps.sync_inputs`) records the actions.
"""

from __future__ import annotations

from codex_memories.forget.audit import ForgetAction
from codex_memories.state.records import SECONDS_PER_DAY, ForgetRoute

REASON = "no longer among the selected stage-1 outputs (window, top-N, or its row was forgotten)"


def selection_window_actions(deleted_paths: list[str]) -> list[ForgetAction]:
    """One action per summary file the sync deleted."""
    return [
        ForgetAction(route=ForgetRoute.selection_window, target=path, reason=REASON, removed={"file": path})
        for path in deleted_paths
    ]


def next_selection_ageing(oldest_ranking_time: int | None, *, max_unused_days: int) -> int | None:
    """Epoch seconds at which the oldest selectable output leaves the window, or None."""
    return None if oldest_ranking_time is None else oldest_ranking_time + max_unused_days * SECONDS_PER_DAY
