"""Typed memory entries: a type, a weight, a reason and an expiry on one memory bullet.

Contract:
- An entry is one Markdown bullet line of a stage-1 output (`raw_memory`, `rollout_summary`) or
  of a consolidated file (`MEMORY.md`, `memory_summary.md`), in Codex's formats (spec 1.6, 3.1).
  Its metadata is a compact suffix, always the last thing on the line:
  `- "use httpx, not requests" {memory: type=constraint; weight=0.9; expires=2026-12-06; reason=...}`.
  A reader that knows nothing of types (Codex, a person, `grep`) still reads the bullet; the
  suffix is plain text it can ignore.
- `type` is one of `ENTRY_TYPES`; `weight` is in [0, 1] (how strongly the user meant it: a
  "must" or a correction weighs more than an "I'd rather"); `expires` is a UTC date: the entry
  holds through that day and is expired from 00:00 UTC of the next; `turn` (optional) is the
  provenance of a statement the offline extractor kept: which user turn of the session said it
  (1 is the first message the user typed); `reason` is free text (the "because ..." kept with the
  rule), last so it may hold `;`, never braces.
- `split_entry(line)` -> (bullet text without the suffix, `EntryMeta` or None); `with_meta` puts a
  suffix on a text; `drop_expired_lines(text, now)` removes every bullet line whose entry expired
  before `now` and says which (the entry-expiry forgetting route uses it on files and DB rows
  alike, so both lose exactly the same lines).
- `apply_entries(raw_memory, entries)` merges the model's structured `memory_entries` into its
  `raw_memory`: a bullet that holds an entry's text gets the suffix, an entry no bullet holds is
  added under a `Preference signals:` (constraint, preference) or `Reusable knowledge:` (fact,
  command) section at the end.

Pure string logic, no I/O. Deterministic: the same input gives the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

ENTRY_TYPES = ("constraint", "preference", "fact", "command")
SUFFIX_TAG = "{memory:"
MAX_REASON_CHARS = 200

_SUFFIX = re.compile(r"\s*\{memory:\s*([^{}\n]*)\}\s*$")
_BULLET = re.compile(r"^(\s*(?:[-*]|\[\d+\])\s+)(.*)$")
_EXPIRES = re.compile(r"expires=(\d{4}-\d{2}-\d{2})")
_NORMALISE = re.compile(r"[\s\"'`“”‘’.,;:!?。，；：！？]+")


@dataclass(frozen=True)
class EntryMeta:
    type: str
    weight: float
    reason: str = ""
    expires: date | None = None
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {self.type!r}; expected one of {', '.join(ENTRY_TYPES)}")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"entry weight {self.weight} is outside [0, 1]")
        if self.turn is not None and self.turn < 1:
            raise ValueError(f"entry turn {self.turn} is not a user turn (they count from 1)")

    def expired(self, now: datetime) -> bool:
        """Whether the entry no longer holds at `now` (timezone-aware)."""
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        return self.expires is not None and now >= expiry_instant(self.expires)

    def render(self) -> str:
        parts = [f"type={self.type}", f"weight={self.weight:.1f}"]
        if self.expires is not None:
            parts.append(f"expires={self.expires.isoformat()}")
        if self.turn is not None:
            parts.append(f"turn={self.turn}")
        reason = clean_reason(self.reason)
        if reason:
            parts.append(f"reason={reason}")
        return f"{SUFFIX_TAG} {'; '.join(parts)}}}"


@dataclass(frozen=True)
class ExpiredEntry:
    """A bullet line `drop_expired_lines` removed: its text (no suffix) and its metadata."""

    text: str
    meta: EntryMeta


def expiry_instant(expires: date) -> datetime:
    """The first instant an entry that holds through `expires` no longer holds."""
    return datetime.combine(expires + timedelta(days=1), time.min, tzinfo=UTC)


def clean_reason(reason: str) -> str:
    """One line, no braces (they would end the suffix), clipped."""
    one_line = " ".join(reason.replace("{", "(").replace("}", ")").split()).strip(" .;,")
    return one_line if len(one_line) <= MAX_REASON_CHARS else one_line[: MAX_REASON_CHARS - 3].rstrip() + "..."


def with_meta(text: str, meta: EntryMeta | None) -> str:
    """`text` with `meta`'s suffix (any suffix it had is replaced); `text` alone when meta is None."""
    bare, _ = split_entry(text)
    return f"{bare} {meta.render()}" if meta is not None else bare


