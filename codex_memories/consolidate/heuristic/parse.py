"""Parse: the heuristic consolidator's inputs as records (pure, no I/O).

- `parse_raw_memories(text)`: the `## Thread` sections of `raw_memories.md` (split by
  `codex_memories.raw_memories`) as `ThreadMemory` records: header lines, front matter, the
  `### Task` blocks' subsection bullets by subsection, user-level blocks as an entry of their own.
- `parse_rollout_summary(file_name, text)`: a `rollout_summaries/` file's header and title.
- `parse_ad_hoc_notes(notes)`: ad-hoc notes with the forget term each names, if any.
- `extract_user_blocks(text)`: the hand-written `<!-- user -->` blocks of an output file.

Every text taken from an input goes through `clean`: one line, clipped, and empty when it looks
like an instruction to a model. The rules are the package docstring's (`consolidate.heuristic`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from codex_memories.consolidate.conflicts import parse_time as _parse_time
from codex_memories.raw_memories import THREAD_HEADER_KEYS, thread_sections
from codex_memories.scopes import PROJECT_SCOPE, USER_SCOPE

USER_BLOCK_START = "<!-- user -->"
USER_BLOCK_END = "<!-- /user -->"
USER_LEVEL_DESCRIPTION = "preferences the user gave for all their projects"
USER_SCOPE_KEYWORD = "user-level"

MAX_LINE_CHARS = 500
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
        description=first_clean(*thread.user_task_names) or USER_LEVEL_DESCRIPTION,
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
    thread.project_key = clean(front.get("project_key", ""))
    thread.description = first_clean(front.get("description"), front.get("task"), *task_names)
    thread.outcome = clean(front.get("task_outcome", "")) or (task_outcomes[0] if len(set(task_outcomes)) == 1 else "")
    groups = [front.get("task_group", "")]
    thread.task_groups = dedupe(clean(group) for group in groups if clean(group))
    thread.keywords = dedupe(
        keyword for keyword in (clean(part) for part in front.get("keywords", "").split(",")) if keyword
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
                cleaned = clean(bullet)
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
            name = clean(task.group(1))
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
                task_outcomes.append(clean(match.group(2)))
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
                task_outcomes.append(clean(match.group(2)))
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
        title=clean(title),
    )


def parse_ad_hoc_notes(notes: list[tuple[str, str]]) -> list[AdHocNote]:
    """`(file name, text)` pairs, in file-name order, to notes with their forget terms."""
    parsed = []
    for file_name, text in sorted(notes):
        kept_lines = [line.strip() for line in text.split("\n") if line.strip() and not _INJECTION.search(line)]
        one_line = clip(" ".join(" ".join(kept_lines).split()))
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


def clean(text: str | None) -> str:
    """One line, no instruction-looking text, clipped; empty when the text must not be used."""
    if not text:
        return ""
    one_line = " ".join(text.split())
    if _INJECTION.search(one_line):
        return ""
    return clip(one_line)


def first_clean(*candidates: str | None) -> str:
    for candidate in candidates:
        cleaned = clean(candidate)
        if cleaned:
            return cleaned
    return ""


def clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for item in items:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result
