"""The edit a `forget --match` makes, on text and on names (pure: no I/O, no DB).

One `Needle` is the text to forget. The same edit applies to every copy of the memory that holds
it (the live memory folder, its git baseline, the stage-1 outputs phase 2 renders from), so the
copies stay equal to one another and the next phase 2 finds nothing to re-create.

Contract:
- Lines: `Needle.in_line(line)` is the one definition of "a memory line holding the text": the
  text as a case-insensitive substring (`casefold`), or a word of the line (split at white space)
  that carries it as a name does (below), so `project-falcon` and `ProjectFalcon` go with
  `Project Falcon`.
- Names: slugs and file names are derived forms of text (`Falcon launch!` becomes
  `falcon-launch` or `falcon_launch`), so `Needle.in_name(name)` compares the letters and digits
  only, case-folded (`Project Falcon` is in `project_falcon_fix`). A needle with fewer than
  `MIN_NAME_MATCH_CHARACTERS` letters and digits matches no name. `Needle.neutral_name(name)`
  removes every word (run of letters and digits) that overlaps an occurrence, keeping the other
  words and their separators (`2025-01-02T03-04-05-falcon-launch` becomes
  `2025-01-02T03-04-05-launch`); "" when no word is left. The result never holds the needle.
- `edit_lines(text, needle, references)`: first every reference to a renamed file is rewritten
  (`references`: old name -> new name, longest first, so a renamed file's mentions stay and point
  at the new name), then every line holding the needle goes, then every Markdown heading whose
  section lost a line and has nothing left but blank lines (a `##` whose bullets all went), with
  those blank lines. Where a removal leaves two blank lines together, one goes. Headings inside
  fenced code are not headings. Returns a `LineEdit`: the new text, the removed lines and
  emptied headings with their 1-based numbers and original text (for the dry run), and how many
  references changed. Line endings are kept as they were.
- Record lines stay (`is_record_line`): the lines that say where a memory comes from and which
  project it belongs to (`cwd:`, `rollout_path:`, `scope:`, `project_key:`, `applies_to:`, ...,
  a `# Task Group:` or `## Thread` heading, a heading with a `project=` marker). Removing one would move the
  memories under it to another scope (a project's rules shown in every project), and phase 2
  writes them again from the session's record anyway. They are returned as `LineEdit.kept`, so
  the dry run says which lines keep the text and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MIN_NAME_MATCH_CHARACTERS = 3

# A word of a name: a run of letters and digits (any script), never `_` or `-`.
_WORD = re.compile(r"([^\W_]+)")
_NOT_LETTERS = re.compile(r"[\W_]+")
_RECORD_FIELD = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:cwd|rollout_path|git_branch|project_key|scope|applies_to|thread_id|updated_at|rollout_summary_file)\s*:",
    re.IGNORECASE,
)
_SCOPE_HEADING = re.compile(r"^#{1,6}\s+(?:Task Group:|Thread `|.*(?<![\w-])project=)", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})(?:\s|$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def name_letters(name: str) -> str:
    """The letters and digits of `name`, case-folded: what name matching compares."""
    return _NOT_LETTERS.sub("", name.casefold())


class TextTest:
    """What "a line or a name holds the text" means, over three primitives a subclass gives: the
    text's occurrence in a case-folded line, and the starts and length of its occurrences in a
    name's letters. `Needle` knows the text; `forget.ledger.ForgottenText` knows only its keyed
    hashes (the folder's ledger must not hold the text), and both edit alike through here."""

    def _occurs_in(self, folded: str) -> bool:
        raise NotImplementedError

    @property
    def _name_length(self) -> int:
        raise NotImplementedError

    def _name_starts(self, letters: str) -> list[int]:
        raise NotImplementedError

    def _name_occurs_in(self, letters: str) -> bool:
        return self._name_length >= MIN_NAME_MATCH_CHARACTERS and bool(self._name_starts(letters))

    def in_line(self, line: str) -> bool:
        """The line holds the text as written, or a word of it (split at white space) carries it
        as a name does (`project-falcon`, `ProjectFalcon` for `Project Falcon`)."""
        folded = line.casefold()
        if self._occurs_in(folded):
            return True
        if self._name_length < MIN_NAME_MATCH_CHARACTERS or not self._name_occurs_in(name_letters(folded)):
            return False
        return any(self._name_occurs_in(name_letters(word)) for word in folded.split())

    def may_hold(self, text: str) -> bool:
        """A quick test over a whole text: False when no line of it can hold the needle."""
        folded = text.casefold()
        return self._occurs_in(folded) or self._name_occurs_in(name_letters(folded))

    def in_name(self, name: str | None) -> bool:
        return bool(name) and self._name_occurs_in(name_letters(name or ""))

    def neutral_name(self, name: str) -> str:
        """`name` without the words that carry the needle (see the module contract)."""
        while self.in_name(name):
            name = _without_words(name, self._words_to_drop(name))
        return name

    def _words_to_drop(self, name: str) -> set[int]:
        parts = _WORD.split(name)  # separator, word, separator, word, ..., separator
        spans: list[tuple[int, int, int]] = []  # (part index, start, end) in the folded letters
        position = 0
        for index in range(1, len(parts), 2):
            folded = name_letters(parts[index])
            spans.append((index, position, position + len(folded)))
            position += len(folded)
        letters = "".join(name_letters(parts[index]) for index in range(1, len(parts), 2))
        drop: set[int] = set()
        for start in self._name_starts(letters):
            end = start + self._name_length
            drop.update(index for index, first, last in spans if first < end and last > start)
        return drop


@dataclass(frozen=True)
class Needle(TextTest):
    """The text to forget (already checked: one line, long enough)."""

    text: str

    @property
    def line_key(self) -> str:
        return self.text.casefold()

    @property
    def name_key(self) -> str:
        return name_letters(self.text)

    def _occurs_in(self, folded: str) -> bool:
        return self.line_key in folded

    @property
    def _name_length(self) -> int:
        return len(self.name_key)

    def _name_starts(self, letters: str) -> list[int]:
        key = self.name_key
        if not key:
            return []
        starts = []
        start = letters.find(key)
        while start >= 0:
            starts.append(start)
            start = letters.find(key, start + 1)
        return starts


def _without_words(name: str, drop: set[int]) -> str:
    parts = _WORD.split(name)
    kept: list[str] = []
    for index in range(1, len(parts), 2):
        if index in drop:
            continue
        if kept:
            kept.append(parts[index - 1] or "-")
        kept.append(parts[index])
    if not kept:
        return ""
    return parts[0] + "".join(kept) + parts[-1]


def is_record_line(line: str) -> bool:
    """A line that says where a memory comes from or which project it belongs to (module contract)."""
    return bool(_RECORD_FIELD.match(line) or _SCOPE_HEADING.match(line))


@dataclass(frozen=True)
class LineEdit:
    text: str
    removed: tuple[tuple[int, str], ...]  # (line number, line) of the lines holding the needle
    emptied_headings: tuple[tuple[int, str], ...]  # headings whose section lost everything
    references: int  # references to renamed files rewritten
    kept: tuple[tuple[int, str], ...] = ()  # record lines holding the needle, left as they are

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.emptied_headings or self.references)


