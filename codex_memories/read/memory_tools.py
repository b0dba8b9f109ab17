"""Read-only memory tools over a local memory root: list, read, search (spec 5.5), plus notes (7.1).

Contract:
- Every argument is bounded before anything is read, with one error naming the bound: a path over
  4,096 bytes or with a name over 255 bytes is `InvalidPath` (`sandbox.split_relative_path`), a
  query over `MAX_QUERY_BYTES` is `QueryTooLong`, a cursor over `MAX_CURSOR_DIGITS` digits is
  `InvalidCursor`, `max_results` above a tool's ceiling is that ceiling, and a note over
  `notes.NOTE_MAX_BYTES` is `NoteTooLong`; text holding a lone surrogate (a JSON `\\udXXX`) is
  `InvalidText` (`InvalidPath` for a path, `InvalidNote` for a note). Error messages quote at most
  the start of what they reject. The file system refusing a read (permissions, I/O) is
  `FileUnreadable`.
- Inputs are paths relative to the memory root, written with `/`. Absolute paths, drive or root
  prefixes and `..` components are `InvalidPath`; `.` and empty components are ignored; a path
  naming a hidden entry (`.git`, our `.codex-memories` bookkeeping) is `NotFound`. All I/O goes
  through one `sandbox.SandboxedFolder`: every component is opened relative to its parent with
  `O_NOFOLLOW`, so a symlink anywhere on the way is `InvalidPath` (upstream checked only the last
  component) even when it appears between the check and the open. A regular file with more than
  one hard link (possibly a second name for a file outside the root) is `InvalidPath` to read;
  symlinks and hard-linked files met while listing or searching are skipped.
- Every answer is bounded, whatever the files hold. Files are streamed, never loaded whole:
  - `list_entries` is shallow, sorted byte-wise by name, paged by a decimal cursor (the index of
    the next entry), at most `MAX_LIST_RESULTS` entries and `MAX_ANSWER_BYTES` of JSON per page;
    listing a file returns that one file.
  - `read_file` returns text from a 1-based `line_offset`, at most `max_lines` lines, capped at
    `DEFAULT_READ_MAX_TOKENS` tokens by middle truncation; `truncated` says whether anything was
    left out. A selection larger than twice `READ_WINDOW_BYTES` is kept as its first and last
    `READ_WINDOW_BYTES` before the middle truncation, so the marker's token count is then a lower
    bound.
  - `search` is a case-sensitive substring match per line over one file or a folder tree; matches
    are sorted by path then line, each with `context_lines` (at most `MAX_CONTEXT_LINES`) lines
    either side, every line cut at `MAX_LINE_BYTES` (the match is still found beyond the cut), a
    match's content at most `MAX_MATCH_BYTES` (the farthest context lines are left out first), at
    most `MAX_SEARCH_RESULTS` matches and `MAX_ANSWER_BYTES` of JSON per page (queries are at most
    `MAX_QUERY_BYTES`), paged like `list`. Matches before the cursor are counted, not built; scanning stops once the page is full
    and one more match is known to exist.
  - `search` with `mode="semantic"` (the default `mode="literal"` is Codex's contract above) asks
    `codex_memories.read.recall` instead (words and meaning, not exact text): matches are the
    relevant memory chunks, best first, each a `SemanticMatch` (`line_number` =
    `start_line_number` = the chunk's first line, plus `end_line_number`, `score` and `scope`),
    limited to `path` when given; `context_lines` does not apply; an empty page means nothing
    relevant, and a missing or broken embedding package is `SemanticSearchUnavailable`. With
    `cwd` (the session's working directory, absolute) that project's memories come first and
    other projects' are left out, as at the prompt; without it every project counts alike.
    `cwd` does not apply to the literal mode, which stays Codex's contract.
  - Reading and searching stop after `ANSWER_TIME_BUDGET_SECONDS`: a search page that has matches
    is returned `truncated` with a cursor to continue from; otherwise the call fails with
    `AnswerTimedOut`, which says to narrow the path or the query.
- `add_ad_hoc_note` is the one writing tool: one new pending note record under
  `extensions/ad_hoc/pending/` (`notes.hold_agent_note`: screened like tool output, hidden markup
  stripped, secrets redacted), never live until the user accepts it (issue 36.3).
- Results are pydantic models (the MCP server returns them as structured JSON). Failures are
  `MemoryToolError` subclasses whose `kind` is the class name; nothing is swallowed.
- Pure reads apart from `add_ad_hoc_note`; results depend only on the files at call time.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict

from codex_memories import paths
from codex_memories.memory_folder import notes
from codex_memories.sandbox import (
    FolderEntry,
    SandboxedFolder,
    SymlinkRefusedError,
    UnsafePathError,
    entry_kind,
    split_relative_path,
)
from codex_memories.storable import path_decodes, utf8_size
from codex_memories.tokens import truncate_middle

DEFAULT_LIST_MAX_RESULTS = 2_000
MAX_LIST_RESULTS = 2_000
DEFAULT_SEARCH_MAX_RESULTS = 200
MAX_SEARCH_RESULTS = 200
DEFAULT_READ_MAX_TOKENS = 20_000
HIDDEN_NAMES = frozenset({paths.GIT_DIR, paths.WORKSPACE_STATE_DIR})

# Ceilings that hold for any file (a 200 MB file, a file where every line matches).
MAX_ANSWER_BYTES = 262_144
MAX_LINE_BYTES = 2_000
MAX_MATCH_BYTES = 8_192
MAX_CONTEXT_LINES = 20
READ_WINDOW_BYTES = 1024 * 1024
ANSWER_TIME_BUDGET_SECONDS = 20.0
LINE_TRUNCATED_MARKER = " [line truncated]"
MAX_QUERY_BYTES = 1_000
MAX_CWD_CHARS = 4_096  # PATH_MAX on Linux
_CHUNK_BYTES = 65_536
# JSON field names and numbers of one search match, of one listed entry.
_MATCH_OVERHEAD_BYTES = 96
_ENTRY_OVERHEAD_BYTES = 48
_VALIDATION_CHUNK_BYTES = 1024 * 1024

EntryType = Literal["file", "directory"]
SearchMode = Literal["literal", "semantic"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)

# A cursor is an index into one answer: 18 digits hold any of them (and `int()` of thousands of
# digits is refused by Python itself).
MAX_CURSOR_DIGITS = 18
_CURSOR = re.compile(rf"[0-9]{{1,{MAX_CURSOR_DIGITS}}}")
# How much of a rejected argument an error message quotes.
_QUOTED_CHARS = 80
_Item = TypeVar("_Item")


class MemoryToolError(Exception):
    """A memory tool call failed; `kind` is the stable error code reported to the caller."""

    @property
    def kind(self) -> str:
        return type(self).__name__


class SemanticSearchUnavailable(MemoryToolError):
    """The semantic mode cannot run: an embedding package is missing or broken (the literal mode still works)."""


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
    """`context_lines` must be between 0 and `MAX_CONTEXT_LINES`."""


class QueryTooLong(MemoryToolError):
    """The search query is longer than `MAX_QUERY_BYTES`."""


class AnswerTimedOut(MemoryToolError):
    """The answer could not be built within `ANSWER_TIME_BUDGET_SECONDS`; narrow the path or query."""


class InvalidMode(MemoryToolError):
    """`mode` is not one of the search modes."""


class InvalidCwd(MemoryToolError):
    """`cwd` is not an absolute path (or is longer than `MAX_CWD_CHARS`)."""


class InvalidText(MemoryToolError):
    """A text argument is not valid Unicode (it holds a lone surrogate, from a JSON `\\udXXX`)."""


class FileUnreadable(MemoryToolError):
    """The file system refused to read the path (permissions, an I/O error)."""


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
    # A note from the MCP tool was written by an agent: it waits for the user (`notes.PENDING`).
    status: str = notes.PENDING
    message: str = ""


def list_entries(
    root: Path, path: str | None = None, cursor: str | None = None, max_results: int = DEFAULT_LIST_MAX_RESULTS
) -> ListResult:
    """One page of the entries directly inside `path` (the root by default)."""
    page_size = _page_size(max_results, MAX_LIST_RESULTS)
    start_index = _parse_cursor(cursor)
    folder, target = _resolve(Path(root), path)
    if target.kind == "file":
        entries = [MemoryEntry(path=target.display, entry_type="file")]
    elif target.kind == "dir":
        entries = [
            MemoryEntry(path=child.path, entry_type="directory" if child.kind == "dir" else "file")
            for child in _children(folder, target.display)
        ]
    else:
        entries = []
    if start_index > len(entries):
        raise InvalidCursor(f"cursor {start_index} is past the end of {len(entries)} results")
    page: list[MemoryEntry] = []
    used = 0
    for entry in entries[start_index : start_index + page_size]:
        size = _ENTRY_OVERHEAD_BYTES + _json_size(entry.path)
        if page and used + size > MAX_ANSWER_BYTES:
            break
        page.append(entry)
        used += size
    end_index = start_index + len(page)
    next_cursor = str(end_index) if end_index < len(entries) else None
    return ListResult(path=target.display or None, entries=page, next_cursor=next_cursor, truncated=next_cursor is not None)


def read_file(
    root: Path,
    path: str,
    line_offset: int = 1,
    max_lines: int | None = None,
    *,
    max_tokens: int = DEFAULT_READ_MAX_TOKENS,
    time_budget_seconds: float = ANSWER_TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> ReadResult:
    """The text of one file from `line_offset`, at most `max_lines` lines and `max_tokens` tokens."""
    if line_offset < 1:
        raise InvalidLineOffset("line_offset must be a 1-based line number")
    if max_lines is not None and max_lines < 1:
        raise InvalidMaxLines("max_lines must be a positive integer")
    folder, target = _resolve(Path(root), path)
    if target.kind is None:
        raise NotFound(f"path {path!r} does not exist")
    if target.kind != "file":
        raise NotFile(f"path {path!r} is not a file")
    deadline = _Deadline(clock, time_budget_seconds)
    with _open_file(folder, target.display, path) as handle:
        try:
            if not _is_utf8(handle, deadline):
                raise NotText(f"path {path!r} is not UTF-8 text")
            handle.seek(0)
            selection = _select_lines(handle, line_offset, max_lines, deadline)
        except _OutOfTime:
            raise AnswerTimedOut(
                f"reading {path!r} took longer than {time_budget_seconds:g} seconds; read a smaller line range"
            ) from None
    text = selection.text()
    truncation = truncate_middle(text, max_tokens)
    return ReadResult(
        path=target.display,
        start_line_number=line_offset,
        content=truncation.text,
        truncated=selection.more_after or selection.middle_dropped or truncation.text != text,
    )


def search(
    root: Path,
    query: str,
    path: str | None = None,
    cursor: str | None = None,
    context_lines: int = 0,
    max_results: int = DEFAULT_SEARCH_MAX_RESULTS,
    mode: SearchMode = "literal",
    cwd: str | None = None,
    *,
    time_budget_seconds: float = ANSWER_TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """One page of the lines containing `query` (case-sensitive) in `path` (file or folder tree),
    or with `mode="semantic"` of the memory chunks relevant to it, best first."""
    if mode not in SEARCH_MODES:
        raise InvalidMode(f"mode must be one of {', '.join(SEARCH_MODES)}, not {_quoted(mode)}")
    if not query.strip():
        raise EmptyQuery("query must not be empty")
    if _utf8_size("query", query) > MAX_QUERY_BYTES:
        raise QueryTooLong(f"query must be at most {MAX_QUERY_BYTES} bytes")
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidContextLines(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}")
    if cwd is not None and (_utf8_size("cwd", cwd) > MAX_CWD_CHARS or not os.path.isabs(cwd)):
        raise InvalidCwd(f"cwd must be an absolute path of at most {MAX_CWD_CHARS} characters")
    page_size = _page_size(max_results, MAX_SEARCH_RESULTS)
    start_index = _parse_cursor(cursor)
    folder, target = _resolve(Path(root), path)
    if mode == "semantic":
        return _semantic_search(Path(root), target, query, start_index, page_size, cwd)
    deadline = _Deadline(clock, time_budget_seconds)

    page = _SearchPage(start_index=start_index, page_size=page_size, context_lines=context_lines)
    # Lines never contain a newline, so such a query matches nothing (as upstream).
    files = [] if "\n" in query else _files_under(folder, target)
    for display in sorted(files, key=_sort_key):
        if page.stopped:
            break
        try:
            _search_file(folder, display, query.encode("utf-8"), page, deadline)
        except _OutOfTime:
            if not page.matches:
                raise AnswerTimedOut(
                    f"searching {query!r} took longer than {time_budget_seconds:g} seconds before the first match "
                    "of this page; narrow the path or the query"
                ) from None
            page.stop_at(page.seen)
            break
    if not page.stopped and start_index > page.seen:
        raise InvalidCursor(f"cursor {start_index} is past the end of {page.seen} results")
    next_cursor = str(page.next_index) if page.stopped else None
    return SearchResult(
        query=query,
        path=target.display or None,
        matches=[match.result() for match in page.matches],
        next_cursor=next_cursor,
        truncated=next_cursor is not None,
    )


def _semantic_search(
    root: Path, target: _Target, query: str, start_index: int, page_size: int, cwd: str | None
) -> SearchResult:
    # Imported here: the literal tools must not pay for numpy and the embedding model.
    from codex_memories.read.embedding import EmbedderUnavailable
    from codex_memories.read.recall import recall

    limit = start_index + page_size + 1
    found = []
    if target.kind is not None:
        prefix = target.display
        try:
            results = recall(root, query, cwd=cwd, limit=limit if not prefix else MAX_SEARCH_RESULTS + limit)
        except EmbedderUnavailable as error:
            raise SemanticSearchUnavailable(str(error)) from error
        found = [result for result in results if not prefix or result.path == prefix or result.path.startswith(prefix + "/")]
    if start_index > len(found):
        raise InvalidCursor(f"cursor {start_index} is past the end of {len(found)} results")
    page = found[start_index : start_index + page_size]
    next_cursor = str(start_index + page_size) if len(found) > start_index + page_size else None
    return SearchResult(
        query=query,
        path=target.display or None,
        matches=[
            SemanticMatch(
                path=result.path, line_number=result.line_start, start_line_number=result.line_start,
                end_line_number=result.line_end, content=result.text, score=result.score, scope=result.scope,
            )
            for result in page
        ],
        next_cursor=next_cursor,
        truncated=next_cursor is not None,
    )


def add_ad_hoc_note(
    root: Path,
    note: str,
    *,
    filename: str | None = None,
    slug: str | None = None,
    now: datetime | None = None,
) -> NoteAdded:
    """Hold one new ad-hoc note for the user's decision, named by `filename`, or by `now` and
    `slug` (derived if omitted). The tool is called by an agent, which a web page or a tool
    output may have steered: the note is screened, stripped of hidden markup and kept pending
    (`notes.hold_agent_note`); it goes live only when the user accepts it."""
    if filename is not None and slug is not None:
        raise notes.InvalidNoteFilename("give either filename or slug, not both")
    held = notes.hold_agent_note(Path(root), note, filename=filename, slug=slug, now=now)
    flagged = f" It was flagged: {', '.join(held.reasons)}." if held.reasons else ""
    return NoteAdded(
        path=held.record_path,
        status=held.status,
        message=(
            f"The note is pending: the user sees it in `codex-memories show` and makes it a memory with "
            f"`codex-memories note --accept {held.name.removesuffix(notes.NOTE_SUFFIX)}` (or drops it).{flagged}"
        ),
    )


# -- paths (policy: hidden names, error codes; the folder does the resolving) -------------------


@dataclass(frozen=True)
class _Target:
    display: str  # "" is the root
    kind: str | None  # "file", "dir", "other", or None for a missing root


def _resolve(root: Path, relative: str | None) -> tuple[SandboxedFolder, _Target]:
    folder = SandboxedFolder(root)
    try:
        components = split_relative_path(relative)
    except UnsafePathError as error:
        raise InvalidPath(str(error)) from None
    if any(component in HIDDEN_NAMES for component in components):
        raise NotFound(f"path {relative!r} does not exist")
    with _folder_errors("."):
        root_kind = folder.kind(None)
    if not components:
        return folder, _Target("", None if root_kind is None else ("dir" if root_kind == "dir" else "other"))
    display = "/".join(components)
    if root_kind != "dir":
        raise NotFound(f"path {relative!r} does not exist")
    try:
        status = folder.lstat(display)
    except SymlinkRefusedError:
        raise InvalidPath(f"path {relative!r} goes through a symlink; symlinks are not followed") from None
    except NotADirectoryError:
        raise NotFound(f"path {relative!r} does not exist") from None
    except OSError as error:
        raise FileUnreadable(f"path {relative!r}: {error.strerror or error}") from None
    if status is None:
        raise NotFound(f"path {relative!r} does not exist")
    kind = entry_kind(status.st_mode)
    if kind == "symlink":
        raise InvalidPath(f"path {display!r} is a symlink; symlinks are not followed")
    if kind == "file" and status.st_nlink > 1:
        raise InvalidPath(f"path {display!r} has {status.st_nlink} hard links; it may be another name for a file outside the memory root")
    return folder, _Target(display, kind)


@contextmanager
def _open_file(folder: SandboxedFolder, display: str, shown: str | None) -> Iterator[BinaryIO]:
    try:
        handle = folder.open_file(display)
    except UnsafePathError as error:  # a symlink that appeared since `_resolve`, a hard link, a FIFO
        raise InvalidPath(f"path {shown!r}: {error}") from None
    except FileNotFoundError:
        raise NotFound(f"path {shown!r} does not exist") from None
    except OSError as error:
        raise FileUnreadable(f"path {shown!r}: {error.strerror or error}") from None
    with handle:
        try:
            yield handle
        except OSError as error:  # reading it failed (an I/O error)
            raise FileUnreadable(f"path {shown!r}: {error.strerror or error}") from None


def _visible(entry: FolderEntry) -> bool:
    """Listed and searched: real folders and singly linked regular files with UTF-8 names."""
    if entry.name in HIDDEN_NAMES or not path_decodes(entry.name):
        return False
    return entry.kind == "dir" or (entry.kind == "file" and entry.nlink == 1)


@contextmanager
def _folder_errors(display: str) -> Iterator[None]:
    """The folder changed since `_resolve` (swapped for a link, removed): the tool's error codes."""
    try:
        yield
    except UnsafePathError as error:
        raise InvalidPath(f"path {display!r}: {error}") from None
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"path {display!r} does not exist") from None
    except OSError as error:
        raise FileUnreadable(f"path {display!r}: {error.strerror or error}") from None


