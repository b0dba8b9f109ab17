"""The phase-1 transcript: what the stage-1 model reads of one rollout (spec 1.5, 10.8).

Lines come from the line reader (`rollout_reader`: streaming, bounded, tolerant, every line
storable text); only the response items the model saw are kept (`is_kept_item`, the one drop
rule, which the discovery scan uses too when it records where the kept lines are: `KeptLines`).

Two consumers:
* Phase 1 calls `build_memory_transcript`, which strips injected harness text, clears
  `encrypted_content`, redacts secrets, spotlights each item (its origin first, every line of
  text the user did not write datamarked: `spotlight_item`) and fits the token budget by keeping
  the head and the tail of the conversation. Memory stays bounded by the budget, not by the file:
  a 500 MB rollout is streamed, not loaded.
* Phase 2's provenance check calls `iter_kept_items`: the same kept items, streamed, neither
  redacted nor budgeted (it compares memory lines with them and keeps none of their text).

Read-only; bad input never raises; only I/O errors do (`OSError`).
"""

from __future__ import annotations

import json
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from codex_memories.ingest.rollout_files import file_identity, open_rollout
from codex_memories.ingest.rollout_reader import (
    KEPT_RESPONSE_ITEM_TYPES,
    LineParser,
    LineStats,
    RawLine,
    line_envelope,
    read_lines,
)
from codex_memories.redact import REDACTED, redact_secrets
from codex_memories.redact.names import name_strength
from codex_memories.tokens import count_tokens, marker_line, truncate_middle

DROPPED_MESSAGE_ROLES = frozenset({"developer", "system"})

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


def sanitize_response_item(item: dict[str, Any]) -> dict[str, Any] | None:
    """The item as phase 1 sends it, or None when phase 1 drops it (spec 1.5 step 2-3, 10.8).

    Not redacted: redaction runs on the serialised item (`build_memory_transcript`).
    """
    if not is_kept_item(item):
        return None
    kept = dict(item)
    kept.pop("encrypted_content", None)
    if kept.get("type") == "message" and kept.get("role") == "user":
        kept.pop("status", None)
        content = kept.get("content")
        if isinstance(content, list):
            kept["content"] = [part for part in content if not _is_injected_instructions(part)]
    return kept


def is_kept_item(item: dict[str, Any]) -> bool:
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
    line_type, payload = line_envelope(obj)
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
        if may_use_kept_lines and file_identity(path, stream) == (kept_lines.size, kept_lines.mtime_ns):
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
    parser = LineParser(fast=True)  # only strings are read: orjson's floats for huge ints do not matter
    with open_rollout(path) as stream:
        for line in read_lines(stream):
            obj = parser.parse(line)
            item = None if obj is None else _kept_item(obj)
            if item is not None:
                yield item


def _transcript_of_stream(stream: BinaryIO, token_budget: int) -> MemoryTranscript:
    parser = LineParser()
    assembly = _Assembly(token_budget)
    for line in read_lines(stream):
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
    obj = LineParser().parse(RawLine(offset, offset + length, data, data.endswith(b"\n")))
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
