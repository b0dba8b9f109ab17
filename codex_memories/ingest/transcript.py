"""Reading Codex rollout files (spec section 10): discovery facts and the phase-1 transcript.

Inputs are the append-only JSONL session files Codex writes under `$CODEX_HOME/sessions/` and
`archived_sessions/`. Everything here is read-only, streaming and tolerant:

* Files are opened through `rollout_files.open_rollout` (regular files only, never blocking,
  bounded in bytes) and read in binary, one line at a time; nothing holds a whole file in memory.
  A line longer than `MAX_LINE_BYTES` is skipped without being held either.
* Every line becomes storable text here, once, for everything downstream (the state DB, the
  prompts, the memory folder): bytes that are not UTF-8 are decoded as U+FFFD, and a lone
  surrogate or a NUL from a `\\u` escape is replaced by U+FFFD (`storable.storable_json`). Such a
  line is used, and counted in `lines_repaired` by reason (`invalid_utf8`, `lone_surrogate`,
  `nul_character`).
* A line that cannot be used is skipped and counted by reason (`invalid_json`,
  `not_an_object`, `partial_last_line` for an unterminated last line that does not parse,
  `line_too_long`, and `type_not_a_string`, `payload_not_an_object`, `payload_type_not_a_string`,
  `role_not_a_string` for a line whose envelope `type`, `payload`, `payload.type` or message
  `role` is some other JSON value, `too_deeply_nested` beyond `MAX_JSON_DEPTH`); blank lines are ignored, and every other line is counted as
  parsed or skipped (`lines_parsed + lines_skipped == lines_total`). Unknown line types and
  unknown fields are ignored, so newer Codex builds (world state, token-usage records, ...) do not
  break us; a field of an unexpected JSON type is read as absent. Bad input never raises; only
  I/O errors do (`OSError`; `rollout_files.rollout_failure` names the outcome): the caller turns
  that into one named failure for that file.

Three consumers:
* Discovery calls `scan_rollout` for the thread facts (id, times, source, cwd, git, whether the
  session touched external context, the memory citations it contains) and, for a long rollout,
  where the lines the transcript keeps are (`KeptLines`): the same run's transcript of it then
  parses its head and the lines left in its tail, not the whole file again.
* Phase 1 calls `build_memory_transcript`, which keeps only what the model saw (spec 1.5 and
  10.8), strips injected harness text, clears `encrypted_content`, redacts secrets, spotlights
  each item (its origin first, every line of text the user did not write datamarked:
  `spotlight_item`) and fits the token budget by keeping the head and the tail of the
  conversation. Memory stays bounded by the budget, not by the file: a 500 MB rollout is
  streamed, not loaded.
* Phase 2's provenance check calls `iter_kept_items`: the same kept items, streamed, neither
  redacted nor budgeted (it compares memory lines with them and keeps none of their text).
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from codex_memories.ingest.rollout_files import open_rollout
from codex_memories.redact import REDACTED, redact_secrets
from codex_memories.redact.names import name_strength
from codex_memories.storable import REPAIR_INVALID_UTF8, might_need_repair, storable_json
from codex_memories.tokens import count_tokens, marker_line, truncate_middle

# A single JSONL line larger than this is skipped (counted as `line_too_long`) instead of being
# parsed: one pathological tool output must not decide the memory use of the whole job.
MAX_LINE_BYTES = 64 * 1024 * 1024
# A line nested deeper than this is skipped (`too_deeply_nested`): Python's JSON decoder accepts
# nesting its encoder (and every recursive walk here) cannot handle. Codex lines nest < 20 deep.
MAX_JSON_DEPTH = 200
# Thread metadata past this is read as absent: a cwd is at most PATH_MAX (4,096) on Linux, but a
# project key made of it is indexed, and PostgreSQL refuses index entries past about 2,700 bytes.
MAX_METADATA_CHARS = 2048
_THREAD_ID_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.:-]{0,127}")
# A session source is a short word (`cli`, `vscode`, `exec`, `subagent`, ...).
_MAX_SOURCE_CHARS = 64

FIRST_USER_MESSAGE_MAX_CHARS = 200
CITATION_OPEN = "<oai-mem-citation>"
CITATION_CLOSE = "</oai-mem-citation>"
_CITATION_RE = re.compile(re.escape(CITATION_OPEN) + r".*?" + re.escape(CITATION_CLOSE), re.DOTALL)

# Response items phase 1 keeps (spec 1.5 step 2, 10.8). `message` loses developer/system roles.
KEPT_RESPONSE_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
    }
)
DROPPED_MESSAGE_ROLES = frozenset({"developer", "system"})

# Response items and events that mean the session read text from outside the machine.
EXTERNAL_CONTEXT_ITEM_TYPES = frozenset({"web_search_call", "tool_search_call", "tool_search_output"})
EXTERNAL_CONTEXT_EVENT_TYPES = frozenset(
    {"mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end"}
)
# MCP servers whose tools only read the memory folder itself: not external context.
MEMORY_MCP_SERVERS = frozenset({"memories", "codex_memories", "codex-memories"})
# Codex exposes MCP tools to the model as `mcp__<server>__<tool>` (older builds:
# `<server>__<tool>`); none of its built-in tools has a double underscore in its name.
_MCP_TOOL_DELIMITER = "__"
_MCP_TOOL_PREFIX = "mcp__"

# Lines written by Codex before the `{timestamp, type, payload}` envelope (2025 builds) are bare
# response items; we accept them too.
_LEGACY_RESPONSE_ITEM_TYPES = KEPT_RESPONSE_ITEM_TYPES | {"reasoning"}

_HARNESS_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<instructions>",
    "<skill>",
    "<subagent_notification>",
    "<turn_aborted>",
    "# agents.md instructions",
)
_AGENTS_MD_PREFIX = "# agents.md instructions"
_AGENTS_MD_SUFFIX = "</instructions>"
_SKILL_PREFIX = "<skill>"
_SKILL_SUFFIX = "</skill>"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

_ROLLOUT_NAME_RE = re.compile(
    r"^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-"
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(?:\.zst)?$"
)


# --- Records -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineStats:
    lines_total: int = 0
    lines_parsed: int = 0
    lines_skipped: int = 0
    # invalid_json, not_an_object, partial_last_line, line_too_long, too_deeply_nested,
    # type_not_a_string, payload_not_an_object, payload_type_not_a_string, role_not_a_string
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    # Parsed lines whose text was made storable, and how many lines by reason (a line may have
    # several): invalid_utf8, lone_surrogate, nul_character.
    lines_repaired: int = 0
    repaired_by_reason: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Citation:
    """A raw `<oai-mem-citation>…</oai-mem-citation>` block from an assistant message."""

    text: str
    line_offset: int = 0  # byte offset of the line it came from


@dataclass(frozen=True, slots=True)
class RolloutScan:
    """What discovery needs from one rollout file."""

    thread_id: str | None
    forked_from_id: str | None
    created_at: datetime | None
    cwd: str | None
    source: str
    originator: str | None
    cli_version: str | None
    model_provider: str | None
    git_sha: str | None
    git_branch: str | None
    git_origin_url: str | None
    memory_mode: str | None
    has_user_message: bool
    first_user_message: str | None
    last_activity_at: datetime | None
    used_external_context: bool
    citations: list[Citation] = field(default_factory=list)
    stats: LineStats = field(default_factory=LineStats)
    end_offset: int = 0  # just past the last complete line; resume citation harvest from here
    external_context_kinds: tuple[str, ...] = ()  # why used_external_context is true
    kept_lines: KeptLines | None = None  # where the transcript's lines are (long rollouts only)


@dataclass(frozen=True, slots=True)
class MemoryTranscript:
    """What phase 1 sends to the model."""

    # Kept, sanitized, redacted and spotlit items (head + tail when truncated): each starts with
    # its origin (`"from"`) and the text the user did not write is datamarked (`spotlight_item`).
    items: list[dict[str, Any]]
    text: str  # compact JSON array of `items`, with a marker string between head and tail
    # o200k tokens of `text`. A text no longer in UTF-8 bytes than the budget cannot hold more
    # tokens than that (a token is at least one byte) and is not tokenised: this is then its
    # byte length, an upper bound (`tokens_counted` False). Otherwise the sum of the kept items'
    # exact counts plus one per separator (the items are tokenised once, when kept); `text` is
    # counted whole only when that sum comes within `_RECOUNT_MARGIN_TOKENS` per item of the
    # budget, and then this is exact.
    tokens: int
    truncated_tokens: int  # tokens left out (estimated for dropped items, exact for cut ones)
    original_tokens_estimate: int
    stats: LineStats
    tokens_counted: bool = True  # False: `tokens` is the byte bound above, not a count


# A rollout whose kept lines total less than this is read whole by its transcript, and its scan
# keeps no `KeptLines`: such a file is cheap to read again, and an index of every rollout a
# backfill reads would hold memory for nothing. Past it, the middle the budget drops is most of
# the file (the default budget of 150,000 tokens is about 600 KB of JSON).
KEPT_LINES_MIN_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class KeptLines:
    """Where a transcript's items are in a rollout, as the discovery scan read it: the byte offset
    and length of every line `build_memory_transcript` keeps, the line counts of the whole file,
    and the file's size and mtime then. With it, the transcript of a long rollout parses its head
    and the lines left in its tail only, not the middle the budget drops; only while the file
    still has that size and mtime."""

    size: int
    mtime_ns: int
    offsets: array  # array("q"): byte offset of each kept line, in file order
    lengths: array  # array("q"): its length in bytes, newline included
    stats: LineStats
    total_bytes: int  # sum of `lengths`


# --- Files -------------------------------------------------------------------------------------


def thread_id_from_filename(path: Path | str) -> str | None:
    """The thread UUID at the end of `rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, lower case."""
    match = _ROLLOUT_NAME_RE.match(Path(path).name)
    return match.group(1).lower() if match else None


@dataclass(slots=True)
class _RawLine:
    offset: int  # byte offset where the line starts
    end: int  # byte offset just past the line
    data: bytes | None  # None when the line was too long to keep
    complete: bool  # ends with a newline


def _read_lines(stream: BinaryIO, *, start_offset: int = 0) -> Iterator[_RawLine]:
    offset = start_offset
    while True:
        chunk = stream.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        start = offset
        offset += len(chunk)
        if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            del chunk
            complete = False
            while True:  # drain the rest of the line without keeping it
                more = stream.readline(1 << 20)
                offset += len(more)
                if not more:
                    break
                if more.endswith(b"\n"):
                    complete = True
                    break
            yield _RawLine(start, offset, None, complete)
            continue
        yield _RawLine(start, offset, chunk, chunk.endswith(b"\n"))


# What `_LineParser(fast=True)` gets back when orjson refused a line.
_REFUSED = object()


class _LineParser:
    """Turns raw lines into JSON objects of storable text and counts what it had to skip or repair.

    `fast`: parse with orjson (about twice the speed of `json.loads` on rollout lines), and with
    `json.loads` what orjson refuses, so every line is used, repaired or skipped for the same
    reason as without it (NaN, a lone surrogate escape, invalid UTF-8, deep nesting). orjson reads an
    integer past 64 bits as a float, which `json.loads` does not: only a reader that uses no such
    number may ask for it (the discovery scan); the transcript keeps every value as it is."""

    def __init__(self, *, fast: bool = False) -> None:
        self.fast = fast
        self.total = 0
        self.parsed = 0
        self.skipped: Counter[str] = Counter()
        self.repaired = 0
        self.repaired_by_reason: Counter[str] = Counter()

    def parse(self, line: _RawLine) -> dict[str, Any] | None:
        if line.data is None:
            self.total += 1
            self.skipped["line_too_long"] += 1
            return None
        data = line.data.strip()
        if line.offset == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:].strip()
        if not data:
            return None
        self.total += 1
        reason: str | None = None
        obj: Any = _REFUSED
        if self.fast:
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                obj = _REFUSED  # json.loads below reads it or names the damage
        repairs: set[str] = set()
        if obj is _REFUSED:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", "replace")
                repairs.add(REPAIR_INVALID_UTF8)
            try:
                obj = json.loads(text)
            except ValueError:
                reason = "invalid_json"
            except RecursionError:
                # Nested past what the parser's stack holds (how deep that is depends on
                # the caller's stack); orjson's limit is 1024 levels: either way, too deep.
                reason = "too_deeply_nested"
        if reason is None and not isinstance(obj, dict):
            reason = "not_an_object"
        if reason is not None:
            # An unterminated last line is most likely a session still being written.
            self.skipped["partial_last_line" if not line.complete else reason] += 1
            return None
        # A rollout line keeps its bulk in strings: walking its few containers costs less than
        # counting the brackets of its bytes to skip the walk (half, on benchmarks/ingest.py).
        too_deep = _nested_deeper_than(obj, MAX_JSON_DEPTH)
        damage = "too_deeply_nested" if too_deep else _envelope_damage(obj)
        if damage is not None:
            self.skipped[damage] += 1
            return None
        if might_need_repair(data):
            obj, replaced = storable_json(obj)
            repairs.update(replaced)
        self.parsed += 1
        if repairs:
            self.repaired += 1
            self.repaired_by_reason.update(repairs)
        return obj

    def stats(self) -> LineStats:
        return LineStats(
            lines_total=self.total,
            lines_parsed=self.parsed,
            lines_skipped=sum(self.skipped.values()),
            skipped_by_reason=dict(self.skipped),
            lines_repaired=self.repaired,
            repaired_by_reason=dict(self.repaired_by_reason),
        )


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep (iterative: no recursion on hostile input)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(current, dict):
            pending.extend((child, depth + 1) for child in current.values() if isinstance(child, (dict, list)))
        elif isinstance(current, list):
            pending.extend((child, depth + 1) for child in current if isinstance(child, (dict, list)))
    return False


def _envelope_damage(obj: dict[str, Any]) -> str | None:
    """Why a parsed line cannot be read as a rollout line, or None.

    The fields every consumer branches on (`type`, `payload`, `payload.type`, a message's
    `role`) must be strings (or an object, for `payload`) when present; any other JSON value
    makes the line damaged, so no consumer ever hashes or compares a list or an object there.
    """
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        return "type_not_a_string"
    if "payload" in obj:
        payload = obj["payload"]
        if not isinstance(payload, dict):
            return "payload_not_an_object" if kind is not None else None
    elif kind in _LEGACY_RESPONSE_ITEM_TYPES:
        payload = obj
    else:
        return None
    item_type = payload.get("type")
    if item_type is not None and not isinstance(item_type, str):
        return "payload_type_not_a_string"
    role = payload.get("role")
    if role is not None and not isinstance(role, str):
        return "role_not_a_string"
    return None


def _envelope(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """(line type, payload) of a rollout line; legacy bare lines are mapped onto the envelope.

    Only called on lines `_envelope_damage` accepted: `type` is a string or absent."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if isinstance(kind, str) and isinstance(payload, dict):
        return kind, payload
    if kind in _LEGACY_RESPONSE_ITEM_TYPES:
        return "response_item", obj
    if kind is None and isinstance(obj.get("id"), str) and "timestamp" in obj:
        return "session_meta", obj
    return (kind if isinstance(kind, str) else None), None


# --- Small value helpers -----------------------------------------------------------------------


def _str_or_none(value: Any) -> str | None:
    """A metadata string, or None for any other JSON value and for a string past
    `MAX_METADATA_CHARS` (a cwd or a remote URL of megabytes is no one's: it would be stored,
    keyed by and looked up on disk)."""
    return value if isinstance(value, str) and value and len(value) <= MAX_METADATA_CHARS else None


def _thread_id_or_none(value: Any) -> str | None:
    """A thread id as Codex writes them (a UUID; any short id of letters, digits, `-`, `_`, `.`,
    `:`), else None: an id is a primary key."""
    return value if isinstance(value, str) and _THREAD_ID_RE.fullmatch(value) else None


def _redacted_str(value: Any) -> str | None:
    """Thread metadata that goes into the state DB as text (a git remote URL can carry a token)."""
    text = _str_or_none(value)
    return redact_secrets(text) if text is not None else None


def _parse_timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: a year-1 or year-9999 time with an offset
        return None


def normalize_source(value: Any) -> str:
    """`session_meta.source` as one string; missing means vscode (spec 10.3)."""
    if value is None:
        return "vscode"
    if isinstance(value, str):
        source = value.strip().lower() or "vscode"
    elif isinstance(value, dict):
        if "subagent" in value:
            return "subagent"
        keys = [key for key in value if isinstance(key, str)]
        source = keys[0].lower() if keys else "unknown"
    else:
        return "unknown"
    return source if len(source) <= _MAX_SOURCE_CHARS else "unknown"


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def is_harness_text(text: str) -> bool:
    """Text Codex injects into user messages (environment, AGENTS.md, skills, notifications)."""
    head = _ascii_lower(text.lstrip()[:64])
    return head.startswith(_HARNESS_PREFIXES)


def _is_injected_instructions(part: Any) -> bool:
    """An AGENTS.md block or a skill body: removed from user messages before phase 1."""
    if not isinstance(part, dict) or part.get("type") != "input_text":
        return False
    text = part.get("text")
    if not isinstance(text, str):
        return False
    trimmed = text.strip()
    head = _ascii_lower(trimmed[: len(_AGENTS_MD_PREFIX)])
    tail = _ascii_lower(trimmed[-len(_AGENTS_MD_SUFFIX) :])
    if head.startswith(_AGENTS_MD_PREFIX) and tail.endswith(_AGENTS_MD_SUFFIX):
        return True
    return head.startswith(_SKILL_PREFIX) and tail.endswith(_SKILL_SUFFIX)


def _message_texts(item: dict[str, Any], part_type: str) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, dict) and part.get("type") == part_type and isinstance(part.get("text"), str)
    ]


def _preview(text: str) -> str:
    # Redact a generous prefix before cutting, so a secret straddling the cut is still caught.
    redacted = redact_secrets(text.strip()[: FIRST_USER_MESSAGE_MAX_CHARS * 20])
    return redacted[:FIRST_USER_MESSAGE_MAX_CHARS]


def _mcp_server_of_tool_name(name: str, namespace: Any) -> str | None:
    """The MCP server a function call goes to, or None for a built-in tool."""
    if isinstance(namespace, str) and namespace.startswith(_MCP_TOOL_PREFIX):
        return namespace[len(_MCP_TOOL_PREFIX) :].split(_MCP_TOOL_DELIMITER, 1)[0] or namespace
    if name.startswith(_MCP_TOOL_PREFIX):
        return name[len(_MCP_TOOL_PREFIX) :].split(_MCP_TOOL_DELIMITER, 1)[0]
    if _MCP_TOOL_DELIMITER in name.strip("_"):
        return name.split(_MCP_TOOL_DELIMITER, 1)[0]
    return None


def external_context_kind(line_type: str | None, payload: dict[str, Any]) -> str | None:
    """Why a rollout line counts as external context, or None.

    Detected: web search and tool search response items (`web_search_call`, `tool_search_call`,
    `tool_search_output`); function calls to MCP tools (`mcp__<server>__<tool>`, an `mcp__`
    namespace, or the older `<server>__<tool>` naming); and the persisted MCP / web-search
    events (`mcp_tool_call_begin` / `_end` with `invocation.server`, `web_search_begin` /
    `_end`). Calls to the memory server itself (`MEMORY_MCP_SERVERS`) are not external.
    """
    kind = payload.get("type")
    if not isinstance(kind, str):
        return None
    if line_type == "response_item":
        if kind in EXTERNAL_CONTEXT_ITEM_TYPES:
            return kind
        if kind == "function_call" and isinstance(payload.get("name"), str):
            server = _mcp_server_of_tool_name(payload["name"], payload.get("namespace"))
            if server is not None and server not in MEMORY_MCP_SERVERS:
                return "mcp_tool_call"
        return None
    if line_type == "event_msg" and kind in EXTERNAL_CONTEXT_EVENT_TYPES:
        invocation = payload.get("invocation")
        server = invocation.get("server") if isinstance(invocation, dict) else None
        if isinstance(server, str) and server in MEMORY_MCP_SERVERS:
            return None
        return "mcp_tool_call" if kind.startswith("mcp_") else "web_search_call"
    return None


# --- Discovery scan ----------------------------------------------------------------------------


@dataclass(slots=True)
class _ScanState:
    meta: dict[str, Any] | None = None
    meta_line_timestamp: datetime | None = None
    has_user_message: bool = False
    first_user_message: str | None = None
    last_activity_at: datetime | None = None
    external_kinds: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    citations_this_turn: set[str] = field(default_factory=set)

    def note_user_text(self, texts: list[str]) -> None:
        real = [text for text in texts if text.strip() and not is_harness_text(text)]
        if not real:
            return
        self.citations_this_turn.clear()
        self.has_user_message = True
        if self.first_user_message is None:
            self.first_user_message = _preview("\n".join(real))

    def note_assistant_text(self, texts: list[str], offset: int, harvest: bool) -> None:
        # Lines before `start_offset` are still tracked, so that a resumed scan dedupes a block
        # against its twin from the same turn that an earlier scan already returned.
        for text in texts:
            if CITATION_OPEN not in text:
                continue
            for match in _CITATION_RE.finditer(text):
                block = match.group(0)
                # The same final answer is recorded as a response item and as an agent_message
                # event: count a block once per turn.
                if block in self.citations_this_turn:
                    continue
                self.citations_this_turn.add(block)
                if harvest:
                    self.citations.append(Citation(text=block, line_offset=offset))


def scan_rollout(path: Path, *, start_offset: int = 0) -> RolloutScan:
    """Read one rollout (streaming) for discovery.

    The whole file is always read for the thread facts; citations are harvested only from
    lines starting at or after `start_offset` (a previous scan's `end_offset`). `end_offset` is
    the byte offset just past the last complete line (or past a final unterminated line that
    parsed). A long rollout that did not change while it was read also gets its `KeptLines`.
    """
    parser = _LineParser(fast=True)
    state = _ScanState()
    end_offset = 0
    offsets, lengths = array("q"), array("q")
    kept_bytes = 0
    with open_rollout(path) as stream:
        before = _file_identity(path, stream)
        for line in _read_lines(stream):
            obj = parser.parse(line)
            if line.complete or obj is not None:
                end_offset = line.end
            if obj is None:
                continue
            if _scan_line(state, obj, line.offset, harvest=line.offset >= start_offset):
                offsets.append(line.offset)
                lengths.append(line.end - line.offset)
                kept_bytes += line.end - line.offset
        after = _file_identity(path, stream)
    stats = parser.stats()
    kept_lines = None
    if before is not None and before == after and kept_bytes >= KEPT_LINES_MIN_BYTES:
        kept_lines = KeptLines(before[0], before[1], offsets, lengths, stats, kept_bytes)
    return _finish_scan(state, stats, end_offset, kept_lines)


def _file_identity(path: Path, stream: BinaryIO) -> tuple[int, int] | None:
    """(size, mtime_ns) of an open plain rollout; None for a compressed one, whose line offsets
    are positions in the decompressed stream, where nothing can seek."""
    if path.name.endswith(".zst"):
        return None
    status = os.fstat(stream.fileno())
    return status.st_size, status.st_mtime_ns


def _scan_line(state: _ScanState, obj: dict[str, Any], offset: int, *, harvest: bool) -> bool:
    """Note one parsed line's thread facts; True when the transcript keeps the line (so the scan
    can record where it is without working out the envelope again)."""
    moment = _parse_timestamp(obj.get("timestamp"))
    if moment is not None and (state.last_activity_at is None or moment > state.last_activity_at):
        state.last_activity_at = moment
    line_type, payload = _envelope(obj)
    if payload is None:
        return False
    _note_payload(state, line_type, payload, moment, offset, harvest)
    return line_type == "response_item" and _is_kept_item(payload)


def _note_payload(
    state: _ScanState,
    line_type: str | None,
    payload: dict[str, Any],
    moment: datetime | None,
    offset: int,
    harvest: bool,
) -> None:
    kind = payload.get("type")
    if line_type == "session_meta":
        if state.meta is None:  # forks repeat the parent's meta later; the first line is ours
            state.meta = payload
            state.meta_line_timestamp = moment
        return
    if line_type == "turn_context":
        state.citations_this_turn.clear()
        return
    external = external_context_kind(line_type, payload)
    if external is not None and external not in state.external_kinds:
        state.external_kinds.append(external)
    if line_type == "response_item" and kind == "message":
        role = payload.get("role")
        if role == "user":
            state.note_user_text(_message_texts(payload, "input_text"))
        elif role == "assistant":
            state.note_assistant_text(_message_texts(payload, "output_text"), offset, harvest)
        return
    if line_type == "event_msg":
        message = payload.get("message")
        if kind == "user_message" and isinstance(message, str):
            if payload.get("kind") in (None, "plain"):
                state.note_user_text([message])
        elif kind == "agent_message" and isinstance(message, str):
            state.note_assistant_text([message], offset, harvest)
        elif kind in ("task_started", "turn_started"):
            state.citations_this_turn.clear()


def _finish_scan(state: _ScanState, stats: LineStats, end_offset: int, kept_lines: KeptLines | None) -> RolloutScan:
    meta = state.meta or {}
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    created_at = _parse_timestamp(meta.get("timestamp")) or state.meta_line_timestamp
    return RolloutScan(
        thread_id=_thread_id_or_none(meta.get("id")),
        forked_from_id=_thread_id_or_none(meta.get("forked_from_id")),
        created_at=created_at,
        cwd=_redacted_str(meta.get("cwd")),
        source=normalize_source(meta.get("source")) if state.meta is not None else "unknown",
        originator=_str_or_none(meta.get("originator")),
        cli_version=_str_or_none(meta.get("cli_version")),
        model_provider=_str_or_none(meta.get("model_provider")),
        git_sha=_str_or_none(git.get("commit_hash")),
        git_branch=_redacted_str(git.get("branch")),
        git_origin_url=_redacted_str(git.get("repository_url")),
        memory_mode=_str_or_none(meta.get("memory_mode")),
        has_user_message=state.has_user_message,
        first_user_message=state.first_user_message,
        last_activity_at=state.last_activity_at,
        used_external_context=bool(state.external_kinds),
        external_context_kinds=tuple(state.external_kinds),
        citations=state.citations,
        stats=stats,
        end_offset=end_offset,
        kept_lines=kept_lines,
    )


# --- Phase-1 transcript ------------------------------------------------------------------------


def sanitize_response_item(item: dict[str, Any]) -> dict[str, Any] | None:
    """The item as phase 1 sends it, or None when phase 1 drops it (spec 1.5 step 2-3, 10.8).

    Not redacted: redaction runs on the serialised item (`build_memory_transcript`).
    """
    if not _is_kept_item(item):
        return None
    kept = dict(item)
    kept.pop("encrypted_content", None)
    if kept.get("type") == "message" and kept.get("role") == "user":
        kept.pop("status", None)
        content = kept.get("content")
        if isinstance(content, list):
            kept["content"] = [part for part in content if not _is_injected_instructions(part)]
    return kept


def _is_kept_item(item: dict[str, Any]) -> bool:
    """Whether phase 1 keeps a response item: the one drop rule both the transcript and the
    discovery scan (which records where the kept lines are) decide by."""
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in KEPT_RESPONSE_ITEM_TYPES:
        return False
    role = item.get("role")
    if kind != "message" or not isinstance(role, str):
        return True
    if role in DROPPED_MESSAGE_ROLES:
        return False
    content = item.get("content")
    # A user message made only of injected instructions (or of nothing) carries nothing of the user's.
    return not (role == "user" and isinstance(content, list) and all(map(_is_injected_instructions, content)))


class ItemOrigin(StrEnum):
    """Who wrote a transcript item's text: the `"from"` key the stage-1 input puts first in it."""

    user = "user"  # the user's own messages (Codex's harness parts in them are marked as data)
    assistant = "assistant"  # the agent's own words
    agent_action = "agent_action"  # a tool call the agent made: a command, a patch, a search
    tool_output = "tool_output"  # what a tool returned: command output, files, web pages, MCP results


# Spotlighting (Hines et al., "Defending Against Indirect Prompt Injection Attacks With
# Spotlighting", 2024): every line of text in the stage-1 input that the user did not write
# starts with this datamark, so the model can tell data from the user's words at any point of a
# long output, in any language, without an encoding it would have to undo to read the evidence.
# One o200k token (U+02C6, the mark the paper uses); a per-line mark rather than one per word
# keeps the cost to about one token per line, and works for scripts without spaces.
DATAMARK = "\u02c6"
FROM_KEY = "from"
TOOL_OUTPUT_ITEM_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
AGENT_ACTION_ITEM_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"})
# Keys of a tool-output item that hold identifiers, not text: never marked.
_UNMARKED_KEYS = frozenset({FROM_KEY, "type", "call_id", "id", "status", "name", "namespace", "role"})
# Where a line starts inside a string: its beginning, after a newline, and after an escaped
# newline (`\n` in a JSON document a tool printed, which a model reads as a line break too). A
# line already marked is not marked again, so marking is idempotent; an empty tail is not marked.
_LINE_START = re.compile(r"(?:\A|(?<=\n)|(?<=\\n))(?!" + DATAMARK + r"|\Z)")


def item_origin(item: dict[str, Any]) -> ItemOrigin:
    """Who wrote a kept item's text. A message role other than user or assistant, and any item
    type not known here, counts as tool output: untrusted by default."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role == "user":
            return ItemOrigin.user
        return ItemOrigin.assistant if role == "assistant" else ItemOrigin.tool_output
    if kind in AGENT_ACTION_ITEM_TYPES:
        return ItemOrigin.agent_action
    return ItemOrigin.tool_output


def datamark(text: str) -> str:
    """`text` with the datamark at the start of every line (idempotent)."""
    return _LINE_START.sub(DATAMARK, text)


def unmark(text: str) -> str:
    """`text` without datamarks: what the tool printed (a datamark it printed itself goes too)."""
    return text.replace(DATAMARK, "")


def spotlight_item(item: dict[str, Any]) -> dict[str, Any]:
    """The item as the stage-1 model reads it: its origin first (`"from"`, a key no text inside
    the item can forge: a tool output is a JSON string, so it cannot add a key), then its fields;
    the text of tool output, and Codex's harness parts of a user message (environment, skills,
    other agents' notifications), datamarked line by line. A new dict; idempotent. Runs after
    redaction: a mark inside a secret would hide it from the patterns."""
    origin = item_origin(item)
    fields = {key: value for key, value in item.items() if key != FROM_KEY}
    if origin is ItemOrigin.tool_output:
        fields = _map_strings(fields, datamark, _UNMARKED_KEYS)
    elif origin is ItemOrigin.user and isinstance(fields.get("content"), list):
        fields["content"] = [_datamark_harness_part(part) for part in fields["content"]]
    return {FROM_KEY: origin.value, **fields}


def unspotlight_item(item: dict[str, Any]) -> dict[str, Any]:
    """The item as the rollout had it (after sanitizing and redaction): no origin key, no marks."""
    return {key: _map_strings(value, unmark) for key, value in item.items() if key != FROM_KEY}


def _map_strings(value: Any, function: Callable[[str], str], skipped_keys: frozenset[str] = frozenset()) -> Any:
    """`value` with `function` applied to every string in it, except under `skipped_keys`."""
    if isinstance(value, str):
        return function(value)
    if isinstance(value, list):
        return [_map_strings(entry, function, skipped_keys) for entry in value]
    if isinstance(value, dict):
        return {key: entry if key in skipped_keys else _map_strings(entry, function, skipped_keys) for key, entry in value.items()}
    return value


def _datamark_harness_part(part: Any) -> Any:
    if isinstance(part, dict) and isinstance(part.get("text"), str) and is_harness_text(unmark(part["text"])):
        return {**part, "text": datamark(part["text"])}
    return part


def _kept_item(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The sanitized response item of a parsed rollout line, or None when the transcript does not
    keep the line (another line type, or an item phase 1 drops)."""
    line_type, payload = _envelope(obj)
    if line_type != "response_item" or payload is None:
        return None
    return sanitize_response_item(payload)


def _dumps(item: Any) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _redact_leaves(value: Any, key: str | None = None) -> Any:
    if isinstance(value, str):
        if key is not None and name_strength(key) == "strong" and len(value) >= 8:
            return REDACTED
        return redact_secrets(value)
    if isinstance(value, list):
        return [_redact_leaves(entry) for entry in value]
    if isinstance(value, dict):
        return {name: _redact_leaves(entry, name) for name, entry in value.items()}
    return value


def redact_item(item: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(redacted item, its compact JSON). Redacts the JSON text, so keys and values that sit in
    different strings (`"password": "..."`) are caught; if that ever broke the JSON, falls back
    to redacting every string leaf."""
    text = _dumps(item)
    redacted = redact_secrets(text)
    if redacted == text:
        return item, text
    try:
        parsed = json.loads(redacted)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed, redacted
    leaves = _redact_leaves(item)
    return leaves, _dumps(leaves)


def _string_leaves(value: Any, holder: Any = None, key: Any = None) -> Iterator[tuple[Any, Any, str]]:
    if isinstance(value, str):
        yield holder, key, value
    elif isinstance(value, list):
        for index, entry in enumerate(value):
            yield from _string_leaves(entry, value, index)
    elif isinstance(value, dict):
        for name, entry in value.items():
            yield from _string_leaves(entry, value, name)


def _shrink_item(item: dict[str, Any], max_tokens: int) -> tuple[dict[str, Any], str, int]:
    """Middle-truncate the longest strings of a redacted item until it fits `max_tokens`.

    Returns (item, json, tokens). May still exceed the budget when the bulk is structure rather
    than text; the caller then drops the item or cuts the final text.
    """
    text = _dumps(item)
    tokens = count_tokens(text)
    for _ in range(8):
        if tokens <= max_tokens:
            break
        leaves = [leaf for leaf in _string_leaves(item) if leaf[0] is not None]
        if not leaves:
            break
        holder, key, longest = max(leaves, key=lambda leaf: len(leaf[2]))
        leaf_tokens = count_tokens(longest)
        target = max(16, leaf_tokens - (tokens - max_tokens) - 16)
        if target >= leaf_tokens:
            break
        holder[key] = truncate_middle(longest, target).text
        text = _dumps(item)
        tokens = count_tokens(text)
    return item, text, tokens


@dataclass(slots=True)
class _Kept:
    item: dict[str, Any]
    text: str
    tokens: int  # exact tokens of `text`
    original_tokens: int  # before any shrinking


# Characters of raw JSON the rolling tail may hold per token of its budget: generous, so the
# tail holds enough text for its budget even when tokens are long; exact counting happens once,
# at the end, on what is left.
_TAIL_CHARS_PER_TOKEN = 8
# Estimate for items dropped from the middle without being tokenised (JSON averages ~3.5-4).
_ESTIMATED_CHARS_PER_TOKEN = 4
# Items are tokenised once, when kept, and the transcript's count is their sum plus the
# separators. Tokens can merge or split where two items meet (`"},{"`), so the rendered text is
# counted whole only when that sum comes within this many tokens per item of the budget.
_RECOUNT_MARGIN_TOKENS = 2
_RECOUNT_MARGIN_FLOOR = 16


class _TranscriptBuilder:
    """Head until half the budget is used, then a rolling tail bounded in characters."""

    def __init__(self, token_budget: int) -> None:
        self.head_budget = token_budget // 2
        self.tail_budget = token_budget - self.head_budget
        self.token_budget = token_budget
        self.head: list[_Kept] = []
        self.head_tokens = 0
        self.head_open = True
        # Tail items as parsed (or, read from `KeptLines`, not yet read), each with the length of
        # the raw line it came from: the rolling tail is bounded by raw bytes, so an item is
        # read, serialised and redacted only if it is still there at the end.
        self.tail: deque[tuple[dict[str, Any] | _DeferredItem, int]] = deque()
        self.tail_chars = 0
        self.tail_cap_chars = max(1, self.tail_budget * _TAIL_CHARS_PER_TOKEN)
        self.omitted_items = 0
        self.omitted_tokens_estimate = 0

    def add(self, item: dict[str, Any] | _DeferredItem, raw_length: int) -> None:
        """Add one kept item; `raw_length` is the byte length of its rollout line (an upper
        bound of the item's own JSON, used to bound the tail without serialising the item). A
        `_DeferredItem` only comes once the head is closed (`_Assembly.reading_head`)."""
        if self.head_open:
            kept = self._keep(item)
            if self.head_tokens + kept.tokens + 1 <= self.head_budget:
                self.head.append(kept)
                self.head_tokens += kept.tokens + 1
                return
            self.head_open = False
            item, raw_length = kept.item, len(kept.text)
        if raw_length > self.tail_cap_chars:
            # Cut an item that alone outgrows the tail. `_keep` redacts before it cuts, so a
            # secret straddling the cut is still caught.
            kept = self._keep(_loaded(item), max_tokens=self.tail_budget)
            self.omitted_tokens_estimate += kept.original_tokens - kept.tokens
            item, raw_length = kept.item, len(kept.text)
        self._push_tail(item, raw_length)

    def _keep(self, item: dict[str, Any], max_tokens: int | None = None) -> _Kept:
        redacted, _ = redact_item(item)
        spotlit = spotlight_item(redacted)
        text = _dumps(spotlit)
        tokens = count_tokens(text)
        original = tokens
        if max_tokens is not None and tokens > max_tokens:
            spotlit, text, tokens = _shrink_item(spotlit, max_tokens)
        return _Kept(spotlit, text, tokens, original)

    def _push_tail(self, item: dict[str, Any] | _DeferredItem, length: int) -> None:
        self.tail.append((item, length))
        self.tail_chars += length
        while self.tail_chars > self.tail_cap_chars and len(self.tail) > 1:
            _, dropped = self.tail.popleft()
            self.tail_chars -= dropped
            self._omit_estimate(dropped)

    def _omit_estimate(self, chars: int) -> None:
        self.omitted_items += 1
        self.omitted_tokens_estimate += max(1, chars // _ESTIMATED_CHARS_PER_TOKEN)

    def finish(self, stats: LineStats) -> MemoryTranscript:
        tail = self._fit_tail()
        head = list(self.head)
        while True:
            text = self._render(head, tail)
            tokens = self._summed_tokens(head, tail)
            margin = _RECOUNT_MARGIN_FLOOR + _RECOUNT_MARGIN_TOKENS * (len(head) + len(tail))
            if tokens + margin > self.token_budget:
                tokens = count_tokens(text)  # near the budget: count what is sent, exactly
            if tokens <= self.token_budget or not (head or tail):
                break
            # Separators and the marker cost a few tokens: give up the item nearest the middle
            # on the heavier side.
            heavier = tail if sum(k.tokens for k in tail) >= sum(k.tokens for k in head) else head
            dropped = heavier.pop(0) if heavier is tail else heavier.pop()
            self.omitted_items += 1
            self.omitted_tokens_estimate += dropped.original_tokens
        kept_items = head + tail
        kept_tokens = sum(k.tokens for k in kept_items)
        original_estimate = kept_tokens + self.omitted_tokens_estimate
        if tokens > self.token_budget:
            # Only a budget smaller than the marker itself gets here.
            text = truncate_middle(text, self.token_budget).text
            tokens = count_tokens(text)
        return MemoryTranscript(
            items=[k.item for k in kept_items],
            text=text,
            tokens=tokens,
            truncated_tokens=max(0, original_estimate - kept_tokens),
            original_tokens_estimate=original_estimate,
            stats=stats,
        )

    def _fit_tail(self) -> list[_Kept]:
        """Redact and count the tail exactly, keeping the newest items that fit its budget."""
        budget = self.tail_budget + max(0, self.head_budget - self.head_tokens)
        kept: list[_Kept] = []
        used = 0
        while self.tail:
            item = _loaded(self.tail.pop()[0])
            entry = self._keep(item)
            if used + entry.tokens + 1 > budget:
                if not kept:
                    # The newest item alone is too big: keep a cut-down copy of it.
                    entry = self._keep(item, max_tokens=max(1, budget - 1))
                    if entry.tokens + 1 <= budget:
                        kept.append(entry)
                        used += entry.tokens + 1
                        self.omitted_tokens_estimate += entry.original_tokens - entry.tokens
                        continue
                self.omitted_items += 1
                self.omitted_tokens_estimate += entry.original_tokens
                for _, rest in self.tail:
                    self._omit_estimate(rest)
                self.tail.clear()
                break
            kept.append(entry)
            used += entry.tokens + 1
        kept.reverse()
        return kept

    def _render(self, head: list[_Kept], tail: list[_Kept]) -> str:
        parts = [k.text for k in head]
        if self.omitted_items:
            parts.append(self._marker())
        parts.extend(k.text for k in tail)
        return "[" + ",".join(parts) + "]"

    def _marker(self) -> str:
        return json.dumps(marker_line(self.omitted_tokens_estimate), ensure_ascii=False)

    def _summed_tokens(self, head: list[_Kept], tail: list[_Kept]) -> int:
        """The items' own counts, one per separator and bracket, and the marker's count."""
        parts = len(head) + len(tail)
        tokens = sum(k.tokens for k in head) + sum(k.tokens for k in tail)
        if self.omitted_items:
            tokens += count_tokens(self._marker())
            parts += 1
        return tokens + max(parts - 1, 0) + 2


def build_memory_transcript(path: Path, *, token_budget: int, kept_lines: KeptLines | None = None) -> MemoryTranscript:
    """The phase-1 model input for one rollout, within `token_budget` tokens (spec 1.5).

    Keeps model-visible items only, strips AGENTS.md and skill blocks from user messages,
    clears `encrypted_content` and user-message `status`, redacts secrets in every kept item,
    and truncates the middle of an oversized conversation (an item-level marker string
    `…N tokens truncated…` sits between head and tail). Never fails on size.

    `kept_lines`, the discovery scan's index of this file, lets a long rollout be read without
    parsing the middle the budget drops: the same transcript, from its head and the lines left
    in its tail. It is used only while the file has the size and mtime the scan saw; otherwise,
    or when a line is not what the scan found there, the file is read whole as without it.
    """
    if token_budget < 1:
        raise ValueError("token_budget must be at least 1")
    may_use_kept_lines = kept_lines is not None and kept_lines.total_bytes > token_budget
    with open_rollout(path, sequential=not may_use_kept_lines) as stream:
        if may_use_kept_lines and _file_identity(path, stream) == (kept_lines.size, kept_lines.mtime_ns):
            try:
                return _transcript_of_kept_lines(stream, token_budget, kept_lines)
            except _StaleKeptLines:
                stream.seek(0)
        return _transcript_of_stream(stream, token_budget)


def iter_kept_items(path: Path) -> Iterator[dict[str, Any]]:
    """Every item the phase-1 transcript keeps of a rollout, in file order: sanitized, but neither
    redacted, spotlit nor cut to a budget. For phase 2's provenance check, which compares memory
    lines with them and stores or sends none of their text. Streaming, bounded per line as the
    transcript is; a line that cannot be used is skipped; I/O errors raise `OSError`."""
    parser = _LineParser(fast=True)  # only strings are read: orjson's floats for huge ints do not matter
    with open_rollout(path) as stream:
        for line in _read_lines(stream):
            obj = parser.parse(line)
            item = None if obj is None else _kept_item(obj)
            if item is not None:
                yield item


def _transcript_of_stream(stream: BinaryIO, token_budget: int) -> MemoryTranscript:
    parser = _LineParser()
    assembly = _Assembly(token_budget)
    for line in _read_lines(stream):
        obj = parser.parse(line)
        item = None if obj is None else _kept_item(obj)
        if item is not None:
            assembly.add(item, line.end - line.offset)
    return assembly.finish(parser.stats())


def _transcript_of_kept_lines(stream: BinaryIO, token_budget: int, kept_lines: KeptLines) -> MemoryTranscript:
    """Reads the kept lines that may reach the head one by one, then takes the rest by their
    lengths alone: the tail reads the few it keeps when it is fitted (`_DeferredItem`)."""
    assembly = _Assembly(token_budget)
    offsets, lengths = kept_lines.offsets, kept_lines.lengths
    index = 0
    while index < len(offsets) and assembly.reading_head:
        assembly.add(_read_kept_item(stream, offsets[index], lengths[index]), lengths[index])
        index += 1
    for offset, length in zip(offsets[index:], lengths[index:], strict=True):
        assembly.add(_DeferredItem(stream, offset, length), length)
    return assembly.finish(kept_lines.stats)


class _StaleKeptLines(Exception):
    """A line of `KeptLines` is not a kept item any more: the file changed under the same size
    and mtime. The transcript is then read from the whole file."""


def _read_kept_item(stream: BinaryIO, offset: int, length: int) -> dict[str, Any]:
    stream.seek(offset)
    data = stream.read(length)
    if len(data) != length:
        raise _StaleKeptLines
    obj = _LineParser().parse(_RawLine(offset, offset + length, data, data.endswith(b"\n")))
    item = None if obj is None else _kept_item(obj)
    if item is None:
        raise _StaleKeptLines
    return item


@dataclass(frozen=True, slots=True)
class _DeferredItem:
    """A tail item known by its place in the file, read only if the tail still holds it at the end."""

    stream: BinaryIO
    offset: int
    length: int

    def load(self) -> dict[str, Any]:
        return _read_kept_item(self.stream, self.offset, self.length)


def _loaded(item: dict[str, Any] | _DeferredItem) -> dict[str, Any]:
    return item.load() if isinstance(item, _DeferredItem) else item


class _Assembly:
    """One transcript's kept items in file order. Most sessions fit the budget whole: their items
    wait here, unserialised, and are redacted once as one text (`_whole_transcript`), and
    tokenised only if that text is longer in bytes than the budget. A token is at least one UTF-8
    byte, and an item's compact JSON is about as long as its line or shorter, so items whose lines
    total at most the budget in bytes almost always fit (`_whole_transcript` checks and hands the
    rare one that does not back); past that, they go through the head/tail builder."""

    def __init__(self, token_budget: int) -> None:
        self.token_budget = token_budget
        self.builder = _TranscriptBuilder(token_budget)
        self.pending: list[tuple[dict[str, Any], int]] | None = []
        self.pending_bytes = 0

    @property
    def reading_head(self) -> bool:
        """Whether the next item may still reach the head or the whole text: until then each item
        must be parsed; after, the builder bounds its tail by line lengths alone."""
        return self.pending is not None or self.builder.head_open

    def add(self, item: dict[str, Any] | _DeferredItem, length: int) -> None:
        if self.pending is None:
            self.builder.add(item, length)
            return
        self.pending.append((item, length))
        self.pending_bytes += length
        if self.pending_bytes > self.token_budget:
            for waiting, waiting_length in self.pending:
                self.builder.add(waiting, waiting_length)
            self.pending = None

    def finish(self, stats: LineStats) -> MemoryTranscript:
        if self.pending:
            whole = _whole_transcript([item for item, _ in self.pending], stats, self.token_budget)
            if whole is not None:
                return whole
            for waiting, length in self.pending:
                self.builder.add(waiting, length)
        return self.builder.finish(stats)


def _utf8_length(text: str) -> int:
    """Bytes of `text` in UTF-8 (it has a UTF-8 form: the reader made every line storable)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _whole_transcript(items: list[dict[str, Any]], stats: LineStats, token_budget: int) -> MemoryTranscript | None:
    """Every item, redacted as one JSON array text; None when that does not work out (the
    redaction broke the JSON, or the text is over the budget after all), and the caller then
    takes the item-by-item path. The text is tokenised only when its UTF-8 length does not
    already prove it within the budget."""
    text = "[" + ",".join(_dumps(item) for item in items) + "]"
    redacted = redact_secrets(text)
    if redacted != text:
        try:
            parsed = json.loads(redacted)
        except ValueError:
            return None
        if not isinstance(parsed, list) or len(parsed) != len(items) or not all(isinstance(entry, dict) for entry in parsed):
            return None
        items = parsed
    # Marked after redaction, which must see the text as it was (`spotlight_item`).
    items = [spotlight_item(item) for item in items]
    redacted = "[" + ",".join(_dumps(item) for item in items) + "]"
    byte_length = _utf8_length(redacted)
    counted = byte_length > token_budget
    tokens = count_tokens(redacted) if counted else byte_length
    if tokens > token_budget:
        return None
    return MemoryTranscript(
        items=items,
        text=redacted,
        tokens=tokens,
        truncated_tokens=0,
        original_tokens_estimate=tokens,
        stats=stats,
        tokens_counted=counted,
    )
