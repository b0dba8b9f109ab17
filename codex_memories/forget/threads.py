"""Forgetting routes 4 and 5, the thread routes: one thread's memory goes (spec 6).

Route 4, thread deletion:
- `forget_deleted_threads(store)`: every thread discovery marked missing (its rollout file
  disappeared) that still has a stage-1 output loses it (output row and stage-1 job deleted).
  It looks at all missing threads, not only this run's, so a run cut short is completed by the
  next one. The thread row stays, marked missing, and is never claimed again unless its file
  comes back.
- `forget_thread(store, thread_id)`: on request. The rollout file usually still exists, so the
  thread is also set to memory mode `disabled`, or the next phase 1 would extract it again.

Route 5, pollution / disabling:
- `disable_thread` / `pollute_thread`: memory mode `disabled` / `polluted`; the thread leaves
  every phase-2 selection and is never claimed again. The stage-1 row stays.
- `polluted_thread_actions(store, thread_ids)`: discovery has already marked these threads
  polluted (external context with `disable_on_external_context`); this only describes it.

Inputs: an open `MemoryStore` and thread ids; the on-request functions raise `UnknownThread` for
an id the state DB has never seen. Outputs: the `ForgetAction`s to record, one per thread that
changed; an empty list when nothing changed. Side effects: the DB changes above (the store
enqueues phase 2 when a selected memory goes, so the next sync deletes its files); the on-request
functions also prune the project's exported team memory file (`forget.team_files`), and
`forget_thread` records the thread in the memory folder's forget ledger first; no audit row
(the caller records the actions with `audit.record_actions`) and no memory-folder file.
Idempotent: forgetting what is already forgotten changes nothing and returns nothing.
"""

from __future__ import annotations

from typing import Any

from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.ledger import record_in_ledger
from codex_memories.forget.team_files import TeamFiles
from codex_memories.state.records import ForgetRoute, MemoryMode, Stage1Output, ThreadRecord
from codex_memories.state.store import MemoryStore
from codex_memories.storage import MemoryRoot

POLLUTED_BY_DISCOVERY = "the session used external context and disable_on_external_context is on"


class UnknownThread(LookupError):
    """The thread id is not in the state DB (discovery has never seen its rollout)."""


# ---- route 4: thread deletion ------------------------------------------------------------


def forget_deleted_threads(store: MemoryStore) -> list[ForgetAction]:
    """Delete the memory of every thread whose rollout file has disappeared."""
    actions = []
    for thread in store.list_missing_threads():
        output = store.get_stage1_output(thread.id)
        if output is None or not store.delete_thread_memory(thread.id):
            continue
        actions.append(
            ForgetAction(
                route=ForgetRoute.thread_deletion,
                target=thread.id,
                reason=f"rollout file disappeared: {thread.rollout_path}",
                removed=_output_facts(output),
            )
        )
    return actions


def forget_thread(
    store: MemoryStore, thread_id: str, *, root: MemoryRoot | None, reason: str = "forgotten on request", team_files: bool = True
) -> list[ForgetAction]:
    """Delete one thread's memory and keep it from coming back (memory mode `disabled`).

    `root`: the memory folder whose forget ledger records the thread first (`forget.ledger`), so
    a run with another state DB does not bring it back; None only for a caller that recorded it
    already (a project's forget, the ledger's own honouring). `team_files`: also prune the
    project's exported team file (`forget.team_files`); a caller that forgets many threads at
    once prunes once itself."""
    thread = _require_thread(store, thread_id)
    if root is not None:
        record_in_ledger(root, lambda ledger: ledger.add_threads([thread_id]))
    team = TeamFiles.before(store, [thread.cwd]) if team_files else TeamFiles()
    output = store.get_stage1_output(thread_id)
    memory_deleted = store.delete_thread_memory(thread_id)
    mode_changed = store.set_thread_memory_mode(thread_id, MemoryMode.disabled)
    if not memory_deleted and not mode_changed:
        return []
    removed: dict[str, Any] = {"stage1_output": None}
    if output is not None and memory_deleted:
        removed = _output_facts(output)
    if mode_changed:
        removed["memory_mode"] = f"{thread.memory_mode.value} -> {MemoryMode.disabled.value}"
    return [ForgetAction(route=ForgetRoute.thread_deletion, target=thread_id, reason=reason, removed=team.record(store, removed))]


# ---- route 5: pollution and disabling ----------------------------------------------------


def disable_thread(store: MemoryStore, thread_id: str, *, reason: str = "memory disabled on request") -> list[ForgetAction]:
    """Memory mode `disabled`; nothing when the thread already was."""
    thread = _require_thread(store, thread_id)
    team = TeamFiles.before(store, [thread.cwd])
    output = store.get_stage1_output(thread_id)
    if not store.set_thread_memory_mode(thread_id, MemoryMode.disabled):
        return []
    return [
        ForgetAction(
            route=ForgetRoute.disabled,
            target=thread_id,
            reason=reason,
            removed=team.record(store, _mode_facts(thread.memory_mode, MemoryMode.disabled, output)),
        )
    ]


def pollute_thread(
    store: MemoryStore, thread_id: str, *, reason: str = "marked polluted on request", team_files: bool = True
) -> list[ForgetAction]:
    """Memory mode `polluted` (the thread used external context); nothing when it already was.

    `team_files`: also prune the project's exported team file; phase 2's quarantine, which is
    not a user's request, passes False (the SessionStart hook gates the file's lines itself)."""
    thread = _require_thread(store, thread_id)
    team = TeamFiles.before(store, [thread.cwd]) if team_files else TeamFiles()
    output = store.get_stage1_output(thread_id)
    if not store.mark_thread_memory_mode_polluted(thread_id):
        return []
    return [
        ForgetAction(
            route=ForgetRoute.pollution,
            target=thread_id,
            reason=reason,
            removed=team.record(store, _mode_facts(thread.memory_mode, MemoryMode.polluted, output)),
        )
    ]


def polluted_thread_actions(store: MemoryStore, thread_ids: list[str]) -> list[ForgetAction]:
    """Describe the threads discovery has just marked polluted (discovery made the change)."""
    return [
        ForgetAction(
            route=ForgetRoute.pollution,
            target=thread_id,
            reason=POLLUTED_BY_DISCOVERY,
            removed=_mode_facts(MemoryMode.enabled, MemoryMode.polluted, store.get_stage1_output(thread_id)),
        )
        for thread_id in thread_ids
    ]


# ---- helpers -----------------------------------------------------------------------------


def _require_thread(store: MemoryStore, thread_id: str) -> ThreadRecord:
    thread = store.get_thread(thread_id)
    if thread is None:
        raise UnknownThread(f"no thread {thread_id!r} in the state DB (has discovery seen its rollout?)")
    return thread


def _output_facts(output: Stage1Output) -> dict[str, Any]:
    return {
        "stage1_output": {"rollout_slug": output.rollout_slug, "source_updated_at": output.source_updated_at},
        "was_selected_for_phase2": output.selected_for_phase2,
    }


def _mode_facts(before: MemoryMode, after: MemoryMode, output: Stage1Output | None) -> dict[str, Any]:
    return {
        "memory_mode": f"{before.value} -> {after.value}",
        "stage1_output_kept": output is not None,
        "phase2_enqueued": bool(output is not None and output.selected_for_phase2),
    }