def _children(folder: SandboxedFolder, display: str) -> list[FolderEntry]:
    with _folder_errors(display):
        return [entry for entry in folder.list_dir(display or None) if _visible(entry)]


def _files_under(folder: SandboxedFolder, target: _Target) -> list[str]:
    if target.kind == "file":
        return [target.display]
    if target.kind != "dir":
        return []
    with _folder_errors(target.display):
        entries = folder.walk(target.display or None, skip=lambda entry: not _visible(entry))
    return [entry.path for entry in entries if entry.kind == "file"]


# -- bounded reading --------------------------------------------------------------------------


class _OutOfTime(Exception):
    """Internal: the time budget ran out; the caller turns it into a page or `AnswerTimedOut`."""


class _Deadline:
    def __init__(self, clock: Callable[[], float], budget_seconds: float) -> None:
        self._clock = clock
        self._end = clock() + budget_seconds

    def check(self) -> None:
        if self._clock() > self._end:
            raise _OutOfTime()


def _is_utf8(handle: BinaryIO, deadline: _Deadline) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        while chunk := handle.read(_VALIDATION_CHUNK_BYTES):
            decoder.decode(chunk)
            deadline.check()
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class _Selection:
    head: bytearray = field(default_factory=bytearray)
    tail: deque[bytes] = field(default_factory=deque)
    tail_bytes: int = 0
    middle_dropped: bool = False
    more_after: bool = False

    def take(self, piece: bytes) -> None:
        room = READ_WINDOW_BYTES - len(self.head)
        if room > 0:
            self.head += piece[:room]
            piece = piece[room:]
        if not piece:
            return
        self.tail.append(piece)
        self.tail_bytes += len(piece)
        while self.tail_bytes - len(self.tail[0]) >= READ_WINDOW_BYTES:
            self.tail_bytes -= len(self.tail.popleft())
            self.middle_dropped = True

    def text(self) -> str:
        tail = b"".join(self.tail)
        if not self.middle_dropped:
            return (bytes(self.head) + tail).decode("utf-8")
        # Cut edges may split a character; the file itself is valid UTF-8.
        return bytes(self.head).decode("utf-8", "ignore") + "\n" + tail.decode("utf-8", "ignore")


