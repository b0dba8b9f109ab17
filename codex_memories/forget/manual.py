"""Forgetting route 7, manual: the user's notes and edits, and the global reset (spec 6, 7.1).

Contract:
- `manual_change_actions(root_dir, changes)`: from the workspace diff a consolidation has just
  integrated, one `ForgetAction` per ad-hoc note (`A`/`M` under `extensions/ad_hoc/notes/`, with
  a preview of its text) and per user edit (any change to `MEMORY.md`, `memory_summary.md` or
  `skills/`: the consolidator did not make it, so it is authoritative). Other changes describe
  nothing. Reads the note files; writes nothing. Call it once per consolidation, after
  ownership is confirmed, so each change is recorded once (the baseline reset that follows
  makes the next diff start after it).
- `plan_reset(store, root)`: what a reset would delete (counts only); raises `ResetRefused`
  while a consolidation holds its lease.
- `reset_memories(store, root)`: deletes every stage-1 output and memory job (threads and their
  memory modes stay, so everything is extracted again), everything inside the memory root,
  `.git` included, the copies of the folder a phase 2 keeps beside a local one
  (`phase2_copies`: staging copies of stopped runs, a proposal waiting for review), and prunes
  the exported team memory files of every project a thread ran in (`forget.team_files`);
  returns the one `ForgetAction` describing it. The DB goes first: a failure
  half way leaves files that the next phase 2 reconciles against an empty selection.
  Idempotent in effect: a second reset deletes nothing more (it still describes itself).
- `clear_memory_root(root)`: the file side of the reset.
- `phase2_copies(root_dir)`: the copies of a local memory folder phase 2 keeps beside it, each
  holding the memory as it was when made (read-only; while no phase 2 holds its lease every
  staging copy is a stopped run's).

No function here writes an audit row: the caller records the actions (`audit.record_actions`).
Memory text is never edited here; the consolidator integrates notes and edits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from codex_memories import paths
from codex_memories.forget.audit import ForgetAction, ForgetIncomplete
from codex_memories.forget.team_files import TeamFiles
from codex_memories.memory_folder.staging import discard, proposal_path, resolve_live_folder, staging_copies
from codex_memories.memory_folder.workspace import Change
from codex_memories.state.records import GLOBAL_JOB_KEY, ForgetRoute, JobKind, JobRecord, JobStatus
from codex_memories.state.store import MemoryStore
from codex_memories.paths import WORKSPACE_STATE_DIR
from codex_memories.storage import FOLDER_HISTORY_PATHS, MemoryRoot

NOTE_PREVIEW_CHARACTERS = 200
USER_EDITABLE_FILES = (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE)


class ResetRefused(RuntimeError):
    """A reset would race a running consolidation."""


@dataclass(frozen=True)
class Phase2Copy:
    """A copy of the memory folder beside it, and what it is."""

    path: Path
    why: str


def phase2_copies(root_dir: Path) -> list[Phase2Copy]:
    """The staging copies of stopped phase-2 runs and the proposal waiting for review, beside `root_dir`."""
    live = resolve_live_folder(root_dir)
    found = [Phase2Copy(path, "a copy of the memory folder a stopped phase 2 left behind") for path in staging_copies(live)]
    proposal = proposal_path(live)
    if proposal.is_dir():
        found.append(
            Phase2Copy(proposal, "the consolidation waiting for review, made from the memory as it was; the next phase 2 proposes again")
        )
    return found


# ---- notes and user edits ----------------------------------------------------------------


def manual_change_actions(root_dir: Path, changes: list[Change]) -> list[ForgetAction]:
    """The ad-hoc notes and user edits among a consolidation's workspace changes."""
    actions = []
    notes_prefix = paths.ad_hoc_notes_dir() + "/"
    for change in changes:
        if change.path.startswith(notes_prefix) and change.status in ("A", "M"):
            actions.append(
                ForgetAction(
                    route=ForgetRoute.ad_hoc_note,
                    target=change.path,
                    reason="ad-hoc note " + ("added" if change.status == "A" else "edited") + ", given to the consolidator",
                    removed={"status": change.status, "note": _note_preview(root_dir / change.path)},
                )
            )
        elif change.path in USER_EDITABLE_FILES or change.path.startswith(paths.SKILLS_DIR + "/"):
            actions.append(
                ForgetAction(
                    route=ForgetRoute.user_edit,
                    target=change.path,
                    reason="changed outside consolidation (a user edit), taken as authoritative",
                    removed={"status": change.status},
                )
            )
    return actions


