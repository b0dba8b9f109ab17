"""Parse the memory citation a model appends to its final reply (spec 5.2, 5.4).

Contract:
- Input: the text of one assistant message (or just a citation block). Pure: no I/O.
- `find_citation_blocks(text)` returns every complete `<oai-mem-citation>…</oai-mem-citation>`
  block, tags included, in order of appearance.
- `parse_citation_block(text)` returns a `CitationParse`:
  * `entries`: one `CitationEntry` per well-formed line of `<citation_entries>`. A line is split on
    its last `|note=[` (the note may be absent), the part before it on its last `:` into the path
    and a `start-end` line range (a single `N` means `N-N`).
  * `rollout_ids`: the ids of `<rollout_ids>` (or the legacy `<thread_ids>`), trimmed, lower-cased,
    de-duplicated in first-seen order, only canonical hyphenated UUIDs kept.
  * `problems`: one human sentence per thing that was wrong. A bad entry or a bad id is dropped
    and reported, the rest of the block still counts. A block that is structurally unusable
    (unclosed tag, no ids section) yields no entries and no ids, so it changes nothing.
  * `found`: whether the text contained any citation at all (a block or a legacy line).
- The legacy trailing `Memory used: `file:a-b`` line is understood when there is no block; it
  names files only, so it never yields rollout ids.
- `record_citation_usage(recorder, text)` parses `text` and, when it cites rollout ids, passes them
  to `recorder.record_stage1_output_usage` (the state store); the only side effect in this module.

The ids feed `MemoryStore.record_stage1_output_usage`, the only usage signal phase-2 ranking has
(spec 5.4), so a parse that is unsure must return no ids rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

CITATION_OPEN_TAG = "<oai-mem-citation>"
CITATION_CLOSE_TAG = "</oai-mem-citation>"
ENTRIES_TAG = "citation_entries"
ROLLOUT_IDS_TAG = "rollout_ids"
LEGACY_THREAD_IDS_TAG = "thread_ids"
NOTE_SEPARATOR = "|note=["
LEGACY_MEMORY_USED_PREFIX = "Memory used:"

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LINE_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_LEGACY_LINE = re.compile(r"^[ \t>*_-]*Memory used:[ \t]*(?P<rest>.*)$", re.MULTILINE)
_BACKTICKED = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class CitationEntry:
    path: str
    start_line: int
    end_line: int
    note: str


@dataclass(frozen=True)
class CitationParse:
    entries: list[CitationEntry] = field(default_factory=list)
    rollout_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    found: bool = False


class UsageRecorder(Protocol):
    """What `record_citation_usage` needs from the state store."""

    def record_stage1_output_usage(self, thread_ids: list[str]) -> int: ...


@dataclass(frozen=True)
class CitationUsage:
    citation: CitationParse
    rows_updated: int


def record_citation_usage(recorder: UsageRecorder, text: str) -> CitationUsage:
    """Count one use of every memory `text` cites; a message without usable ids touches nothing."""
    citation = parse_citation_block(text)
    if not citation.rollout_ids:
        return CitationUsage(citation=citation, rows_updated=0)
    return CitationUsage(citation=citation, rows_updated=recorder.record_stage1_output_usage(citation.rollout_ids))


def find_citation_blocks(text: str) -> list[str]:
    """Every complete citation block in `text`, tags included; unclosed blocks are left out."""
    blocks, _problems = _scan_blocks(text)
    return blocks


def parse_citation_block(text: str) -> CitationParse:
    """Parse the citation of one message; see the module docstring for the rules."""
    if CITATION_OPEN_TAG in text or CITATION_CLOSE_TAG in text:
        blocks, problems = _scan_blocks(text)
        if problems:
            return CitationParse(problems=problems, found=True)
        return _merge([_parse_block_body(_block_body(block)) for block in blocks])
    if _has_section(text, ENTRIES_TAG) or _has_section(text, ROLLOUT_IDS_TAG) or _has_section(text, LEGACY_THREAD_IDS_TAG):
        # A bare block body (the caller already cut the outer tags off).
        return _parse_block_body(text)
    legacy_lines = [match.group("rest") for match in _LEGACY_LINE.finditer(text)]
    if legacy_lines:
        return _parse_legacy_line(legacy_lines[-1])
    return CitationParse()


def parse_citation_entry(line: str) -> CitationEntry:
    """One `path:start-end|note=[…]` line; raises ValueError saying what is wrong."""
    location, separator, note_part = line.strip().rpartition(NOTE_SEPARATOR)
    if not separator:
        location, note_part = line.strip(), ""
    note = note_part[:-1] if note_part.endswith("]") else note_part
    path, colon, line_range = location.rpartition(":")
    if not colon or not path.strip():
        raise ValueError(f"citation entry {line.strip()!r} has no `path:start-end` location")
    range_match = _LINE_RANGE.fullmatch(line_range.strip())
    if range_match is None:
        raise ValueError(f"citation entry {line.strip()!r} has a bad line range {line_range.strip()!r}")
    start_line = int(range_match.group(1))
    end_line = int(range_match.group(2) or start_line)
    if start_line < 1 or end_line < start_line:
        raise ValueError(f"citation entry {line.strip()!r} has a bad line range {line_range.strip()!r}")
    return CitationEntry(path=path.strip(), start_line=start_line, end_line=end_line, note=note.strip())


def _scan_blocks(text: str) -> tuple[list[str], list[str]]:
    blocks: list[str] = []
    problems: list[str] = []
    position = 0
    while True:
        open_at = text.find(CITATION_OPEN_TAG, position)
        stray_close = text.find(CITATION_CLOSE_TAG, position)
        if stray_close != -1 and (open_at == -1 or stray_close < open_at):
            problems.append(f"{CITATION_CLOSE_TAG} without a matching {CITATION_OPEN_TAG}")
            position = stray_close + len(CITATION_CLOSE_TAG)
            continue
        if open_at == -1:
            return blocks, problems
        body_at = open_at + len(CITATION_OPEN_TAG)
        close_at = text.find(CITATION_CLOSE_TAG, body_at)
        next_open = text.find(CITATION_OPEN_TAG, body_at)
        if close_at == -1 or (next_open != -1 and next_open < close_at):
            problems.append(f"unclosed {CITATION_OPEN_TAG} tag")
            if close_at == -1:
                return blocks, problems
            position = next_open
            continue
        end = close_at + len(CITATION_CLOSE_TAG)
        blocks.append(text[open_at:end])
        position = end


def _block_body(block: str) -> str:
    return block[len(CITATION_OPEN_TAG) : -len(CITATION_CLOSE_TAG)]


def _has_section(text: str, tag: str) -> bool:
    return f"<{tag}>" in text or f"</{tag}>" in text


def _section(text: str, tag: str) -> tuple[str | None, str | None]:
    """(content, problem): content is None when the section is absent or broken."""
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    open_at = text.find(open_tag)
    close_at = text.find(close_tag)
    if open_at == -1 and close_at == -1:
        return None, None
    if open_at == -1 or close_at == -1 or close_at < open_at:
        return None, f"unclosed or unbalanced <{tag}> section"
    if text.count(open_tag) > 1:
        return None, f"more than one <{tag}> section"
    return text[open_at + len(open_tag) : close_at], None


def _parse_block_body(body: str) -> CitationParse:
    problems: list[str] = []
    entries_text, entries_problem = _section(body, ENTRIES_TAG)
    ids_text, ids_problem = _section(body, ROLLOUT_IDS_TAG)
    ids_tag = ROLLOUT_IDS_TAG
    if ids_text is None and ids_problem is None:
        ids_text, ids_problem = _section(body, LEGACY_THREAD_IDS_TAG)
        ids_tag = LEGACY_THREAD_IDS_TAG
    structural = [problem for problem in (entries_problem, ids_problem) if problem]
    if ids_text is None and ids_problem is None:
        structural.append(f"no <{ROLLOUT_IDS_TAG}> (or <{LEGACY_THREAD_IDS_TAG}>) section")
    if structural:
        return CitationParse(problems=structural, found=True)

    entries: list[CitationEntry] = []
    for line in (entries_text or "").splitlines():
        if not line.strip():
            continue
        try:
            entries.append(parse_citation_entry(line))
        except ValueError as error:
            problems.append(str(error))

    rollout_ids: list[str] = []
    for raw_id in (ids_text or "").splitlines():
        candidate = raw_id.strip()
        if not candidate:
            continue
        if not _UUID.fullmatch(candidate):
            problems.append(f"<{ids_tag}> value {candidate!r} is not a UUID")
            continue
        normalized = candidate.lower()
        if normalized not in rollout_ids:
            rollout_ids.append(normalized)
    return CitationParse(entries=entries, rollout_ids=rollout_ids, problems=problems, found=True)


def _parse_legacy_line(rest: str) -> CitationParse:
    items = _BACKTICKED.findall(rest) or [item for item in rest.split(",") if item.strip()]
    entries: list[CitationEntry] = []
    problems: list[str] = []
    for item in items:
        try:
            entries.append(parse_citation_entry(item))
        except ValueError as error:
            problems.append(str(error))
    if not items:
        problems.append(f"`{LEGACY_MEMORY_USED_PREFIX}` line names no files")
    return CitationParse(entries=entries, problems=problems, found=True)


def _merge(parses: list[CitationParse]) -> CitationParse:
    entries: list[CitationEntry] = []
    rollout_ids: list[str] = []
    problems: list[str] = []
    for parse in parses:
        entries.extend(parse.entries)
        rollout_ids.extend(rollout_id for rollout_id in parse.rollout_ids if rollout_id not in rollout_ids)
        problems.extend(parse.problems)
    return CitationParse(entries=entries, rollout_ids=rollout_ids, problems=problems, found=bool(parses))