def _nth_newline_end(data: bytes, count: int) -> int:
    position = -1
    for _ in range(count):
        position = data.index(b"\n", position + 1)
    return position + 1


def _select_lines(handle: BinaryIO, line_offset: int, max_lines: int | None, deadline: _Deadline) -> _Selection:
    """The bytes from line `line_offset` on, at most `max_lines` lines, kept as head and tail windows."""
    to_skip = line_offset - 1
    piece = b""
    while to_skip:
        chunk = handle.read(_CHUNK_BYTES)
        if not chunk:
            raise LineOffsetExceedsFileLength(f"line_offset {line_offset} exceeds the file length")
        deadline.check()
        newlines = chunk.count(b"\n")
        if newlines < to_skip:
            to_skip -= newlines
            continue
        piece = chunk[_nth_newline_end(chunk, to_skip) :]
        to_skip = 0
    selection = _Selection()
    lines_left = max_lines
    while True:
        if lines_left is not None and piece:
            newlines = piece.count(b"\n")
            if newlines >= lines_left:
                end = _nth_newline_end(piece, lines_left)
                selection.take(piece[:end])
                selection.more_after = end < len(piece) or bool(handle.read(1))
                return selection
            lines_left -= newlines
        selection.take(piece)
        piece = handle.read(_CHUNK_BYTES)
        if not piece:
            return selection
        deadline.check()