# ---- reset -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetPlan:
    """What a reset deletes: state-DB rows per table/job kind and the memory folder's files."""

    memory_root: str
    rows: dict[str, int]
    memory_files: int
    has_git_baseline: bool
    team: TeamFiles = field(default_factory=TeamFiles)  # the exported team memory files, read before
    copies: list[Phase2Copy] = field(default_factory=list)  # beside a local folder

    def describe(self) -> str:
        rows = ", ".join(f"{count} {name}" for name, count in self.rows.items())
        baseline = " and the git baseline" if self.has_git_baseline else ""
        copies = "".join(f"; {copy.path} ({copy.why})" for copy in self.copies)
        team = "".join(f"; {line}" for line in self.team.planned(everything=True))
        return f"state DB rows: {rows}; memory folder {self.memory_root}: {self.memory_files} file(s){baseline}{copies}{team}"


def plan_reset(store: MemoryStore, root: MemoryRoot) -> ResetPlan:
    """Count what `reset_memories` would delete; refuse while a consolidation holds its lease."""
    summary = store.status_summary()
    refuse_while_consolidating(store, "reset", summary.last_phase2_job)
    rows = {"stage1_outputs": summary.stage1_outputs}
    for kind in (JobKind.stage1, JobKind.consolidate_global):
        rows[kind.value] = sum(summary.jobs_by_kind_and_status.get(kind.value, {}).values())
    exists = root.is_dir(None)
    memory_files = len(root.file_sizes(exclude_internal=True)) if exists else 0
    has_baseline = exists and (root.exists(paths.GIT_DIR) or root.exists(paths.WORKSPACE_STATE_DIR))
    return ResetPlan(
        memory_root=root.url, rows=rows, memory_files=memory_files, has_git_baseline=has_baseline,
        team=TeamFiles.before(store, store.thread_cwds()),
        copies=phase2_copies(root.local_path) if root.local_path is not None else [],
    )


def refuse_while_consolidating(store: MemoryStore, what: str, job: JobRecord | None = None) -> None:
    """`ResetRefused` while a phase 2 holds its lease: a change to the memory folder now would
    race the consolidation writing it. `job`: the global job when the caller has read it."""
    job = job if job is not None else store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    if job is not None and job.status == JobStatus.running.value and (job.lease_until or 0) > int(time.time()):
        raise ResetRefused(f"phase 2 is consolidating right now; {what} when it has finished")


def reset_memories(store: MemoryStore, root: MemoryRoot, *, reason: str = "reset on request") -> list[ForgetAction]:
    """Forget everything: every stage-1 output and memory job, and the memory folder's contents."""
    plan = plan_reset(store, root)
    root.check_writable()  # a folder that refuses writes fails the reset before the DB changes
    rows = store.clear_memory_data()
    try:
        files = clear_memory_root(root)
        for copy in plan.copies:
            discard(copy.path)
    except OSError as error:
        # The DB is already cleared: the reset is audited as far as it went, and said.
        stopped = f"stopped after the state DB: the memory folder {root.url} was not fully cleared ({error.strerror or type(error).__name__})"
        raise ForgetIncomplete(
            f"reset {stopped}; run `codex-memories reset --yes` again to finish",
            [ForgetAction(route=ForgetRoute.manual_reset, target=root.url, reason=f"{reason}; {stopped}", removed={"rows": rows})],
        ) from error
    removed = {"rows": rows, "memory_files": files, "git_baseline": plan.has_git_baseline}
    if plan.copies:
        removed["copies_deleted"] = [str(copy.path) for copy in plan.copies]
    return [ForgetAction(route=ForgetRoute.manual_reset, target=root.url, reason=reason, removed=plan.team.record(store, removed))]


def clear_memory_root(root: MemoryRoot) -> int:
    """Delete everything inside the memory root, `.git` included (the root folder stays), but the
    folder's history (`storage.FOLDER_HISTORY_PATHS`: the forget ledger and the state DB binding):
    a reset forgets everything now, it must not bring back what was forgotten before.

    Returns the number of memory files deleted (git internals not counted)."""
    if not root.is_dir(None):
        return 0
    deleted = len(root.file_sizes(exclude_internal=True))
    for entry in root.list_dir(None):
        if entry.path == WORKSPACE_STATE_DIR and entry.kind == "dir":
            for inner in root.list_dir(entry.path):
                if inner.path in FOLDER_HISTORY_PATHS:
                    continue
                if inner.kind == "dir":
                    root.delete_tree(inner.path)
                else:
                    root.delete(inner.path, missing_ok=True)
        elif entry.kind == "dir":
            root.delete_tree(entry.path)
        else:
            root.delete(entry.path, missing_ok=True)
    return deleted


def _note_preview(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return text.strip()[:NOTE_PREVIEW_CHARACTERS]
