"""The offline heuristic consolidator: rule-based, deterministic, no model.

`HeuristicConsolidator` is the `Consolidator` (see `consolidators`) of the `heuristic` provider:
it ignores the prompt and runs `consolidate_heuristically`.

`consolidate_heuristically(root_dir, now=...)` contract:
- Inputs (regular files only, symlinks ignored): `raw_memories.md` (spec 8.2: `## Thread` sections
  with `updated_at:`, `cwd:`, `rollout_path:`, `rollout_summary_file:` lines, then the raw memory
  with its front matter and `### Task <n>:` blocks), `rollout_summaries/*.md` (spec 8.3), ad-hoc
  notes in `extensions/ad_hoc/notes/*.md`, and the hand-written blocks of the current `MEMORY.md`
  and `memory_summary.md`.
- Outputs: `MEMORY.md` and `memory_summary.md`, rebuilt from scratch from those inputs, written
  only when their bytes change. Nothing else is written or deleted (no skills: recurring
  procedures need judgement this consolidator does not have).
- Forgetting: because both files are rebuilt, anything whose only sources left the inputs (a thread
  section dropped from `raw_memories.md`, a deleted summary) disappears. A line supported by
  several threads survives as long as one of them remains.
- Hand edits: text between a `<!-- user -->` line and the next `<!-- /user -->` line in either
  output is carried over verbatim (markers included, in order) to the end of the rebuilt file.
  Anything outside such a block is regenerated; an unterminated block is not carried over.
- Ad-hoc notes (read in file-name order, i.e. oldest first): each becomes one line tagged
  `[ad-hoc note]` under `## User preferences`, in the summary and in a `# Task Group: ad-hoc notes`
  block of `MEMORY.md`. A note containing "forget", "don't remember", "do not remember" or
  "no longer" names what to drop: the rest of that sentence, with leading "that" / "about" / "the
  fact that" removed, must be at least four characters; every preference, knowledge or failure line
  derived from a thread, and every earlier note, containing it (case-insensitive substring) is
  removed. A "forget" / "don't remember" note is not itself stored (it would store the very text to
  forget); a "no longer" note is, because it states the current fact.
- Typed entries (`typed_entries`): a bullet's `{memory: ...}` suffix (type, weight, reason,
  expiry) is kept, always last on the line, after the `[Task n]` citation; two wordings of one
  entry merge on their text without the suffix, keeping the newest task's suffix. A preference
  or knowledge entry that a later statement of the same scope replaces (`conflicts.find_conflicts`:
  the same slot, family or target, in any folder of one project, or at the user level; the
  thread's `updated_at` decides which is later, not the file order) is left out of both files, and
  `ConsolidationRun.conflicts` says which won. A temporary entry never replaces a standing one. Expired entries never get here: phase 2 removes them from the inputs first
  (`forget.entry_expiry`).
- Scopes (issue 15): a raw memory's `### Task` blocks carry `scope: user|project` and its front
  matter `project_key: <key>` (`extract.scope_tagging`; a memory without them is project-level,
  keyed by its cwd). Lines of user-level blocks form one `# Task Group: user-level (every
  project)` with `applies_to: cwd=any`, first in `MEMORY.md`; project-level lines are grouped per
  project key, one task group each, whose `applies_to:` line ends in `project=<key>`. In
  `memory_summary.md` user-level preferences come first and unmarked; every project-level line
  (preference, tip, older topic) carries `project=<key>` and the index has one
  `### project=<key>` section per project and a `### user-level (every project)` one, so the
  read path can drop other projects' lines (`read.injection`).
- Safety: only the raw memories' own subsections (which phase 1 built from the user's messages)
  and note text are used; any input line that looks like an instruction to a model ("ignore
  previous instructions", "disregard the above", "you are now", ...) is dropped; every output line
  goes through `redact_secrets`.
- Deterministic and idempotent: the same inputs give byte-identical outputs, and a second run
  writes nothing. `now` is accepted for interface stability; every date in the output comes from
  the inputs, never from the clock.
- Both outputs say they were written by this offline consolidator (`memory_summary.md`: an HTML
  comment on line 3, after the exact `v1` line and a blank line).

Layout: `parse` (inputs to records), `merge` (records to task groups), `render` (task groups to
text), and here the consolidator itself: read the inputs, call the three, write what changed.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from codex_memories import paths
from codex_memories.consolidate.agent import AgentStopReason
from codex_memories.consolidate.conflicts import Conflict, find_conflicts
from codex_memories.consolidate.heuristic.merge import (
    UNKNOWN_CWD,
    apply_notes,
    build_groups,
    merge_summaries,
    resolve_conflicts,
    statement_entries,
)
from codex_memories.consolidate.heuristic.parse import (
    RolloutSummary,
    extract_user_blocks,
    parse_ad_hoc_notes,
    parse_raw_memories,
    parse_rollout_summary,
)
from codex_memories.consolidate.heuristic.render import render_memory_file, render_memory_summary
from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.llm.base import TokenUsage
from codex_memories.prompts import RenderedPrompt
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.typed_entries import split_entry

HEURISTIC_CONSOLIDATOR_NAME = "heuristic"


class HeuristicConsolidator:
    """The offline default: `consolidate_heuristically`, no model, no prompt."""

    name = HEURISTIC_CONSOLIDATOR_NAME

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._clock = clock

    def consolidate(
        self, root_dir: Path, *, prompt: RenderedPrompt | None = None, should_continue: Callable[[], bool] = lambda: True
    ) -> ConsolidationOutcome:
        if not should_continue():
            return ConsolidationOutcome(False, AgentStopReason.ownership_lost, 0, 0, TokenUsage(), [])
        run = consolidate_heuristically(Path(root_dir), now=self._clock())
        return ConsolidationOutcome(
            completed=True,
            stop_reason=AgentStopReason.finished,
            steps=1,
            tool_calls=0,
            usage=TokenUsage(),
            files_changed=sorted(run.files_written + run.files_deleted),
        )


@dataclass(frozen=True)
class ConsolidationRun:
    files_written: list[str]
    files_deleted: list[str]
    task_groups: int
    notes_integrated: int
    conflicts: list[Conflict] = field(default_factory=list)


def consolidate_heuristically(root_dir: Path, *, now: datetime) -> ConsolidationRun:
    """Rebuild `MEMORY.md` and `memory_summary.md` from the current inputs (see the module docstring)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    root = SandboxedFolder(root_dir)

    # 1. Read the inputs.
    raw_text = _read_regular(root, paths.RAW_MEMORIES_FILE) or ""
    threads = parse_raw_memories(raw_text)
    summaries = _read_rollout_summaries(root)
    notes = parse_ad_hoc_notes(_read_notes(root))
    memory_user_blocks = extract_user_blocks(_read_regular(root, paths.MEMORY_FILE) or "")
    summary_user_blocks = extract_user_blocks(_read_regular(root, paths.MEMORY_SUMMARY_FILE) or "")

    # 2. Attach summaries: branch metadata, and summary-only threads (no raw memory section).
    threads = merge_summaries(threads, summaries)

    # 3. Apply ad-hoc notes: forget terms remove thread lines and earlier notes.
    stored_notes = apply_notes(threads, notes)

    # 4. Retire what a later statement of the same scope replaced.
    conflicts = resolve_conflicts(threads)

    # 5. Group per cwd and render.
    groups = build_groups(threads)
    memory_text = render_memory_file(groups, stored_notes, memory_user_blocks)
    summary_text = render_memory_summary(groups, stored_notes, summary_user_blocks)

    # 6. Write what changed.
    written = []
    for name, text in ((paths.MEMORY_FILE, memory_text), (paths.MEMORY_SUMMARY_FILE, summary_text)):
        if _write_if_changed(root, name, text):
            written.append(name)
    return ConsolidationRun(
        files_written=written,
        files_deleted=[],
        task_groups=len(groups) + (1 if stored_notes else 0),
        notes_integrated=len(notes),
        conflicts=conflicts,
    )