def _bounded_lines(handle: BinaryIO, needle: bytes) -> Iterator[tuple[bytes, bool, bool]]:
    """Per line: its first `MAX_LINE_BYTES` bytes (ending removed), whether it was cut, whether `needle` occurs.

    Lines split on `\\n` only, a trailing `\\r` dropped, as upstream. A line of any length is read
    in `_CHUNK_BYTES` pieces; the match is found across piece boundaries.
    """
    overlap = len(needle) - 1
    while piece := handle.readline(_CHUNK_BYTES):
        if piece.endswith(b"\n"):  # the common case: the whole line in one piece
            content = piece[:-1].removesuffix(b"\r")
            yield content[:MAX_LINE_BYTES], len(content) > MAX_LINE_BYTES, needle in content
            continue
        prefix = bytearray()
        length = 0
        found = False
        carry = b""  # the last `overlap` bytes of the line so far, for a match across pieces
        held = b""  # a `\r` at the end of a piece, which may turn out to be the line ending
        while True:
            ended = piece.endswith(b"\n")
            if ended:
                content = (held + piece[:-1]).removesuffix(b"\r")
                held = b""
            elif piece.endswith(b"\r"):
                content, held = held + piece[:-1], b"\r"
            else:
                content, held = held + piece, b""
            if len(prefix) < MAX_LINE_BYTES:
                prefix += content[: MAX_LINE_BYTES - len(prefix)]
            length += len(content)
            if not found:
                window = carry + content
                found = needle in window
                carry = window[-overlap:] if overlap else b""
            if ended:
                break
            piece = handle.readline(_CHUNK_BYTES)
            if not piece:
                break  # end of file without a final newline; a held `\r` is dropped, as upstream
        yield bytes(prefix), length > MAX_LINE_BYTES, found


