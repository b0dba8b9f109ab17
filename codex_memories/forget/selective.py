"""Selective forgetting (issue 15, deliverable 5): one project's memories, or every memory line
that holds a text. Codex offers only an all-or-nothing reset (#30299).

Route `project_deletion` (target: the project key):
- `plan_project_forget(store, key, folder)` lists the project's threads whose memory state would
  change (`store.threads_for_project`): a stage-1 output to delete, a memory mode to set to
  `disabled`. Reads only.
- `forget_project(store, key, folder)` does exactly that per listed thread (route 4's
  `forget_thread`: output row and stage-1 job deleted, memory mode `disabled`, so phase 1 does not
  extract it again; phase 2 is enqueued when a selected memory went) and returns one
  `ForgetAction` whose `removed["threads"]` is the plan's list. The next phase 2 deletes the
  rollout summaries and raw-memory sections of those threads and the consolidator removes what
  only they supported (spec 6). The project's exported team memory file loses the lines those
  threads gave it (`forget.team_files`).

Route `text_match` (target: the text, redacted when it looks secret):
- `check_match_text(text)`: the text must be one line of at least `MIN_MATCH_CHARACTERS`
  non-blank characters (a shorter one would take most of the memory with it).
- `plan_match_forget(store, root, text)`: every line holding the text (case-insensitive,
  `casefold`) in `MEMORY.md`, `memory_summary.md`, `raw_memories.md`, `rollout_summaries/*.md`,
  the ad-hoc notes and `skills/**/*.md`, and per stage-1 output (any memory mode) the lines of its
  `raw_memory` and `rollout_summary` that hold it. Reads only.
- `forget_match(store, root, text)`: refuses while phase 2 holds its lease (it edits the folder
  phase 2 writes), then removes those lines: the stage-1 outputs first (the source the next sync
  re-creates files from; a row refreshed meanwhile is planned again), then the files (atomic
  writes; a note left blank is deleted), then invalidates the sync record so the next phase 2
  re-renders its inputs, and rebuilds the recall index of a local root (it held the lines).
  Returns one `ForgetAction`; its `removed` is the plan (paths, line numbers, counts: never the
  forgotten text), plus what it removed from exported team memory files (`forget.team_files`:
  every generated line holding the text, in any project's file on this machine). The next phase
  2 sees the edited `MEMORY.md`/summary as a user edit (taken as authoritative) and its inputs
  without the lines, so the lines do not come back.

Plan and action are built by one function (`_match_removed` / `_project_removed`), so a dry run
lists exactly what the real run removes. Nothing here writes an audit row (`audit.record_actions`).
Idempotent: a second run finds nothing and returns no action.

Known limit: a thread that Codex continues later is extracted again from its rollout (the text
is still there); forget it by thread or project to keep it out for good.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.manual import refuse_while_consolidating
from codex_memories.forget.team_files import TEAM_FILES_FACT, TeamFiles
from codex_memories.forget.threads import forget_thread
from codex_memories.redact import find_secret_kinds, redact_secrets
from codex_memories.scopes import project_folder, project_key_for_directory
from codex_memories.state.records import ForgetRoute, MemoryMode, Stage1Output
from codex_memories.state.store import MemoryStore
from codex_memories.storage import MemoryRoot

MIN_MATCH_CHARACTERS = 3
_REWRITE_ATTEMPTS = 3
_SYNCED_INPUTS_PATH = f"{paths.WORKSPACE_STATE_DIR}/{paths.SYNCED_INPUTS_FILE}"


class SelectiveForgetError(ValueError):
    """The request cannot be carried out as asked (bad text, unknown project)."""


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


def forget_project(store: MemoryStore, target: ProjectTarget, *, reason: str = "project forgotten on request") -> list[ForgetAction]:
    """Forget every memory of the project's threads and keep them from being extracted again."""
    planned = _project_removed(store, target)
    if not planned:
        return []
    team = _project_team_files(store, target, planned)
    for entry in planned:
        forget_thread(store, entry["thread_id"], reason=reason, team_files=False)
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


# ---- text match ---------------------------------------------------------------------------


def check_match_text(text: str) -> str:
    """The text to match, or `SelectiveForgetError` when it is blank, too short or multi-line."""
    if "\n" in text or "\r" in text:
        raise SelectiveForgetError("the text to forget must be one line (each memory line is matched on its own)")
    stripped = text.strip()
    if len(stripped) < MIN_MATCH_CHARACTERS:
        raise SelectiveForgetError(
            f"the text to forget must have at least {MIN_MATCH_CHARACTERS} characters: a shorter one matches most memory lines"
        )
    return stripped


def shown_match_text(text: str) -> str:
    """The text as the audit, the report and the terminal show it: redacted when it looks secret."""
    return redact_secrets(text) if find_secret_kinds(text) else text


@dataclass(frozen=True)
class OutputLines:
    output: Stage1Output
    raw_memory_lines: tuple[int, ...]
    rollout_summary_lines: tuple[int, ...]