def find_input_conflicts(raw_memories_text: str) -> list[Conflict]:
    """The conflicts this consolidator resolves in a `raw_memories.md` (for the run artifact)."""
    threads = parse_raw_memories(raw_memories_text)
    for thread in threads:
        thread.cwd = thread.cwd or UNKNOWN_CWD
    return find_conflicts(statement_entries(threads))


def replaced_entries_block(root_dir: Path) -> str:
    """The model consolidator's prompt block naming the entries of the synced `raw_memories.md`
    that a later statement replaced (what this consolidator drops); "" when there are none."""
    raw_text = _read_regular(SandboxedFolder(root_dir), paths.RAW_MEMORIES_FILE) or ""
    return render_replaced_entries(find_input_conflicts(raw_text))


MAX_LISTED_REPLACED = 100
REPLACED_HEADING = "### Entries replaced by a later statement (found by code for this run)"


def render_replaced_entries(conflicts: list[Conflict]) -> str:
    """The model consolidator's list of replaced entries (`prompts/consolidation.md`): each loser
    quoted with its thread, time and scope, and the newer statement that replaced it; "" when
    nothing was replaced. At most `MAX_LISTED_REPLACED` lines, then a count of the rest. The
    texts are evidence quoted from the inputs, redacted like everything sent to a model."""
    if not conflicts:
        return ""
    lines = [
        REPLACED_HEADING,
        "",
        "Each entry below was replaced by a later statement on the same subject in the same scope. "
        "Do not carry it into `MEMORY.md`, `memory_summary.md` or a skill, and remove it where an "
        "earlier run wrote it; keep the newer statement.",
        "",
    ]
    for conflict in conflicts[:MAX_LISTED_REPLACED]:
        lines.append(
            f"- replaced: {_quoted(conflict.loser.text)} (thread `{conflict.loser.source}`, "
            f"updated_at {conflict.loser.updated_at}, scope {conflict.loser.group}; subject: {conflict.subject}) "
            f"-> by: {_quoted(conflict.winner.text)} (thread `{conflict.winner.source}`, updated_at {conflict.winner.updated_at})"
        )
    if len(conflicts) > MAX_LISTED_REPLACED:
        lines.append(f"- ... and {len(conflicts) - MAX_LISTED_REPLACED} more replaced entries of the same kind in `raw_memories.md`")
    return redact_secrets("\n".join(lines)) + "\n"


