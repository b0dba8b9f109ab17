"""Conflicts between memory entries: the same subject, opposite instructions; the newest wins.

Contract:
- `find_conflicts(entries)` takes `DatedEntry`s (an entry's text, where it came from and when)
  and returns one `Conflict` per pair that contradicts, with the winner (the newer entry: later
  `updated_at`, then later position) and the loser. Each loser is named once, against the newest
  entry it contradicts. Entries are compared only within one `group` (a working folder): two
  projects may rightly follow opposite rules.
- Two entries contradict when one asks for what the other forbids ("use requests" against "use
  httpx, not requests"; 用 tab against 不要用 tab), when both ask for different members of one
  family of alternatives ("use tabs" against "use spaces"; pnpm against npm), or when both set
  one quantity to different values ("keep the line length at 100" against "... at 88").
- The heuristic consolidator (`consolidate.heuristic.find_input_conflicts`) builds the entries
  from `raw_memories.md` as it groups them (per cwd), and phase 2 lists the same conflicts in its
  run artifact whichever consolidator runs.

Pure: regular expressions over text, no I/O. Deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from codex_memories.typed_entries import split_entry

# Alternatives a project picks one of: asking for two of them is a contradiction.
_FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({"tabs", "spaces"}),
    frozenset({"requests", "httpx", "aiohttp", "urllib3"}),
    frozenset({"npm", "yarn", "pnpm", "bun"}),
    frozenset({"pip", "poetry", "uv", "pipenv", "conda", "pdm"}),
    frozenset({"pytest", "unittest", "nose"}),
    frozenset({"jest", "vitest", "mocha"}),
    frozenset({"black", "yapf", "autopep8"}),
    frozenset({"rebase", "merge"}),
    frozenset({"single-quotes", "double-quotes"}),
    frozenset({"camelcase", "snake_case"}),
)
_SYNONYMS = {
    "tab": "tabs", "制表符": "tabs", "空格": "spaces", "space": "spaces",
    "single": "single-quotes", "double": "double-quotes", "merges": "merge", "rebasing": "rebase",
}
_STOPWORDS = {"the", "a", "an", "our", "my", "your", "only", "always", "just", "it", "them", "this", "that"}

_WORD = r"`?([\w.+#/-]+|[\u4e00-\u9fff]{1,4})`?"
_NEGATED = (
    re.compile(r"\b(?:don'?t|do not|never|stop|avoid|no longer)\s+(?:use|using|add|call)?\s*(?:the\s+|a\s+|an\s+)?" + _WORD, re.I),
    re.compile(r",\s*not\s+(?:the\s+|a\s+)?" + _WORD, re.I),
    re.compile(r"\b(?:instead of|rather than|over)\s+(?:the\s+|a\s+)?" + _WORD, re.I),
    re.compile(r"(?:不要用|不要使用|别用|禁止使用|禁止用|不用|而不是|不要)\s*" + _WORD),
)
_ASKED = (
    re.compile(r"\b(?:use|using|prefer|switch to|stick to|stick with|indent with)\s+(?:the\s+|a\s+|an\s+|only\s+)?" + _WORD, re.I),
    re.compile(r"(?:统一用|统一使用|优先用|优先使用|必须用|都用|改用|用)\s*" + _WORD),
)
_SETTING = (
    re.compile(r"\b(?:keep|set|cap|limit)\s+(?:the\s+|each\s+|every\s+)?([a-z][\w -]{1,40}?)\s+(?:at|to|under|below)\s+([\w.%]+)", re.I),
    re.compile(r"([\u4e00-\u9fff\w]{1,12}?)\s*(?:保持在|设为|不超过|控制在)\s*([\w.%]+)"),
)


@dataclass(frozen=True)
class DatedEntry:
    text: str
    group: str
    source: str
    updated_at: str
    position: int

    @property
    def order(self) -> tuple[datetime, int]:
        return parse_time(self.updated_at), self.position


@dataclass(frozen=True)
class Conflict:
    subject: str
    winner: DatedEntry
    loser: DatedEntry


@dataclass(frozen=True)
class _Claims:
    asked: frozenset[str]
    forbidden: frozenset[str]
    settings: dict[str, str]


def find_conflicts(entries: list[DatedEntry]) -> list[Conflict]:
    """Every contradiction, the newer entry winning (see the module docstring)."""
    conflicts: list[Conflict] = []
    by_group: dict[str, list[DatedEntry]] = {}
    for entry in entries:
        by_group.setdefault(entry.group, []).append(entry)
    for group in sorted(by_group):
        newest_first = sorted(by_group[group], key=lambda entry: entry.order, reverse=True)
        claims = [_claims(entry.text) for entry in newest_first]
        lost: set[int] = set()
        for newer_index, newer in enumerate(newest_first):
            if newer_index in lost:
                continue  # an overruled entry overrules nothing
            for older_index in range(newer_index + 1, len(newest_first)):
                if older_index in lost:
                    continue
                subject = _contradiction(claims[newer_index], claims[older_index])
                if subject is not None:
                    lost.add(older_index)
                    conflicts.append(Conflict(subject=subject, winner=newer, loser=newest_first[older_index]))
    return conflicts


def losers(conflicts: list[Conflict]) -> set[tuple[str, str, int]]:
    """The (group, source, position) of every entry that lost, for dropping it."""
    return {(conflict.loser.group, conflict.loser.source, conflict.loser.position) for conflict in conflicts}


def _contradiction(newer: _Claims, older: _Claims) -> str | None:
    for target in sorted(newer.forbidden & older.asked):
        return target
    for target in sorted(newer.asked & older.forbidden):
        return target
    for family in _FAMILIES:
        mine, theirs = newer.asked & family, older.asked & family
        if mine and theirs and not (mine & theirs) and not (theirs & newer.asked):
            return " vs ".join(sorted(mine | theirs))
    for subject in sorted(newer.settings.keys() & older.settings.keys()):
        if newer.settings[subject] != older.settings[subject]:
            return subject
    return None


def _claims(text: str) -> _Claims:
    bare = split_entry(text)[0].strip().strip("\"'“”")
    forbidden = {_target(match.group(1)) for pattern in _NEGATED for match in pattern.finditer(bare)}
    # What a negation names is not also asked for ("use httpx, not requests" asks for httpx only).
    negated_spans = [match.span(1) for pattern in _NEGATED for match in pattern.finditer(bare)]
    asked = {
        _target(match.group(1))
        for pattern in _ASKED
        for match in pattern.finditer(bare)
        if not any(start <= match.start(1) < end for start, end in negated_spans)
        and not _negated_before(bare, match.start())
    }
    settings = {
        " ".join(match.group(1).lower().split()): match.group(2).lower()
        for pattern in _SETTING
        for match in pattern.finditer(bare)
    }
    return _Claims(
        asked=frozenset(asked - forbidden - {""}),
        forbidden=frozenset(forbidden - {""}),
        settings=settings,
    )


def _negated_before(text: str, start: int) -> bool:
    before = text[max(0, start - 12) : start].lower()
    return bool(re.search(r"(?:don'?t|do not|never|stop|avoid|not)\s*$|(?:不要|别|禁止|不)\s*$", before))


def _target(word: str) -> str:
    cleaned = word.strip("`'\".,;:()").lower()
    if cleaned in _STOPWORDS:
        return ""
    return _SYNONYMS.get(cleaned, cleaned)


def parse_time(value: str) -> datetime:
    """An RFC 3339 time (naive means UTC); the epoch when it does not parse, so it sorts oldest."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return datetime(1970, 1, 1, tzinfo=UTC)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
