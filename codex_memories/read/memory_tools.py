"""Read-only memory tools over a local memory root: list, read, search (spec 5.5), plus notes (7.1).

Contract:
- Inputs are paths relative to the memory root, written with `/`. Absolute paths, drive or root
  prefixes and `..` components are `InvalidPath`; `.` and empty components are ignored; a path
  naming a hidden entry (`.git`, our `.codex-memories` bookkeeping) is `NotFound`. Every component is checked without following
  symlinks: a symlink anywhere on the way is `InvalidPath` (upstream checked only the last
  component); symlinks met while listing or searching are skipped.
- `list_entries` is shallow, sorted byte-wise by name, paged by a decimal cursor (the index of the
  next entry); listing a file returns that one file.
- `read_file` returns text from a 1-based `line_offset`, at most `max_lines` lines, capped at
  `DEFAULT_READ_MAX_TOKENS` tokens by middle truncation; `truncated` says whether anything was
  left out.
- `search` is a case-sensitive substring match per line over one file or a folder tree; matches
  are sorted by path then line, each with `context_lines` lines either side, paged like `list`.
  That is the default `mode="literal"`, Codex's contract. `mode="semantic"` asks
  `codex_memories.read.recall` instead (words and meaning, not exact text): matches are the
  relevant memory chunks, best first, each a `SemanticMatch` (`line_number` = `start_line_number`
  = the chunk's first line, plus `end_line_number`, `score` and `scope`), limited to `path` when
  given; `context_lines` does not apply; an empty page means nothing relevant.
- `add_ad_hoc_note` is the one writing tool: one new note file under `extensions/ad_hoc/notes/`
  (see `codex_memories.read.notes`).
- Results are pydantic models (the MCP server returns them as structured JSON). Failures are
  `MemoryToolError` subclasses whose `kind` is the class name; nothing is swallowed.
- Pure reads apart from `add_ad_hoc_note`; results depend only on the files at call time.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict

from codex_memories import paths
from codex_memories.read import notes
from codex_memories.tokens import truncate_middle

DEFAULT_LIST_MAX_RESULTS = 2_000
MAX_LIST_RESULTS = 2_000
DEFAULT_SEARCH_MAX_RESULTS = 200
MAX_SEARCH_RESULTS = 200
DEFAULT_READ_MAX_TOKENS = 20_000
HIDDEN_NAMES = frozenset({paths.GIT_DIR, paths.WORKSPACE_STATE_DIR})

EntryType = Literal["file", "directory"]
SearchMode = Literal["literal", "semantic"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)

_CURSOR = re.compile(r"[0-9]+")
_Item = TypeVar("_Item")


class MemoryToolError(Exception):
    """A memory tool call failed; `kind` is the stable error code reported to the caller."""

    @property
    def kind(self) -> str:
        return type(self).__name__


class InvalidPath(MemoryToolError):
    """The path escapes the memory root, is absolute, or goes through a symlink."""


class NotFound(MemoryToolError):
    """Nothing (visible) exists at the path."""


class NotFile(MemoryToolError):
    """`read` was asked for something that is not a regular file."""


class NotText(MemoryToolError):
    """The file is not valid UTF-8 text."""


class InvalidCursor(MemoryToolError):
    """The cursor is not a decimal index or points past the end of the results."""


class InvalidMaxResults(MemoryToolError):
    """`max_results` must be at least 1."""


class InvalidLineOffset(MemoryToolError):
    """`line_offset` is 1-based."""


class InvalidMaxLines(MemoryToolError):
    """`max_lines` must be at least 1."""


class LineOffsetExceedsFileLength(MemoryToolError):
    """The file has fewer lines than `line_offset` asks to skip."""


class EmptyQuery(MemoryToolError):
    """The search query is blank."""


class InvalidContextLines(MemoryToolError):
    """`context_lines` must not be negative."""


class InvalidMode(MemoryToolError):
    """`mode` is not one of the search modes."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemoryEntry(_Result):
    path: str
    entry_type: EntryType


class ListResult(_Result):
    path: str | None
    entries: list[MemoryEntry]
    next_cursor: str | None
    truncated: bool


class ReadResult(_Result):
    path: str
    start_line_number: int
    content: str
    truncated: bool


class SearchMatch(_Result):
    path: str
    line_number: int
    start_line_number: int
    content: str


class SemanticMatch(SearchMatch):
    """A semantic search hit: one memory chunk, lines `start_line_number`..`end_line_number`."""

    end_line_number: int
    score: float
    scope: str | None


class SearchResult(_Result):
    query: str
    path: str | None
    # Literal matches validate only as SearchMatch, semantic ones only as SemanticMatch (extra fields are
    # forbidden), so the literal JSON keeps Codex's shape exactly.
    matches: list[SemanticMatch | SearchMatch]
    next_cursor: str | None
    truncated: bool


class NoteAdded(_Result):
    path: str