def _shown_line(prefix: bytes, cut: bool) -> str:
    if cut:
        return prefix.decode("utf-8", "ignore") + LINE_TRUNCATED_MARKER
    return prefix.decode("utf-8")


@dataclass
class _PendingMatch:
    path: str
    line_number: int
    start_line_number: int
    lines: list[str]
    after_left: int
    content_bytes: int
    reserved_bytes: int

    def add_context(self, line: str) -> None:
        size = _json_size(line)
        self.after_left -= 1
        if self.content_bytes + size > MAX_MATCH_BYTES:
            self.after_left = 0  # the match is full: later context lines are left out
            return
        self.lines.append(line)
        self.content_bytes += size

    def result(self) -> SearchMatch:
        return SearchMatch(
            path=self.path,
            line_number=self.line_number,
            start_line_number=self.start_line_number,
            content="\n".join(self.lines),
        )


@dataclass
class _SearchPage:
    """The matches of one page; counts every match seen so later pages start at the right index.

    Bytes: a match still waiting for context lines holds `MAX_MATCH_BYTES` of the page's budget;
    when it is complete it keeps only its real size.
    """

    start_index: int
    page_size: int
    context_lines: int
    seen: int = 0
    matches: list[_PendingMatch] = field(default_factory=list)
    used_bytes: int = 0
    stopped: bool = False
    next_index: int = 0

    def stop_at(self, index: int) -> None:
        self.stopped = True
        self.next_index = index

    def close(self, match: _PendingMatch) -> None:
        self.used_bytes -= match.reserved_bytes - match.content_bytes
        match.reserved_bytes = match.content_bytes

    def admit(self, path: str, line_number: int, before: deque[str], line: str) -> _PendingMatch | None:
        """Count one match; the match to fill in when it belongs on this page, else None."""
        index = self.seen
        self.seen += 1
        if index < self.start_index:
            return None
        # The nearest context lines first, as many as fit next to the matching line.
        content_bytes = _MATCH_OVERHEAD_BYTES + _json_size(path) + _json_size(line)
        kept_before: list[str] = []
        for previous in reversed(before):
            size = _json_size(previous)
            if content_bytes + size > MAX_MATCH_BYTES:
                break
            kept_before.insert(0, previous)
            content_bytes += size
        reserved = MAX_MATCH_BYTES if self.context_lines else content_bytes
        if len(self.matches) >= self.page_size or (self.matches and self.used_bytes + reserved > MAX_ANSWER_BYTES):
            self.stop_at(index)
            return None
        match = _PendingMatch(
            path, line_number, line_number - len(kept_before), [*kept_before, line], self.context_lines, content_bytes, reserved
        )
        self.matches.append(match)
        self.used_bytes += reserved
        return match