def split_entry(line: str) -> tuple[str, EntryMeta | None]:
    """The line without its suffix, and the suffix's metadata (None: no valid suffix).

    A suffix that does not parse (unknown type, bad weight or date) is kept as text: a reader
    sees what was written, and nothing is read into it."""
    match = _SUFFIX.search(line)
    if not match:
        return line, None
    meta = parse_meta(match.group(1))
    if meta is None:
        return line, None
    return line[: match.start()].rstrip(), meta


def parse_meta(body: str) -> EntryMeta | None:
    head, _, reason = body.partition("reason=")
    fields: dict[str, str] = {}
    for part in head.split(";"):
        key, separator, value = part.strip().partition("=")
        if separator:
            fields[key.strip()] = value.strip()
    try:
        return EntryMeta(
            type=fields.get("type", ""),
            weight=float(fields.get("weight", "")),
            reason=reason.strip(),
            expires=date.fromisoformat(fields["expires"]) if fields.get("expires") else None,
            turn=int(fields["turn"]) if fields.get("turn") else None,
        )
    except ValueError:
        return None


def drop_expired_lines(text: str, now: datetime) -> tuple[str, list[ExpiredEntry]]:
    """`text` without the bullet lines whose entry expired before `now`, and those entries."""
    kept: list[str] = []
    expired: list[ExpiredEntry] = []
    for line in text.split("\n"):
        bullet = _BULLET.match(line) if SUFFIX_TAG in line else None
        if bullet:
            bare, meta = split_entry(bullet.group(2))
            if meta is not None and meta.expired(now):
                expired.append(ExpiredEntry(text=bare, meta=meta))
                continue
        kept.append(line)
    return "\n".join(kept), expired


def has_expired_entry(text: str, now: datetime) -> bool:
    """A cheap look before `drop_expired_lines`: phase 2 asks on every run, most texts carry no
    expiry at all, and most dates found have not passed, so only a passed date reads lines."""
    if "expires=" not in text:
        return False
    for day in set(_EXPIRES.findall(text)):
        try:
            passed = now >= expiry_instant(date.fromisoformat(day))
        except ValueError:
            continue  # not a date: the suffix does not parse and never expires
        if passed:
            return bool(drop_expired_lines(text, now)[1])
    return False


def next_expiry(text: str) -> datetime | None:
    """The first instant any dated entry in `text` expires (None: no dated entry): when a folder
    that is settled now stops being settled."""
    instants = []
    for day in set(_EXPIRES.findall(text)):
        try:
            instants.append(expiry_instant(date.fromisoformat(day)))
        except ValueError:
            continue  # not a date: that suffix never expires
    return min(instants, default=None)


@dataclass(frozen=True)
class TypedEntry:
    """One entry as the model reports it in `memory_entries` (already validated)."""

    text: str
    meta: EntryMeta


_SECTION_FOR_TYPE = {
    "constraint": "Preference signals",
    "preference": "Preference signals",
    "fact": "Reusable knowledge",
    "command": "Reusable knowledge",
}


def apply_entries(raw_memory: str, entries: list[TypedEntry]) -> str:
    """Put each entry's suffix on the bullet that holds its text, or add the entry as a bullet."""
    lines = raw_memory.rstrip("\n").split("\n")
    unmatched: list[TypedEntry] = []
    for entry in entries:
        wanted = normalise(entry.text)
        if not wanted:
            continue
        index = next(
            (
                position
                for position, line in enumerate(lines)
                if (bullet := _BULLET.match(line)) and _holds(normalise(split_entry(bullet.group(2))[0]), wanted)
            ),
            None,
        )
        if index is None:
            unmatched.append(entry)
            continue
        bullet = _BULLET.match(lines[index])
        assert bullet is not None  # the search above matched this line
        lines[index] = bullet.group(1) + with_meta(bullet.group(2), entry.meta)
    for section in dict.fromkeys(_SECTION_FOR_TYPE.values()):
        added = [entry for entry in unmatched if _SECTION_FOR_TYPE[entry.meta.type] == section]
        if added:
            lines += ["", f"{section}:", *[f"- {with_meta(' '.join(entry.text.split()), entry.meta)}" for entry in added]]
    return "\n".join(lines) + "\n"


def normalise(text: str) -> str:
    """Case, quotes, spacing and punctuation folded away: how two wordings of one entry compare."""
    return _NORMALISE.sub(" ", text.casefold()).strip()


# A word's first letters stand for its forms in the Latin and Cyrillic languages ("image" /
# "images", "format" / "formatting" / "Formatierung"): how a word of one statement is matched in
# another that words it differently.
STEM_LETTERS = 5


def word_stem(word: str) -> str:
    return word[:STEM_LETTERS]


def _holds(bullet: str, wanted: str) -> bool:
    return bool(bullet) and (wanted in bullet or bullet in wanted)
