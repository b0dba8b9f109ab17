"""The discovery scan: what one rollout file says about its thread (spec section 10).

`scan_rollout(path, start_offset=...)` reads one rollout, streaming, through the line reader
(`rollout_reader`: bounded, tolerant, every line storable text), for the thread facts discovery
records (id, times, source, cwd, git, whether the session touched external context, the memory
citations it contains, the line counts by outcome). For a long rollout it also records where the
lines the phase-1 transcript keeps are (`transcript.KeptLines`): the same run's transcript of it
then parses its head and the lines left in its tail, not the whole file again. Read-only;
metadata that goes into the state DB as text is redacted here. Bad input never raises; only I/O
errors do (`OSError`).

Callers: `discovery` (thread rows) and the citation harvest (`read.harvest`), which resumes at
a previous scan's `end_offset`.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codex_memories.ingest.rollout_files import file_identity, open_rollout
from codex_memories.ingest.rollout_reader import LineParser, LineStats, line_envelope, read_lines
from codex_memories.ingest.transcript import KeptLines, is_harness_text, is_kept_item
from codex_memories.raw_memories import escape_metadata
from codex_memories.redact import redact_secrets

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
    has_session_meta: bool = True  # a `session_meta` line was read

    def unreadable_reason(self) -> str | None:
        """Why this file gives no session, or None: a file without a readable `session_meta`
        line (a NUL or other control byte in it, a first line past the line bound, compressed
        bytes, UTF-16) becomes a thread no run ever claims; said, with what its lines were."""
        if self.has_session_meta:
            return None
        stats = self.stats
        if not stats.lines_total:
            return "the file holds no line: no session_meta, nothing to read"
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(stats.skipped_by_reason.items()))
        read = f"{stats.lines_skipped} of {stats.lines_total} line(s) unreadable" + (f" ({reasons})" if reasons else "")
        return f"no readable session_meta line, so no session to extract: {read}"


# A rollout whose kept lines total less than this is read whole by its transcript, and its scan
# keeps no `KeptLines`: such a file is cheap to read again, and an index of every rollout a
# backfill reads would hold memory for nothing. Past it, the middle the budget drops is most of
# the file (the default budget of 150,000 tokens is about 600 KB of JSON).
KEPT_LINES_MIN_BYTES = 1 << 20


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
    """Thread metadata that goes into the state DB as text (a git remote URL can carry a token),
    on one line (`raw_memories.escape_metadata`): a cwd or branch with a newline must not become
    a line of its own in a prompt or a memory file."""
    text = _str_or_none(value)
    return escape_metadata(redact_secrets(text)) if text is not None else None


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
    # The title is metadata: one line, its breaks escaped (`raw_memories.escape_metadata`).
    return escape_metadata(redacted[:FIRST_USER_MESSAGE_MAX_CHARS])


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
    parser = LineParser(fast=True)
    state = _ScanState()
    end_offset = 0
    offsets, lengths = array("q"), array("q")
    kept_bytes = 0
    with open_rollout(path) as stream:
        before = file_identity(path, stream)
        for line in read_lines(stream):
            obj = parser.parse(line)
            if line.complete or obj is not None:
                end_offset = line.end
            if obj is None:
                continue
            if _scan_line(state, obj, line.offset, harvest=line.offset >= start_offset):
                offsets.append(line.offset)
                lengths.append(line.end - line.offset)
                kept_bytes += line.end - line.offset
        after = file_identity(path, stream)
    stats = parser.stats()
    kept_lines = None
    if before is not None and before == after and kept_bytes >= KEPT_LINES_MIN_BYTES:
        kept_lines = KeptLines(before[0], before[1], offsets, lengths, stats, kept_bytes)
    return _finish_scan(state, stats, end_offset, kept_lines)


def _scan_line(state: _ScanState, obj: dict[str, Any], offset: int, *, harvest: bool) -> bool:
    """Note one parsed line's thread facts; True when the transcript keeps the line (so the scan
    can record where it is without working out the envelope again)."""
    moment = _parse_timestamp(obj.get("timestamp"))
    if moment is not None and (state.last_activity_at is None or moment > state.last_activity_at):
        state.last_activity_at = moment
    line_type, payload = line_envelope(obj)
    if payload is None:
        return False
    _note_payload(state, line_type, payload, moment, offset, harvest)
    return line_type == "response_item" and is_kept_item(payload)


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
        has_session_meta=state.meta is not None,
    )