def _quoted(text: str) -> str:
    bare = " ".join(split_entry(text)[0].split()).strip("\"'“”")
    return "\"" + bare.replace("`", "'") + "\""


def _read_regular(folder: SandboxedFolder, path: str) -> str | None:
    """Text of a regular, singly linked file; None when it is missing, a link or not UTF-8."""
    try:
        return folder.read_bytes(path).decode("utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePathError, UnicodeDecodeError):
        # Inputs are optional and links are never followed: such an entry is simply not an input.
        return None


def _regular_markdown_files(folder: SandboxedFolder, directory: str) -> list[str]:
    try:
        entries = folder.list_dir(directory)
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        return []  # missing, a file, or a symlinked folder (the workspace removes those anyway)
    return [entry.path for entry in entries if entry.name.endswith(".md") and entry.kind == "file"]


def _read_rollout_summaries(root: SandboxedFolder) -> list[RolloutSummary]:
    summaries = []
    for path in _regular_markdown_files(root, paths.ROLLOUT_SUMMARIES_DIR):
        text = _read_regular(root, path)
        if text is not None:
            summaries.append(parse_rollout_summary(path.rsplit("/", 1)[-1], text))
    return summaries


def _read_notes(root: SandboxedFolder) -> list[tuple[str, str]]:
    notes = []
    for path in _regular_markdown_files(root, paths.ad_hoc_notes_dir()):
        text = _read_regular(root, path)
        if text is not None:
            notes.append((path.rsplit("/", 1)[-1], text))
    return notes


def _write_if_changed(folder: SandboxedFolder, path: str, text: str) -> bool:
    status = folder.lstat(path)
    if status is not None and (not stat.S_ISREG(status.st_mode) or status.st_nlink > 1):
        # A link or special file in place of an artifact is replaced, never written through.
        folder.delete(path)
    return folder.write_if_changed(path, text.encode("utf-8"))
