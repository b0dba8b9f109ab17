"""Forgetting routes 4, 5 and 7 (spec section 6), each leaving a `forget_audit` row.

Routes 1 (retention prune), 2 (selection window), 3 (empty re-extraction) and 6 (extension
expiry) live where they happen (`tasks/retention.py`, `phase2.sync_inputs`, `extraction`,
`phase2.prune_extension_resources`) and audit there. This module holds the others:

- Route 4, thread deletion: `forget_deleted_threads` (rollout files that disappeared; discovery
  marked their threads missing) and `forget_thread` (a user asked to forget one thread).
- Route 5, pollution / disabling: `disable_thread`, `pollute_thread`, and
  `audit_polluted_threads` for the threads discovery already marked polluted.
- Route 7, manual: `audit_manual_changes` (ad-hoc notes and user edits that a consolidation
  integrated, read from its workspace diff) and `reset_memories` (the global reset).

Every function that changes something records one audit row per target and returns the
`ForgetAction`s it recorded; a call that finds nothing to do records nothing. Memory text in
`MEMORY.md` / `memory_summary.md` / `skills/` is never edited here: the DB routes change what
phase 2 selects, the next phase 2 sync deletes the input files, and the consolidator removes what
only those inputs supported (spec 6). The DB side effects (enqueueing phase 2 when a selected
memory goes) are the store's.

Idempotent: forgetting something already forgotten finds nothing and audits nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute, JobKind, JobStatus, MemoryMode
from codex_memories.state.store import MemoryStore
from codex_memories.storage import MemoryRoot
from codex_memories.consolidate.workspace import Change

NOTE_PREVIEW_CHARACTERS = 200
USER_EDITABLE_FILES = (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE)


class UnknownThread(LookupError):
    """The thread id is not in the state DB (discovery has never seen its rollout)."""


class ResetRefused(RuntimeError):
    """A reset would race a running consolidation."""


@dataclass(frozen=True)
class ForgetAction:
    """What one route removed from one target, and why (one `forget_audit` row)."""

    route: ForgetRoute
    target: str
    reason: str
    removed: dict[str, Any]


def record(store: MemoryStore, action: ForgetAction) -> ForgetAction:
    store.record_forget_audit(route=action.route, target=action.target, reason=action.reason, removed=action.removed)
    return action


# ---- route 4: thread deletion ------------------------------------------------------------


def forget_deleted_threads(store: MemoryStore) -> list[ForgetAction]:
    """Delete the memory of every thread whose rollout file has disappeared.

    Looks at all threads marked missing (not only the ones this run's discovery found), so a run
    that stopped half way is completed by the next one; a missing thread without a stage-1
    output has nothing to forget. The thread row stays, marked missing, and is never claimed
    again unless its file comes back."""
    actions = []
    for thread in store.list_missing_threads():
        output = store.get_stage1_output(thread.id)
        if output is None or not store.delete_thread_memory(thread.id):
            continue
        actions.append(
            record(
                store,
                ForgetAction(
                    route=ForgetRoute.thread_deletion,
                    target=thread.id,
                    reason=f"rollout file disappeared: {thread.rollout_path}",
                    removed=_output_facts(output.rollout_slug, output.source_updated_at, output.selected_for_phase2),
                ),
            )
        )
    return actions


def forget_thread(store: MemoryStore, thread_id: str, *, reason: str = "forgotten on request") -> ForgetAction | None:
    """Delete one thread's memory and keep it from coming back.

    The rollout file usually still exists, so deleting the stage-1 row alone would let the next
    phase 1 extract it again: the thread is also set to memory mode `disabled`. None when there
    was nothing to forget (no memory and already disabled)."""
    thread = _require_thread(store, thread_id)
    output = store.get_stage1_output(thread_id)
    memory_deleted = store.delete_thread_memory(thread_id)
    mode_changed = store.set_thread_memory_mode(thread_id, MemoryMode.disabled)
    if not memory_deleted and not mode_changed:
        return None
    removed: dict[str, Any] = {"stage1_output": None}
    if output is not None and memory_deleted:
        removed = _output_facts(output.rollout_slug, output.source_updated_at, output.selected_for_phase2)
    if mode_changed:
        removed["memory_mode"] = f"{thread.memory_mode.value} -> {MemoryMode.disabled.value}"
    return record(
        store, ForgetAction(route=ForgetRoute.thread_deletion, target=thread_id, reason=reason, removed=removed)
    )


# ---- route 5: pollution and disabling ----------------------------------------------------


def disable_thread(store: MemoryStore, thread_id: str, *, reason: str = "memory disabled on request") -> ForgetAction | None:
    """Set the thread's memory mode to `disabled`: no more claims, out of every phase-2 selection.

    The stage-1 row stays (spec 6, route 5); the store enqueues phase 2 when it was selected, so
    the next sync deletes its summary. None when the thread was already disabled."""
    thread = _require_thread(store, thread_id)
    output = store.get_stage1_output(thread_id)
    if not store.set_thread_memory_mode(thread_id, MemoryMode.disabled):
        return None
    return record(
        store,
        ForgetAction(
            route=ForgetRoute.disabled,
            target=thread_id,
            reason=reason,
            removed=_mode_facts(thread.memory_mode, MemoryMode.disabled, output),
        ),
    )


def pollute_thread(store: MemoryStore, thread_id: str, *, reason: str = "marked polluted on request") -> ForgetAction | None:
    """Mark the thread `polluted` (it used external context); None when it already was."""
    thread = _require_thread(store, thread_id)
    output = store.get_stage1_output(thread_id)
    if not store.mark_thread_memory_mode_polluted(thread_id):
        return None
    return record(
        store,
        ForgetAction(
            route=ForgetRoute.pollution,
            target=thread_id,
            reason=reason,
            removed=_mode_facts(thread.memory_mode, MemoryMode.polluted, output),
        ),
    )


def audit_polluted_threads(store: MemoryStore, thread_ids: list[str]) -> list[ForgetAction]:
    """Audit the threads discovery has just marked polluted (discovery made the change)."""
    actions = []
    for thread_id in thread_ids:
        output = store.get_stage1_output(thread_id)
        actions.append(
            record(
                store,
                ForgetAction(
                    route=ForgetRoute.pollution,
                    target=thread_id,
                    reason="the session used external context and disable_on_external_context is on",
                    removed=_mode_facts(MemoryMode.enabled, MemoryMode.polluted, output),
                ),
            )
        )
    return actions


# ---- route 7: manual ---------------------------------------------------------------------


def audit_manual_changes(store: MemoryStore, root_dir: Path, changes: list[Change]) -> list[ForgetAction]:
    """Audit the notes and user edits a consolidation has just integrated (its workspace diff).

    `A`/`M` under `extensions/ad_hoc/notes/` is an ad-hoc note (with a preview of its text);
    any change to `MEMORY.md`, `memory_summary.md` or `skills/` since the last baseline was made
    by someone other than the consolidator: a user edit. Call it once per consolidation, after
    the baseline reset, so each change is audited once."""
    actions = []
    notes_prefix = paths.ad_hoc_notes_dir() + "/"
    for change in changes:
        if change.path.startswith(notes_prefix) and change.status in ("A", "M"):
            action = ForgetAction(
                route=ForgetRoute.ad_hoc_note,
                target=change.path,
                reason="ad-hoc note " + ("added" if change.status == "A" else "edited") + ", given to the consolidator",
                removed={"status": change.status, "note": _note_preview(root_dir / change.path)},
            )
        elif change.path in USER_EDITABLE_FILES or change.path.startswith(paths.SKILLS_DIR + "/"):
            action = ForgetAction(
                route=ForgetRoute.user_edit,
                target=change.path,
                reason="changed outside consolidation (a user edit), taken as authoritative",
                removed={"status": change.status},
            )
        else:
            continue
        actions.append(record(store, action))
    return actions


@dataclass(frozen=True)
class ResetPlan:
    """What a reset deletes: state-DB rows per table/job kind and the memory folder's files."""

    memory_root: str
    rows: dict[str, int]
    memory_files: int
    has_git_baseline: bool

    def describe(self) -> str:
        rows = ", ".join(f"{count} {name}" for name, count in self.rows.items())
        baseline = " and the git baseline" if self.has_git_baseline else ""
        return f"state DB rows: {rows}; memory folder {self.memory_root}: {self.memory_files} file(s){baseline}"


def plan_reset(store: MemoryStore, root: MemoryRoot) -> ResetPlan:
    """Count what `reset_memories` would delete; refuse while a consolidation holds its lease."""
    summary = store.status_summary()
    job = summary.last_phase2_job
    if job is not None and job.status == JobStatus.running.value and (job.lease_until or 0) > int(time.time()):
        raise ResetRefused("phase 2 is consolidating right now; reset when it has finished")
    rows = {"stage1_outputs": summary.stage1_outputs}
    for kind in (JobKind.stage1, JobKind.consolidate_global):
        rows[kind.value] = sum(summary.jobs_by_kind_and_status.get(kind.value, {}).values())
    exists = root.is_dir(None)
    memory_files = len(root.file_sizes(exclude_internal=True)) if exists else 0
    has_baseline = exists and (root.exists(paths.GIT_DIR) or root.exists(paths.WORKSPACE_STATE_DIR))
    return ResetPlan(memory_root=root.url, rows=rows, memory_files=memory_files, has_git_baseline=has_baseline)


def reset_memories(store: MemoryStore, root: MemoryRoot, *, reason: str = "reset on request") -> ForgetAction:
    """Forget everything: every stage-1 output and memory job, and the memory folder's contents.

    Threads and their memory modes stay, so the next phase 1 re-extracts every enabled thread
    and the next phase 2 starts from an empty folder (spec 6, route 7). The DB goes first: a
    failure half way leaves files that the next phase 2 reconciles against an empty selection."""
    plan = plan_reset(store, root)
    rows = store.clear_memory_data()
    files = clear_memory_root(root)
    return record(
        store,
        ForgetAction(
            route=ForgetRoute.manual_reset,
            target=root.url,
            reason=reason,
            removed={"rows": rows, "memory_files": files, "git_baseline": plan.has_git_baseline},
        ),
    )


def clear_memory_root(root: MemoryRoot) -> int:
    """Delete everything inside the memory root, `.git` included (the root folder stays).

    Returns the number of memory files deleted (git internals not counted)."""
    if not root.is_dir(None):
        return 0
    deleted = len(root.file_sizes(exclude_internal=True))
    for entry in root.list_dir(None):
        if entry.kind == "dir":
            root.delete_tree(entry.path)
        else:
            root.delete(entry.path, missing_ok=True)
    return deleted


# ---- reading the audit -------------------------------------------------------------------


def audit_rows_since(store: MemoryStore, since: int) -> list[ForgetAuditRecord]:
    """Audit rows written at or after `since` (Unix seconds): what a run forgot, for its report.

    Rows that other runs wrote in the same window are included; the audit has no run id."""
    return store.list_forget_audit(since=since)


# ---- helpers -----------------------------------------------------------------------------


def _require_thread(store: MemoryStore, thread_id: str) -> Any:
    thread = store.get_thread(thread_id)
    if thread is None:
        raise UnknownThread(f"no thread {thread_id!r} in the state DB (has discovery seen its rollout?)")
    return thread


def _output_facts(slug: str | None, source_updated_at: int, selected: bool) -> dict[str, Any]:
    return {"stage1_output": {"rollout_slug": slug, "source_updated_at": source_updated_at}, "was_selected_for_phase2": selected}


def _mode_facts(before: MemoryMode, after: MemoryMode, output: Any) -> dict[str, Any]:
    return {
        "memory_mode": f"{before.value} -> {after.value}",
        "stage1_output_kept": output is not None,
        "phase2_enqueued": bool(output is not None and output.selected_for_phase2),
    }


def _note_preview(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return text.strip()[:NOTE_PREVIEW_CHARACTERS]
