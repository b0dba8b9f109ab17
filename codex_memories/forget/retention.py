"""Forgetting route 1, retention prune: stale, unselected stage-1 rows go (spec 6, 9.4).

Contract: `prune_stale_outputs(store, max_unused_days=, limit=)` deletes up to `limit`
`stage1_outputs` rows that phase 2 did not select and nobody used for `max_unused_days`
(stalest first; the store's `prune_stage1_outputs_for_retention` decides which) and returns one
`ForgetAction` per deleted row, stalest first. Their jobs rows stay, so the threads are not
extracted again.

Side effects: the row deletion only; the caller records the actions (`audit.record_actions`).
Idempotent: a second call finds no stale row left and returns nothing.
"""

from __future__ import annotations

from codex_memories.forget.audit import ForgetAction
from codex_memories.state.records import ForgetRoute
from codex_memories.state.store import MemoryStore


def prune_stale_outputs(store: MemoryStore, *, max_unused_days: int, limit: int) -> list[ForgetAction]:
    """Delete the stale, unselected stage-1 rows; one action per row deleted."""
    pruned = store.prune_stage1_outputs_for_retention(max_unused_days=max_unused_days, limit=limit)
    return retention_actions(pruned, max_unused_days=max_unused_days)


def retention_actions(thread_ids: list[str], *, max_unused_days: int) -> list[ForgetAction]:
    """The actions for stage-1 rows the retention prune deleted (pure)."""
    return [
        ForgetAction(
            route=ForgetRoute.retention_prune,
            target=thread_id,
            reason=f"unselected and unused for more than {max_unused_days} days",
            removed={"stage1_output": thread_id},
        )
        for thread_id in thread_ids
    ]
