"""The line reader: one rollout's JSONL lines become JSON objects of storable text.

Inputs are the append-only JSONL session files Codex writes (spec section 10), as a binary stream
opened by `rollout_files.open_rollout`. Everything here is streaming and tolerant:

* `read_lines` reads one line at a time with its byte offsets; nothing holds a whole file in
  memory. A line longer than `MAX_LINE_BYTES` is skipped without being held either.
* `LineParser.parse` makes every line storable text here, once, for everything downstream (the
  state DB, the prompts, the memory folder): bytes that are not UTF-8 are decoded as U+FFFD, and
  a lone surrogate or a NUL from a `\\u` escape is replaced by U+FFFD (`storable.storable_json`).
  Such a line is used, and counted in `lines_repaired` by reason (`invalid_utf8`,
  `lone_surrogate`, `nul_character`).
* A line that cannot be used is skipped and counted by reason (`invalid_json`,
  `not_an_object`, `partial_last_line` for an unterminated last line that does not parse,
  `line_too_long`, and `type_not_a_string`, `payload_not_an_object`, `payload_type_not_a_string`,
  `role_not_a_string` for a line whose envelope `type`, `payload`, `payload.type` or message
  `role` is some other JSON value, `too_deeply_nested` beyond `MAX_JSON_DEPTH`); blank lines are
  ignored, and every other line is counted as parsed or skipped (`lines_parsed + lines_skipped ==
  lines_total`, `LineParser.stats`). Unknown line types and unknown fields are ignored, so newer
  Codex builds (world state, token-usage records, ...) do not break us; a field of an unexpected
  JSON type is read as absent. Bad input never raises; only I/O errors do (`OSError`;
  `rollout_files.rollout_failure` names the outcome): the caller turns that into one named
  failure for that file.
* `line_envelope` gives a parsed line's type and payload, legacy bare lines included.

Readers: the discovery scan (`rollout_scan`) and the phase-1 transcript (`transcript`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from codex_memories.storable import REPAIR_INVALID_UTF8, might_need_repair, storable_json

# A single JSONL line larger than this is skipped (counted as `line_too_long`) instead of being
# parsed: one pathological tool output must not decide the memory use of the whole job.
MAX_LINE_BYTES = 64 * 1024 * 1024
# A line nested deeper than this is skipped (`too_deeply_nested`): Python's JSON decoder accepts
# nesting its encoder (and every recursive walk here) cannot handle. Codex lines nest < 20 deep.
MAX_JSON_DEPTH = 200
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
# Lines written by Codex before the `{timestamp, type, payload}` envelope (2025 builds) are bare
# response items; we accept them too.
_LEGACY_RESPONSE_ITEM_TYPES = KEPT_RESPONSE_ITEM_TYPES | {"reasoning"}


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


@dataclass(slots=True)
class RawLine:
    offset: int  # byte offset where the line starts
    end: int  # byte offset just past the line
    data: bytes | None  # None when the line was too long to keep
    complete: bool  # ends with a newline


def read_lines(stream: BinaryIO, *, start_offset: int = 0) -> Iterator[RawLine]:
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
            yield RawLine(start, offset, None, complete)
            continue
        yield RawLine(start, offset, chunk, chunk.endswith(b"\n"))


# What `LineParser(fast=True)` gets back when orjson refused a line.
_REFUSED = object()


class LineParser:
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

    def parse(self, line: RawLine) -> dict[str, Any] | None:
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


def line_envelope(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
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
