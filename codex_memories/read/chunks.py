"""Cut the files Codex reads from a memory folder into citable chunks (spec 3.1, 7.1, 8).

Contract:
- `source_files(root)` lists what recall indexes, as paths relative to the root: `MEMORY.md`,
  `memory_summary.md`, `rollout_summaries/*.md`, `skills/**/*.md` and
  `extensions/ad_hoc/notes/*.md`. Hidden entries (`.git`, our `.codex-memories`), symlinks and
  non-files are skipped, like the memory tools do. `raw_memories.md` is left out: it is phase 2's
  temporary input and repeats what the rollout summaries say.
- `chunk_file(relative, text)` returns the file's chunks, each with its 1-based inclusive line
  range, the text shown to a reader, the text searched (the chunk plus the headings it sits
  under), its scope and its date:
  - `MEMORY.md`: one chunk per `## Task n:` section (heading and keywords) and one per top-level
    bullet of the other sections of a `# Task Group` (and of the lines right under its heading); scope is the group's `applies_to: cwd=…`
    (or a path-like group title), date the newest `updated_at=` of the group.
  - `memory_summary.md`: one chunk per top-level bullet (sub-bullets included) or paragraph;
    under `## What's in Memory`, scope is the `### <scope>` heading and date the `#### <date>`.
  - rollout summaries: paragraphs of the body; scope and date from the `cwd:` / `updated_at:`
    header lines.
  - skills and ad-hoc notes: paragraphs; user-level (no scope); a note's date is its file name's.
- A scope of None means user-level: `cwd=any`, no `applies_to`, preferences, skills, notes, a
  `user-level ...` heading.
- Project markers (issue 15, `scopes.project_marker`): a group whose `applies_to:` line holds
  `project=<key>` has that marker as its scope (not the cwd); a summary index heading
  `### project=<key>` is its own scope; a chunk that would be user-level but whose text carries a
  marker (a project's preference in the summary, `- use tabs (project=<key>; cwd=...)`) takes
  the marker as its scope. Recall compares the marker's key with the session's project key.
- Pure functions over text, apart from `source_files` (which lists the folder).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codex_memories import paths
from codex_memories.scopes import PROJECT_MARKER_PREFIX, marked_project_key, project_marker

MAX_CHUNK_LINES = 16
USER_LEVEL_SCOPES = frozenset({"", "any", "all", "global", "user", "none", "unknown"})
USER_LEVEL_PREFIX = "user-level"

_GROUP = re.compile(r"^#\s+Task Group:\s*(?P<title>.*?)\s*$")
_TASK = re.compile(r"^##\s+Task\s+\d+\s*:\s*(?P<title>.*?)\s*$")
_HEADING = re.compile(r"^(?P<marks>#{1,6})\s+(?P<title>.*?)\s*$")
_APPLIES_TO_CWD = re.compile(r"^applies_to:\s*cwd=(?P<cwd>[^;]*)", re.IGNORECASE)
_SCOPE_LINE = re.compile(r"^scope:\s*(?P<scope>.*)$", re.IGNORECASE)
_UPDATED_AT = re.compile(r"updated_at[=:]\s*(?P<date>\d{4}-\d{2}-\d{2})")
_DATE_HEADING = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NOTE_DATE = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})T")
_BULLET = re.compile(r"^[-*+]\s+|^\d+[.)]\s+")
_HEADER_LINE = re.compile(r"^(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_CITATION = re.compile(r"\s*\[(?:Task \d+(?:, )?)+\]|\s*\[ad-hoc note\]")
_INDEX_HEADING = re.compile(r"^what['’]s in memory$", re.IGNORECASE)


def is_task_heading(text: str) -> bool:
    """A `MEMORY.md` chunk that is a `## Task n:` section's heading (title, rollout summary files,
    keywords), not one of the group's memory lines."""
    first = text.lstrip().split("\n", 1)[0]
    return bool(_TASK.match(first))


@dataclass(frozen=True)
class Chunk:
    path: str
    line_start: int
    line_end: int
    text: str
    search_text: str
    scope: str | None
    date: str | None

    @property
    def embed_text(self) -> str:
        """What the semantic leg embeds: `own_words(text)`, or the searched text when that is empty."""
        return own_words(self.text) or self.search_text


def own_words(text: str) -> str:
    """A chunk's own words, without the headings, comments, citations and file lists around it.

    Mean-pooled embeddings are diluted by every extra token: a one-line bullet embedded with its
    group's title and scope line looks like its group, not like its fact.
    """
    kept = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or _COMMENT.match(stripped) or stripped.startswith("- rollout_summaries/"):
            continue
        stripped = _HEADING.sub(lambda match: match.group("title"), stripped)
        stripped = _CITATION.sub("", _BULLET.sub("", stripped)).replace("`", "")
        if stripped.lower() in ("rollout_summary_files", "keywords", "---"):
            continue
        kept.append(stripped)
    return "\n".join(kept)


