"""Forgetting route 2, selection window / top-N cap: summaries that left the selection (spec 6).

Contract: `selection_window_actions(deleted_paths)` turns the `rollout_summaries/` files a
phase-2 sync deleted (`consolidate.inputs.sync_rollout_summaries` decides which: every file the
selection no longer makes) into one `ForgetAction` per file, in the given order. The same
deletion is also the file side of routes 1, 3, 4 and 5, whose rows are already gone or
disabled; it is audited here, as the sync sees it.

Pure: no I/O. The caller (`consolidate.steps.sync_inputs`) records the actions.
"""

from __future__ import annotations

from codex_memories.forget.audit import ForgetAction
from codex_memories.state.records import ForgetRoute

REASON = "no longer among the selected stage-1 outputs (window, top-N, or its row was forgotten)"


def selection_window_actions(deleted_paths: list[str]) -> list[ForgetAction]:
    """One action per summary file the sync deleted."""
    return [
        ForgetAction(route=ForgetRoute.selection_window, target=path, reason=REASON, removed={"file": path})
        for path in deleted_paths
    ]