def list_entries(
    root: Path, path: str | None = None, cursor: str | None = None, max_results: int = DEFAULT_LIST_MAX_RESULTS
) -> ListResult:
    """One page of the entries directly inside `path` (the root by default)."""
    page_size = _page_size(max_results, MAX_LIST_RESULTS)
    start_index = _parse_cursor(cursor)
    target = _resolve(Path(root), path)
    if target.mode is None:
        entries: list[MemoryEntry] = []
    elif stat.S_ISREG(target.mode):
        entries = [MemoryEntry(path=target.display, entry_type="file")]
    elif stat.S_ISDIR(target.mode):
        entries = [MemoryEntry(path=child.display, entry_type=child.entry_type) for child in _children(target)]
    else:
        entries = []
    page, next_cursor = _paginate(entries, start_index, page_size)
    return ListResult(path=target.display or None, entries=page, next_cursor=next_cursor, truncated=next_cursor is not None)


def read_file(
    root: Path,
    path: str,
    line_offset: int = 1,
    max_lines: int | None = None,
    *,
    max_tokens: int = DEFAULT_READ_MAX_TOKENS,
) -> ReadResult:
    """The text of one file from `line_offset`, at most `max_lines` lines and `max_tokens` tokens."""
    if line_offset < 1:
        raise InvalidLineOffset("line_offset must be a 1-based line number")
    if max_lines is not None and max_lines < 1:
        raise InvalidMaxLines("max_lines must be a positive integer")
    target = _resolve(Path(root), path)
    if target.mode is None:
        raise NotFound(f"path {path!r} does not exist")
    if not stat.S_ISREG(target.mode):
        raise NotFile(f"path {path!r} is not a file")
    text = _read_text(target.absolute, path)

    start = _line_start(text, line_offset)
    end = _line_end(text, start, max_lines)
    selected = text[start:end]
    truncation = truncate_middle(selected, max_tokens)
    return ReadResult(
        path=target.display,
        start_line_number=line_offset,
        content=truncation.text,
        truncated=end < len(text) or truncation.text != selected,
    )