def source_files(root: Path) -> list[str]:
    """The indexed files under `root`, relative with `/`, sorted."""
    found: list[str] = []
    for name in (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE):
        if _is_regular(root / name):
            found.append(name)
    for folder in (paths.ROLLOUT_SUMMARIES_DIR, paths.SKILLS_DIR, paths.ad_hoc_notes_dir()):
        found.extend(_markdown_under(root, folder, recursive=folder == paths.SKILLS_DIR))
    return sorted(found)


def chunk_file(relative: str, text: str) -> list[Chunk]:
    """The chunks of one indexed file (see the module docstring for the rules per file)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if relative == paths.MEMORY_FILE:
        return list(_memory_chunks(relative, lines))
    if relative == paths.MEMORY_SUMMARY_FILE:
        return list(_summary_chunks(relative, lines))
    if relative.startswith(paths.ROLLOUT_SUMMARIES_DIR + "/"):
        return list(_rollout_summary_chunks(relative, lines))
    note_date = _NOTE_DATE.match(relative.rsplit("/", 1)[-1])
    return list(_paragraph_chunks(relative, lines, 0, len(lines), scope=None, date=note_date.group("date") if note_date else None, context=[]))


def is_user_level(scope: str | None) -> bool:
    if scope is None:
        return True
    cleaned = scope.strip().strip("`").lower()
    return cleaned in USER_LEVEL_SCOPES or cleaned.startswith(USER_LEVEL_PREFIX)


# MEMORY.md ----------------------------------------------------------------------------------


def _memory_chunks(relative: str, lines: list[str]) -> Iterator[Chunk]:
    groups = [index for index, line in enumerate(lines) if _GROUP.match(line)]
    for position, start in enumerate(groups):
        end = groups[position + 1] if position + 1 < len(groups) else len(lines)
        yield from _group_chunks(relative, lines, start, end)


def _group_chunks(relative: str, lines: list[str], start: int, end: int) -> Iterator[Chunk]:
    title = _GROUP.match(lines[start]).group("title")  # type: ignore[union-attr]
    scope: str | None = title if title.startswith(("/", "~")) else None
    scope_text = ""
    dates: list[str] = []
    for line in lines[start:end]:
        applies = _APPLIES_TO_CWD.match(line)
        if applies:
            marked = marked_project_key(line)
            scope = project_marker(marked) if marked is not None else applies.group("cwd").strip()
        described = _SCOPE_LINE.match(line)
        if described:
            scope_text = described.group("scope")
        dates.extend(match.group("date") for match in _UPDATED_AT.finditer(line))
    scope = None if is_user_level(scope) else scope
    date = max(dates) if dates else None
    group_context = [f"Task Group: {title}", scope_text]

    sections = [index for index in range(start + 1, end) if lines[index].startswith("## ")]
    # Bullets straight under the group heading (a hand-written MEMORY.md, or Codex's own): one
    # chunk each, like a section's; the group's header lines (scope:, applies_to:) are not chunks.
    preamble_end = sections[0] if sections else end
    for chunk in _bullet_chunks(relative, lines, start + 1, preamble_end, scope, date, group_context):
        if _BULLET.match(lines[chunk.line_start - 1]):
            yield chunk
    for position, section_start in enumerate(sections):
        section_end = sections[position + 1] if position + 1 < len(sections) else end
        heading = lines[section_start][3:].strip()
        task = _TASK.match(lines[section_start])
        if task:
            yield _task_chunk(relative, lines, section_start, section_end, scope, date, group_context)
        else:
            yield from _bullet_chunks(relative, lines, section_start + 1, section_end, scope, date, [*group_context, heading])


def _task_chunk(
    relative: str, lines: list[str], start: int, end: int, scope: str | None, date: str | None, context: list[str]
) -> Chunk:
    """A task section: its heading and keywords are what a reader searches for."""
    searched = [lines[start][3:].strip()]
    inside_keywords = False
    for line in lines[start + 1 : end]:
        heading = _HEADING.match(line)
        if heading:
            inside_keywords = heading.group("title").strip().lower() == "keywords"
            continue
        if inside_keywords and line.strip():
            searched.append(_BULLET.sub("", line.strip()))
    last = _last_content_line(lines, start, end)
    shown = "\n".join(lines[start : last + 1])
    task_dates = [match.group("date") for line in lines[start:end] for match in _UPDATED_AT.finditer(line)]
    return Chunk(relative, start + 1, last + 1, shown, _joined([*context, *searched]), scope, max(task_dates) if task_dates else date)


# memory_summary.md ---------------------------------------------------------------------------


def _summary_chunks(relative: str, lines: list[str]) -> Iterator[Chunk]:
    boundaries = [index for index, line in enumerate(lines) if _HEADING.match(line)]
    level_two = ""
    scope: str | None = None
    date: str | None = None
    spans = [*zip(boundaries, [*boundaries[1:], len(lines)], strict=True)]
    if boundaries and boundaries[0] > 0:
        spans.insert(0, (-1, boundaries[0]))
    elif not boundaries:
        spans = [(-1, len(lines))]
    for heading_index, end in spans:
        context: list[str] = []
        if heading_index >= 0:
            heading = _HEADING.match(lines[heading_index])
            level = len(heading.group("marks"))  # type: ignore[union-attr]
            title = heading.group("title")  # type: ignore[union-attr]
            if level <= 2:
                level_two, scope, date = title, None, None
            elif level == 3 and _INDEX_HEADING.match(level_two):
                scope, date = (None if is_user_level(title) or title.lower().startswith("older memory") else title), None
            elif level == 4 and _DATE_HEADING.match(title):
                date = title
            context = [level_two, scope or ""]
        body_start = heading_index + 1
        if all(line.strip() in ("", paths.SUMMARY_VERSION_LINE) for line in lines[body_start:end]):
            continue
        yield from _bullet_chunks(relative, lines, body_start, end, scope, date, context)


# rollout_summaries/*.md -----------------------------------------------------------------------


def _rollout_summary_chunks(relative: str, lines: list[str]) -> Iterator[Chunk]:
    header: dict[str, str] = {}
    index = 0
    while index < len(lines) and lines[index].strip():
        match = _HEADER_LINE.match(lines[index].strip())
        if not match:
            break
        header[match.group("key")] = match.group("value")
        index += 1
    scope = header.get("cwd")
    scope = None if is_user_level(scope) else scope
    updated = _UPDATED_AT.search(f"updated_at: {header.get('updated_at', '')}")
    date = updated.group("date") if updated else None
    context = [f"session in {scope}" if scope else ""]
    yield from _paragraph_chunks(relative, lines, index, len(lines), scope=scope, date=date, context=context)


# shared ------------------------------------------------------------------------------------


def _bullet_chunks(
    relative: str, lines: list[str], start: int, end: int, scope: str | None, date: str | None, context: list[str]
) -> Iterator[Chunk]:
    """Top-level bullets (with their indented continuation) each a chunk; other text by paragraph."""
    index = start
    while index < end:
        line = lines[index]
        if not line.strip() or _COMMENT.match(line) or _HEADING.match(line) or line.strip() == paths.SUMMARY_VERSION_LINE:
            index += 1
            continue
        if _BULLET.match(line):
            last = index
            while last + 1 < end and lines[last + 1].startswith((" ", "\t")) and lines[last + 1].strip():
                last += 1
            last = min(last, index + MAX_CHUNK_LINES - 1)
            yield _chunk(relative, lines, index, last, scope, date, context)
            index = last + 1
            continue
        last = index
        while last + 1 < end and lines[last + 1].strip() and not _BULLET.match(lines[last + 1]) and not _HEADING.match(lines[last + 1]):
            last += 1
        last = min(last, index + MAX_CHUNK_LINES - 1)
        yield _chunk(relative, lines, index, last, scope, date, context)
        index = last + 1


def _paragraph_chunks(
    relative: str, lines: list[str], start: int, end: int, *, scope: str | None, date: str | None, context: list[str]
) -> Iterator[Chunk]:
    """Blank-line separated paragraphs (YAML front matter is one); headings are searched with what follows."""
    heading = ""
    index = start
    if start == 0 and lines and lines[0].strip() == "---":
        closing = next((i for i in range(1, end) if lines[i].strip() == "---"), None)
        if closing is not None:
            yield _chunk(relative, lines, 0, closing, scope, date, context)
            index = closing + 1
    while index < end:
        line = lines[index]
        if not line.strip() or _COMMENT.match(line):
            index += 1
            continue
        match = _HEADING.match(line)
        if match:
            heading = match.group("title")
            index += 1
            continue
        last = index
        while last + 1 < end and lines[last + 1].strip() and not _HEADING.match(lines[last + 1]):
            last += 1
        last = min(last, index + MAX_CHUNK_LINES - 1)
        yield _chunk(relative, lines, index, last, scope, date, [*context, heading])
        index = last + 1


def _chunk(relative: str, lines: list[str], first: int, last: int, scope: str | None, date: str | None, context: list[str]) -> Chunk:
    shown = "\n".join(lines[first : last + 1])
    if scope is None and PROJECT_MARKER_PREFIX in shown:
        marked = marked_project_key(shown)
        scope = project_marker(marked) if marked is not None else None
    return Chunk(relative, first + 1, last + 1, shown, _joined([*context, shown]), scope, date)


def _joined(parts: list[str]) -> str:
    return "\n".join(part for part in parts if part and part.strip())


def _last_content_line(lines: list[str], start: int, end: int) -> int:
    last = end - 1
    while last > start and not lines[last].strip():
        last -= 1
    return last


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _markdown_under(root: Path, folder: str, *, recursive: bool) -> list[str]:
    """`.md` files in `folder` (and below when `recursive`), never through a symlink or hidden entry."""
    current = root
    for component in folder.split("/"):
        current = current / component
        try:
            if not stat.S_ISDIR(current.lstat().st_mode):
                return []
        except (FileNotFoundError, NotADirectoryError):
            return []
    found: list[str] = []
    pending = [(current, folder)]
    while pending:
        directory, shown = pending.pop()
        with os.scandir(directory) as scan:
            entries = list(scan)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and recursive:
                pending.append((Path(entry.path), f"{shown}/{entry.name}"))
            elif stat.S_ISREG(mode) and entry.name.endswith(".md"):
                found.append(f"{shown}/{entry.name}")
    return found