def edit_lines(text: str, needle: TextTest, references: Mapping[str, str] | None = None) -> LineEdit:
    """Forget the needle's lines in `text` (see the module contract)."""
    original = text.splitlines(keepends=True)
    lines, rewritten = _rewrite_references(original, references or {})
    holding = [needle.in_line(line) for line in lines]
    gone = [holds and not is_record_line(line) for holds, line in zip(holding, lines, strict=True)]
    emptied = _emptied_headings(lines, gone)
    dropped = [gone[number] or number in emptied for number in range(len(lines))]
    for heading, end in emptied.items():
        for number in range(heading + 1, end):
            if not lines[number].strip():
                dropped[number] = True
    kept: list[str] = []
    after_removal = False
    for number, line in enumerate(lines):
        if dropped[number]:
            after_removal = True
            continue
        if after_removal and not line.strip() and kept and not kept[-1].strip():
            continue  # a removal left two blank lines together
        kept.append(line)
        after_removal = False
    return LineEdit(
        text="".join(kept),
        removed=tuple((number + 1, original[number].rstrip("\r\n")) for number in range(len(lines)) if gone[number]),
        emptied_headings=tuple((number + 1, original[number].rstrip("\r\n")) for number in sorted(emptied)),
        references=rewritten,
        kept=tuple((number + 1, original[number].rstrip("\r\n")) for number in range(len(lines)) if holding[number] and not gone[number]),
    )


def _rewrite_references(lines: list[str], references: Mapping[str, str]) -> tuple[list[str], int]:
    if not references:
        return lines, 0
    ordered = sorted(references.items(), key=lambda item: len(item[0]), reverse=True)
    rewritten = 0
    result = []
    for line in lines:
        for old, new in ordered:
            if old in line:
                rewritten += line.count(old)
                line = line.replace(old, new)
        result.append(line)
    return result, rewritten


def _emptied_headings(lines: list[str], gone: list[bool]) -> dict[int, int]:
    """Heading line -> end of its section, for the headings a removal left with no content."""
    levels = _heading_levels(lines)
    emptied: dict[int, int] = {}
    # Bottom-up, so a subsection emptied first counts as removed for the heading above it.
    for heading in range(len(lines) - 1, -1, -1):
        level = levels[heading]
        if not level or gone[heading]:
            continue
        end = heading + 1
        lost = content = False
        while end < len(lines):
            inner = levels[end]
            # A heading that went for holding the text leaves its lines under this one; one
            # emptied below still closes this section (its own lines went with it).
            if inner and inner <= level and not gone[end]:
                break
            if gone[end] or end in emptied:
                lost = True
            elif lines[end].strip():
                content = True
            end += 1
        if lost and not content:
            emptied[heading] = end
    return emptied


def _heading_levels(lines: list[str]) -> list[int]:
    levels = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            levels.append(0)
            continue
        match = None if fenced else _HEADING.match(line)
        levels.append(len(match.group(1)) if match else 0)
    return levels