@dataclass(frozen=True)
class MatchForgetPlan:
    text: str
    files: dict[str, tuple[int, ...]]  # memory-folder path -> 1-based line numbers holding the text
    outputs: list[OutputLines]
    team: TeamFiles = field(default_factory=TeamFiles)  # the exported team files, read before
    team_files: list[str] = field(default_factory=list)  # what they would lose

    @property
    def empty(self) -> bool:
        """Nothing in the memory folder or the stage-1 outputs holds the text."""
        return not self.files and not self.outputs

    def removed(self) -> dict[str, Any]:
        return _match_removed(self)

    def describe(self) -> list[str]:
        lines = [f"{path}:{','.join(map(str, numbers))}" for path, numbers in self.files.items()]
        for hit in self.outputs:
            parts = []
            if hit.raw_memory_lines:
                parts.append(f"raw_memory {len(hit.raw_memory_lines)} line(s)")
            if hit.rollout_summary_lines:
                parts.append(f"rollout_summary {len(hit.rollout_summary_lines)} line(s)")
            lines.append(f"stage-1 output of thread {hit.output.thread_id}: {', '.join(parts)}")
        return lines + self.team_files


def plan_match_forget(store: MemoryStore, root: MemoryRoot, text: str) -> MatchForgetPlan:
    """Every memory line that holds `text` (see the module contract); reads only."""
    text = check_match_text(text)
    needle = text.casefold()
    files: dict[str, tuple[int, ...]] = {}
    for path in memory_line_files(root):
        numbers = _matching_lines(root.read_text(path), needle)
        if numbers:
            files[path] = numbers
    outputs = []
    for output in store.stage1_outputs_containing(text):
        raw = _matching_lines(output.raw_memory, needle)
        summary = _matching_lines(output.rollout_summary, needle)
        if raw or summary:
            outputs.append(OutputLines(output, raw, summary))
    # Every project's file: a teammate's exported line can hold the text where no output here does.
    team = TeamFiles.before(store, store.thread_cwds(), text=text)
    return MatchForgetPlan(text=text, files=files, outputs=outputs, team=team, team_files=team.planned())


def forget_match(store: MemoryStore, root: MemoryRoot, text: str, *, reason: str = "memory lines forgotten on request") -> list[ForgetAction]:
    """Remove every memory line holding `text` and the stage-1 lines that would re-create them."""
    text = check_match_text(text)
    refuse_while_consolidating(store, "forget")
    plan = plan_match_forget(store, root, text)
    if plan.empty and not plan.team_files:
        return []
    needle = text.casefold()
    # 1. The stage-1 outputs: what the next phase-2 sync renders raw_memories.md and the rollout
    #    summaries from, so they go first.
    for hit in plan.outputs:
        _rewrite_output(store, hit.output.thread_id, needle)
    # 2. The memory folder's files.
    for path in plan.files:
        kept = _without_matching_lines(root.read_text(path), needle)
        if path.startswith(paths.ad_hoc_notes_dir() + "/") and not kept.strip():
            root.delete(path, missing_ok=True)
        else:
            root.write_text(path, kept)
    # 3. The next phase 2 must render its inputs again, and the local recall index held the lines.
    if not plan.empty:
        root.delete(_SYNCED_INPUTS_PATH, missing_ok=True)
        _refresh_recall_index(root)
    removed = plan.team.record(store, plan.removed())
    if plan.empty and TEAM_FILES_FACT not in removed:
        return []
    return [ForgetAction(route=ForgetRoute.text_match, target=shown_match_text(text), reason=reason, removed=removed)]


def memory_line_files(root: MemoryRoot) -> list[str]:
    """The memory folder's files whose lines a session or the consolidator reads, sorted."""
    if not root.is_dir(None):
        return []
    notes = paths.ad_hoc_notes_dir() + "/"
    chosen = []
    for path in root.walk_files(exclude_git=True):
        consolidated = path in (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE, paths.RAW_MEMORIES_FILE)
        if consolidated or (path.endswith(".md") and path.startswith((paths.ROLLOUT_SUMMARIES_DIR + "/", notes, paths.SKILLS_DIR + "/"))):
            chosen.append(path)
    return chosen


def _match_removed(plan: MatchForgetPlan) -> dict[str, Any]:
    return {
        "files": {path: list(numbers) for path, numbers in plan.files.items()},
        "stage1_outputs": [
            {
                "thread_id": hit.output.thread_id,
                "raw_memory_lines": len(hit.raw_memory_lines),
                "rollout_summary_lines": len(hit.rollout_summary_lines),
                "was_selected_for_phase2": hit.output.selected_for_phase2,
            }
            for hit in plan.outputs
        ],
    }


def _matching_lines(text: str, needle: str) -> tuple[int, ...]:
    return tuple(number for number, line in enumerate(text.splitlines(), start=1) if needle in line.casefold())


def _without_matching_lines(text: str, needle: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if needle not in line.casefold())


def _rewrite_output(store: MemoryStore, thread_id: str, needle: str) -> None:
    for _attempt in range(_REWRITE_ATTEMPTS):
        output = store.get_stage1_output(thread_id)
        if output is None:
            return  # deleted meanwhile: nothing left to re-create the lines
        if store.rewrite_stage1_output_payload(
            thread_id=thread_id,
            source_updated_at=output.source_updated_at,
            raw_memory=_without_matching_lines(output.raw_memory, needle),
            rollout_summary=_without_matching_lines(output.rollout_summary, needle),
        ):
            return
    raise RuntimeError(f"the stage-1 output of thread {thread_id} kept changing while its lines were forgotten; run forget again")


def _refresh_recall_index(root: MemoryRoot) -> None:
    local = root.local_path
    if local is None:
        return  # object-store roots keep no recall index of their own (it lives with the reader)
    from codex_memories.read.index import build_index, index_file

    if index_file(local).exists():
        build_index(local)