def _json_size(text: str) -> int:
    """Bytes `text` takes in the JSON answer (escapes included), plus one for a joining newline."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 1


def _search_file(folder: SandboxedFolder, display: str, needle: bytes, page: _SearchPage, deadline: _Deadline) -> None:
    try:
        with _open_file(folder, display, display) as handle:
            if _is_utf8(handle, deadline):  # binary or foreign-encoded files hold no text match worth showing
                handle.seek(0)
                _search_lines(handle, display, needle, page, deadline)
    except (InvalidPath, NotFound):
        return  # replaced by a link or FIFO, or removed, since the walk: skipped like any link


def _search_lines(handle: BinaryIO, display: str, needle: bytes, page: _SearchPage, deadline: _Deadline) -> None:
    before: deque[str] = deque(maxlen=page.context_lines)
    open_matches: list[_PendingMatch] = []
    try:
        for line_number, (prefix, cut, found) in enumerate(_bounded_lines(handle, needle), start=1):
            if line_number % 1024 == 0:
                deadline.check()
            shown: str | None = None
            if open_matches:
                shown = _shown_line(prefix, cut)
                for match in open_matches:
                    match.add_context(shown)
                    if match.after_left <= 0:
                        page.close(match)
                open_matches = [match for match in open_matches if match.after_left > 0]
            if found and not page.stopped:
                shown = shown if shown is not None else _shown_line(prefix, cut)
                match = page.admit(display, line_number, before, shown)
                if match is not None and page.context_lines:
                    open_matches.append(match)
            if page.stopped and not open_matches:
                return
            if page.context_lines:
                before.append(shown if shown is not None else _shown_line(prefix, cut))
    finally:
        for match in open_matches:  # the file ended (or time ran out) before their context did
            page.close(match)


# -- paging -----------------------------------------------------------------------------------


def _page_size(max_results: int, ceiling: int) -> int:
    if max_results < 1:
        raise InvalidMaxResults("max_results must be a positive integer")
    return min(max_results, ceiling)


def _parse_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not _CURSOR.fullmatch(cursor):
        raise InvalidCursor(f"cursor {_quoted(cursor)} must be a non-negative integer of at most {MAX_CURSOR_DIGITS} digits")
    return int(cursor)


def _utf8_size(name: str, text: str) -> int:
    size = utf8_size(text)
    if size is None:
        raise InvalidText(f"{name} is not valid Unicode text (it holds a lone surrogate)")
    return size


def _quoted(value: str) -> str:
    """A rejected argument as an error message quotes it: its start only."""
    return repr(value[:_QUOTED_CHARS]) + ("..." if len(value) > _QUOTED_CHARS else "")


def _sort_key(display: str) -> bytes:
    return display.encode("utf-8")
