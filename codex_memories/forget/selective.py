"""Selective forgetting (issue 15, deliverable 5): one project's memories. Codex offers only an
all-or-nothing reset (#30299).

Route `project_deletion` (target: the project key):
- `plan_project_forget(store, key, folder)` lists the project's threads whose memory state would
  change (`store.threads_for_project`): a stage-1 output to delete, a memory mode to set to
  `disabled`. Reads only.
- `forget_project(store, target, root=...)` first records the project (its key, its folder) and
  its threads in `root`'s forget ledger (`forget.ledger`: a run with another state DB does not
  bring them back), then does exactly that per listed thread (route 4's
  `forget_thread`: output row and stage-1 job deleted, memory mode `disabled`, so phase 1 does not
  extract it again; phase 2 is enqueued when a selected memory went) and returns one
  `ForgetAction` whose `removed["threads"]` is the plan's list. The next phase 2 deletes the
  rollout summaries and raw-memory sections of those threads and the consolidator removes what
  only they supported (spec 6). The project's exported team memory file loses the lines those
  threads gave it (`forget.team_files`).

Route `text_match` (every memory line and name holding a text) is `forget.text_match`.

Plan and action are built by one function (`_project_removed`), so a dry run lists exactly what
the real run removes. Nothing here writes an audit row (`audit.record_actions`).
Idempotent: a second run finds nothing and returns no action.

"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.ledger import ForgetLedger, record_in_ledger
from codex_memories.forget.team_files import TeamFiles
from codex_memories.forget.threads import forget_thread
from codex_memories.scopes import project_folder, project_key_for_directory
from codex_memories.state.records import ForgetRoute, MemoryMode
from codex_memories.state.store import MemoryStore
from codex_memories.storage import MemoryRoot


class SelectiveForgetError(ValueError):
    """The request cannot be carried out as asked (bad text, unknown project, an unsafe file)."""


# ---- project ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectTarget:
    key: str
    folder: str | None  # the project's folder on this machine, when the target was a directory


def resolve_project(target: str) -> ProjectTarget:
    """A directory (its project key and folder), else the target taken as a project key."""
    directory = Path(target).expanduser()
    if directory.is_dir():
        key = project_key_for_directory(directory)
        if key is None:
            raise SelectiveForgetError(f"{target}: no project key")
        return ProjectTarget(key=key, folder=str(project_folder(directory)))
    if not target.strip():
        raise SelectiveForgetError("the project is empty: give a directory or a project key")
    return ProjectTarget(key=target.strip(), folder=None)


@dataclass(frozen=True)
class ProjectForgetPlan:
    target: ProjectTarget
    threads: list[dict[str, Any]]  # one entry per thread whose memory state changes
    team_files: list[str] = field(default_factory=list)  # what the exported team files would lose

    def describe(self) -> list[str]:
        return [
            f"thread {entry['thread_id']} ({entry['cwd'] or 'no cwd'}): "
            + ("stage-1 output " + (entry["rollout_slug"] or "(no slug)") if entry["stage1_output"] else "no stage-1 output")
            + f", memory mode {entry['memory_mode']}"
            for entry in self.threads
        ] + self.team_files


def plan_project_forget(store: MemoryStore, target: ProjectTarget) -> ProjectForgetPlan:
    """What `forget_project` would change (see the module contract)."""
    threads = _project_removed(store, target)
    team = _project_team_files(store, target, threads) if threads else None
    return ProjectForgetPlan(target=target, threads=threads, team_files=team.planned(project_key=target.key) if team else [])


def forget_project(
    store: MemoryStore, target: ProjectTarget, *, root: MemoryRoot, reason: str = "project forgotten on request"
) -> list[ForgetAction]:
    """Forget every memory of the project's threads and keep them from being extracted again,
    by this state DB and by any other one that runs into `root` (its forget ledger, written first)."""
    planned = _project_removed(store, target)
    if not planned:
        return []

    def add(ledger: ForgetLedger) -> None:
        ledger.add_project(target.key, target.folder)
        ledger.add_threads(entry["thread_id"] for entry in planned)

    record_in_ledger(root, add)
    team = _project_team_files(store, target, planned)
    for entry in planned:
        forget_thread(store, entry["thread_id"], root=None, reason=reason, team_files=False)
    return [
        ForgetAction(
            route=ForgetRoute.project_deletion,
            target=target.key,
            reason=reason,
            removed=team.record(store, {"folder": target.folder, "threads": planned}),
        )
    ]


def _project_team_files(store: MemoryStore, target: ProjectTarget, planned: list[dict[str, Any]]) -> TeamFiles:
    return TeamFiles.before(store, [target.folder, *(entry["cwd"] for entry in planned)])


def _project_removed(store: MemoryStore, target: ProjectTarget) -> list[dict[str, Any]]:
    entries = []
    for thread in store.threads_for_project(target.key, folder=target.folder):
        output = store.get_stage1_output(thread.id)
        if output is None and thread.memory_mode is MemoryMode.disabled:
            continue
        entries.append(
            {
                "thread_id": thread.id,
                "cwd": thread.cwd,
                "stage1_output": output is not None,
                "rollout_slug": output.rollout_slug if output is not None else None,
                "was_selected_for_phase2": bool(output is not None and output.selected_for_phase2),
                "memory_mode": f"{thread.memory_mode.value} -> {MemoryMode.disabled.value}"
                if thread.memory_mode is not MemoryMode.disabled
                else MemoryMode.disabled.value,
            }
        )
    return entries