def search(
    root: Path,
    query: str,
    path: str | None = None,
    cursor: str | None = None,
    context_lines: int = 0,
    max_results: int = DEFAULT_SEARCH_MAX_RESULTS,
    mode: SearchMode = "literal",
) -> SearchResult:
    """One page of the lines containing `query` (case-sensitive) in `path` (file or folder tree),
    or with `mode="semantic"` of the memory chunks relevant to it, best first."""
    if mode not in SEARCH_MODES:
        raise InvalidMode(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
    if not query.strip():
        raise EmptyQuery("query must not be empty")
    if context_lines < 0:
        raise InvalidContextLines("context_lines must not be negative")
    page_size = _page_size(max_results, MAX_SEARCH_RESULTS)
    start_index = _parse_cursor(cursor)
    target = _resolve(Path(root), path)

    matches: list[SearchMatch] = []
    if mode == "semantic":
        matches.extend(_semantic_matches(Path(root), target, query, start_index + page_size + 1))
    else:
        for file in _files_under(target):
            matches.extend(_search_file(file, query, context_lines))
        matches.sort(key=lambda match: (_sort_key(match.path), match.line_number))
    page, next_cursor = _paginate(matches, start_index, page_size)
    return SearchResult(
        query=query, path=target.display or None, matches=page, next_cursor=next_cursor, truncated=next_cursor is not None
    )


def add_ad_hoc_note(
    root: Path,
    note: str,
    *,
    filename: str | None = None,
    slug: str | None = None,
    now: datetime | None = None,
) -> NoteAdded:
    """Write one new ad-hoc note, named by `filename`, or by `now` and `slug` (derived if omitted)."""
    if filename is not None and slug is not None:
        raise notes.InvalidNoteFilename("give either filename or slug, not both")
    if filename is not None:
        written = notes.write_ad_hoc_note(Path(root), filename, note)
    else:
        written = notes.add_ad_hoc_note(Path(root), note, slug=slug, now=now)
    return NoteAdded(path=f"{paths.ad_hoc_notes_dir()}/{written.name}")


class _Target:
    """A resolved path: where it is on disk, how it is shown, and its lstat mode (None: missing root)."""

    __slots__ = ("absolute", "display", "mode")

    def __init__(self, absolute: Path, display: str, mode: int | None) -> None:
        self.absolute = absolute
        self.display = display
        self.mode = mode


class _Child:
    __slots__ = ("absolute", "display", "entry_type", "mode")

    def __init__(self, absolute: Path, display: str, entry_type: EntryType, mode: int) -> None:
        self.absolute = absolute
        self.display = display
        self.entry_type = entry_type
        self.mode = mode


def _resolve(root: Path, relative: str | None) -> _Target:
    components = _components(relative)
    current = root
    mode: int | None
    try:
        mode = root.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is None:
        if components:
            raise NotFound(f"path {relative!r} does not exist")
        return _Target(root, "", None)
    for index, component in enumerate(components):
        if mode is None or not stat.S_ISDIR(mode):
            raise NotFound(f"path {relative!r} does not exist")
        current = current / component
        try:
            mode = current.lstat().st_mode
        except (FileNotFoundError, NotADirectoryError) as error:
            raise NotFound(f"path {relative!r} does not exist") from error
        if stat.S_ISLNK(mode):
            shown = "/".join(components[: index + 1])
            raise InvalidPath(f"path {shown!r} is a symlink; symlinks are not followed")
    return _Target(current, "/".join(components), mode)


def _components(relative: str | None) -> list[str]:
    if relative is None:
        return []
    if "\x00" in relative:
        raise InvalidPath("path must not contain NUL characters")
    windows = PureWindowsPath(relative)
    if PurePosixPath(relative).is_absolute() or windows.drive or windows.root:
        raise InvalidPath(f"path {relative!r} must be relative to the memory root")
    components = [component for component in relative.split("/") if component not in ("", ".")]
    if ".." in components:
        raise InvalidPath(f"path {relative!r} must stay within the memory root")
    if any(component in HIDDEN_NAMES for component in components):
        raise NotFound(f"path {relative!r} does not exist")
    return components


def _children(directory: _Target) -> list[_Child]:
    children: list[_Child] = []
    with os.scandir(directory.absolute) as scan:
        entries = sorted(scan, key=lambda entry: os.fsencode(entry.name))
    for entry in entries:
        if entry.name in HIDDEN_NAMES or not _is_utf8_name(entry.name):
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue  # Removed between the scan and the stat: it is not there any more.
        if stat.S_ISDIR(mode):
            entry_type: EntryType = "directory"
        elif stat.S_ISREG(mode):
            entry_type = "file"
        else:
            continue  # Symlinks, sockets, fifos: never listed, never followed.
        display = f"{directory.display}/{entry.name}" if directory.display else entry.name
        children.append(_Child(Path(entry.path), display, entry_type, mode))
    return children


def _files_under(target: _Target) -> list[_Target]:
    if target.mode is None:
        return []
    if stat.S_ISREG(target.mode):
        return [target]
    files: list[_Target] = []
    pending = [target] if stat.S_ISDIR(target.mode) else []
    while pending:
        directory = pending.pop()
        for child in _children(directory):
            as_target = _Target(child.absolute, child.display, child.mode)
            if child.entry_type == "directory":
                pending.append(as_target)
            else:
                files.append(as_target)
    return files


def _search_file(file: _Target, query: str, context_lines: int) -> list[SearchMatch]:
    try:
        text = file.absolute.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return []  # Binary or foreign-encoded files cannot contain a text match worth showing.
    lines = _split_lines(text)
    matches: list[SearchMatch] = []
    for index, line in enumerate(lines):
        if query not in line:
            continue
        first = max(0, index - context_lines)
        last = min(len(lines), index + context_lines + 1)
        matches.append(
            SearchMatch(
                path=file.display,
                line_number=index + 1,
                start_line_number=first + 1,
                content="\n".join(lines[first:last]),
            )
        )
    return matches


def _semantic_matches(root: Path, target: _Target, query: str, limit: int) -> list[SearchMatch]:
    # Imported here: the literal tools must not pay for numpy and the embedding model.
    from codex_memories.read.recall import recall

    if target.mode is None:
        return []
    prefix = target.display
    results = recall(root, query, limit=limit if not prefix else MAX_SEARCH_RESULTS + limit)
    inside = [result for result in results if not prefix or result.path == prefix or result.path.startswith(prefix + "/")]
    return [
        SemanticMatch(
            path=result.path, line_number=result.line_start, start_line_number=result.line_start,
            end_line_number=result.line_end, content=result.text, score=result.score, scope=result.scope,
        )
        for result in inside[:limit]
    ]


def _split_lines(text: str) -> list[str]:
    """Lines split on `\\n` only (not on form feeds or Unicode separators), a trailing `\\r` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _read_text(absolute: Path, shown: str) -> str:
    try:
        return absolute.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotText(f"path {shown!r} is not UTF-8 text") from error


def _line_start(text: str, line_offset: int) -> int:
    position = 0
    for _ in range(line_offset - 1):
        newline = text.find("\n", position)
        if newline == -1:
            raise LineOffsetExceedsFileLength(f"line_offset {line_offset} exceeds the file length")
        position = newline + 1
    return position


def _line_end(text: str, start: int, max_lines: int | None) -> int:
    if max_lines is None:
        return len(text)
    position = start
    for _ in range(max_lines):
        newline = text.find("\n", position)
        if newline == -1:
            return len(text)
        position = newline + 1
    return position


def _page_size(max_results: int, ceiling: int) -> int:
    if max_results < 1:
        raise InvalidMaxResults("max_results must be a positive integer")
    return min(max_results, ceiling)


def _parse_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not _CURSOR.fullmatch(cursor):
        raise InvalidCursor(f"cursor {cursor!r} must be a non-negative integer")
    return int(cursor)


def _paginate(items: list[_Item], start_index: int, page_size: int) -> tuple[list[_Item], str | None]:
    if start_index > len(items):
        raise InvalidCursor(f"cursor {start_index} is past the end of {len(items)} results")
    end_index = min(start_index + page_size, len(items))
    next_cursor = str(end_index) if end_index < len(items) else None
    return items[start_index:end_index], next_cursor


def _sort_key(display: str) -> bytes:
    return display.encode("utf-8")


def _is_utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
