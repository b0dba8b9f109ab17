"""The redaction engine: builds the rule table once and runs it over a text, fast.

Contract: `redact_secrets`, `find_secret_kinds`, `prepare_screen` and `SECRET_PATTERNS` as
documented in `codex_memories.redact`; the output depends only on the rules (`rules.py`,
`detector.py`, `shapes.py`), never on which of the speed-ups below ran.

Import cost: importing this module compiles no rule and does not import `detect-secrets`
(≈ 0.1-0.2 s, it pulls in `requests`); the table is built on the first call, and each rule's
regex is compiled (a detect-secrets rule's loaded, `detector.py`) the first time a text gets
past its hints and gate (`CompiledRule.public`), once per process: a hook that redacts one
short block compiles the few rules it needs, not the whole table (0.3 s of a 0.5 s prompt hook
before, benchmarks/README.md, "Hook wall time").

Performance (benchmarks/README.md, "Secrets"): every rule starts with a literal
where it can, bounds its repetitions, and is skipped outright when none of its literal hints
occurs in the text (all the hints of all the rules are found in one Aho-Corasick pass,
`pyahocorasick`). Checks a regex cannot do cheaply (word boundaries, "is this value random?")
run in Python on matches only, never as a look-behind tried at every position.
Case-insensitive rules run case-sensitively over a lower-cased copy of the text (same length, so
match positions carry over), which is several times faster than `re.IGNORECASE`.
Before any rule runs, `codex_memories.redact.screen` scans the text once with Hyperscan for all
the rules' patterns (loosened, in prefilter mode) and hints: only the rules it reports run, so
the output is the same; building transcripts took half the time (benchmarks/README.md, "Ingest").
The screen is built once a process has redacted about 8 MB, or when it says bulk work is coming
(`prepare_screen`). Before that, without Hyperscan, or for a text it cannot judge, every rule is
checked as above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import ahocorasick

from codex_memories.redact.detector import DetectorRule, detector_rules, widened_span
from codex_memories.redact.documents import DOCUMENT_SHAPES, decoded_shapes
from codex_memories.redact.prose import PROSE_SHAPES
from codex_memories.redact.rules import REDACTED, RULES, Rule, Template, at_boundary
from codex_memories.redact.screen import ScreenRule, SecretScreen, build_screen
from codex_memories.redact.shapes import CONTEXT_SHAPES, TOKEN_SHAPES
from codex_memories.redact.values import is_placeholder


@dataclass(frozen=True, slots=True)
class CompiledRule:
    name: str
    source: str | None  # the regex as written; None for a detect-secrets rule (its plugin's, `load`)
    template: Template
    hints: tuple[str, ...]
    case_insensitive: bool
    accept: Callable[[re.Match[str], str], bool] | None
    widen: bool
    locate: Callable[[re.Match[str], str], tuple[int, int] | None] | None
    boundary: frozenset[str] | None
    gate: re.Pattern[str] | None = None
    starts: Callable[[str], Iterator[int]] | None = None
    locate_all: Callable[[re.Match[str], str], list[tuple[int, int]]] | None = None
    # A detect-secrets rule's regexes, already compiled by the plugin with its own flags (the
    # first is `public` and `fast`, the others `extra`); asked for when a text first passes the
    # rule's hints and gate, since the first call imports detect-secrets (`detector.py`).
    load: Callable[[], tuple[re.Pattern[str], ...]] | None = None
    # The compiled regexes, [public, fast], each filled the first time it is asked for: a hook
    # redacts one short block, whose hints rule out most of the table, and compiling every rule
    # up front cost it about 0.3 s per call (benchmarks/README.md, "Hook wall time").
    _compiled: list[re.Pattern[str] | None] = field(default_factory=lambda: [None, None], compare=False, repr=False)

    @property
    def pattern(self) -> str:
        return self.source if self.source is not None else self.public.pattern

    @property
    def public(self) -> re.Pattern[str]:
        """The regex over the original text (IGNORECASE when the rule is case-insensitive)."""
        regex = self._compiled[0]
        if regex is None:
            if self.load is not None:
                regex = self.load()[0]
            else:
                regex = re.compile(self.pattern, re.IGNORECASE if self.case_insensitive else 0)
            self._compiled[0] = regex
        return regex

    @property
    def fast(self) -> re.Pattern[str]:
        """The regex over the lower-cased text when case-insensitive (see the module docstring),
        else the same as `public`."""
        regex = self._compiled[1]
        if regex is None:
            regex = self._compiled[1] = re.compile(self.pattern) if self.case_insensitive else self.public
        return regex

    @property
    def extra(self) -> tuple[re.Pattern[str], ...]:
        """More regexes of the same rule (a detect-secrets plugin has several): one hint check."""
        return self.load()[1:] if self.load is not None else ()

    def edits(self, text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, replacement) of every secret this rule finds in `text`, left to right."""
        on_lowered = self.case_insensitive and len(lowered) == len(text)
        if self.starts is not None and self._compiled[1 if on_lowered else 0] is None:
            # Not compiled yet: when there is no position where a match can start (`_matches`
            # would try none), it need not be (`credential_phrase` takes 10 ms, a tenth of a
            # prompt hook). Once compiled, the starts are not looked at twice (that cost bulk
            # redaction about 10 %).
            if next(self.starts(lowered if on_lowered else text), None) is None:
                return
        if self.extra or self.locate_all is not None:
            # Several regexes: their finds merged left to right.
            if on_lowered:
                pairs = [(lowered, self.fast)]
            else:
                pairs = [(text, regex) for regex in (self.public, *self.extra)]
            found = sorted({edit for haystack, regex in pairs for edit in self._edits(regex, text, haystack)})
            yield from found
            return
        if on_lowered:
            haystack, regex = lowered, self.fast
        else:
            # Unicode lower-casing changed the length (e.g. "İ"): positions would not carry over.
            haystack, regex = text, self.public
        yield from self._edits(regex, text, haystack)

    def _matches(self, regex: re.Pattern[str], haystack: str) -> Iterator[re.Match[str]]:
        """What `regex.finditer(haystack)` finds; tried at `starts` only when the rule has them
        (matches cannot overlap: a match at each start not inside the previous one)."""
        if self.starts is None:
            yield from regex.finditer(haystack)
            return
        last_end = 0
        for start in self.starts(haystack):
            if start < last_end:
                continue
            match = regex.match(haystack, start)
            if match is not None:
                last_end = match.end()
                yield match

    def _edits(self, regex: re.Pattern[str], text: str, haystack: str) -> Iterator[tuple[int, int, str]]:
        if self.locate_all is not None:
            # Spans may lie after the match (a table's rows): gathered, sorted by the caller.
            for match in self._matches(regex, haystack):
                for start, end in self.locate_all(match, text):
                    if end > start and not text.startswith(REDACTED, start) and not is_placeholder(text[start:end]):
                        yield start, end, REDACTED
            return
        for match in self._matches(regex, haystack):
            if self.boundary is not None and not at_boundary(text, match.start(), self.boundary):
                continue
            if self.accept is not None and not self.accept(match, text):
                continue
            if self.widen or self.locate is not None:
                span = self.locate(match, text) if self.locate is not None else widened_span(match, text)
                if span is not None and not is_placeholder(text[span[0] : span[1]]):
                    yield span[0], span[1], REDACTED
                continue
            if _replaces_placeholder(self.template, text, match):
                continue
            yield match.start(), match.end(), _render(self.template, text, match)


def _compile(rule: Rule) -> CompiledRule:
    """The rule ready to run; its regexes are compiled on first use (`CompiledRule.public`)."""
    return CompiledRule(
        name=rule.name,
        source=rule.pattern,
        template=rule.template,
        hints=rule.hints,
        case_insensitive=rule.case_insensitive,
        accept=rule.accept,
        widen=False,
        locate=rule.locate,
        boundary=rule.boundary,
        starts=rule.starts,
        locate_all=rule.locate_all,
    )


def _compile_detector_rule(rule: DetectorRule) -> CompiledRule:
    # The plugin's own regexes and flags: they run on the original text, as `public` and `fast`
    # alike, loaded when first needed (`detector.DetectorRule.regexes`).
    return CompiledRule(
        name=rule.name,
        source=None,
        load=lambda: rule.regexes,
        template=(REDACTED,),
        hints=rule.hints,
        case_insensitive=False,
        accept=None,
        widen=True,
        locate=None,
        boundary=None,
        gate=rule.gate,
    )


@cache
def _rules() -> tuple[CompiledRule, ...]:
    """The whole table, built on first use (keeps `import codex_memories.redact` cheap); each
    rule's regexes are compiled when a text first needs them."""
    known = [_compile(rule) for rule in (*RULES, *CONTEXT_SHAPES, *PROSE_SHAPES, *DOCUMENT_SHAPES)]
    detector = [_compile_detector_rule(rule) for rule in detector_rules()]
    # The decoded-base64 rule reads the decoded text with this whole table (`redact_secrets`).
    tokens = [_compile(rule) for rule in (*TOKEN_SHAPES, *decoded_shapes(redact_secrets))]
    return (*known, *detector, *tokens)


@dataclass(frozen=True, slots=True)
class RulePattern:
    """One rule as `SECRET_PATTERNS` shows it: `search(text)` answers like `re.Pattern.search`
    (a match or None) but applies the rule's whole logic, value checks included."""

    rule: CompiledRule

    @property
    def pattern(self) -> str:
        return self.rule.pattern

    def search(self, text: str) -> tuple[int, int, str] | None:
        return next(self.rule.edits(text, text.lower()), None) if _applies(self.rule, text, text.lower()) else None


def __getattr__(name: str) -> Any:
    # SECRET_PATTERNS is built lazily, like the rules it lists.
    if name == "SECRET_PATTERNS":
        return tuple((rule.name, RulePattern(rule)) for rule in _rules())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _replaces_placeholder(template: Template, text: str, match: re.Match[str]) -> bool:
    """Whether the part of the match the template replaces is a placeholder (`<your-token>`,
    `${DB_PASSWORD}`, `********`): the one check every rule shares, so that docs and examples
    come through whatever rule reads them (issue 36)."""
    start = match.start()
    for part in template:
        if isinstance(part, int):
            group_start, group_end = match.span(part)
            if group_end >= 0:
                start = max(start, group_end)
            continue
        if part == REDACTED:
            end = match.end()
            following = template[template.index(part) + 1 :]
            for later in following:
                if isinstance(later, int) and match.span(later)[0] >= 0:
                    end = match.span(later)[0]
                    break
            return is_placeholder(text[start:end])
    return False


def _render(template: Template, text: str, match: re.Match[str]) -> str:
    # Groups are read from `text` by span: for case-insensitive rules the match was found in the
    # lower-cased copy, but the kept parts must keep their original case.
    parts = []
    for part in template:
        if isinstance(part, int):
            start, end = match.span(part)
            parts.append(text[start:end] if start >= 0 else "")
        else:
            parts.append(part)
    return "".join(parts)


def _apply(rule: CompiledRule, text: str, lowered: str) -> str:
    pieces: list[str] = []
    last = 0
    for start, end, replacement in rule.edits(text, lowered):
        if start < last:
            continue
        pieces.append(text[last:start])
        pieces.append(replacement)
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


_MARKER_LOWER = REDACTED.lower()


def _applies(rule: CompiledRule, text: str, lowered: str, present: frozenset[str] | None = None) -> bool:
    """Whether `rule` can match: one of its hints occurs and its gate matches.

    `present` is the set of hints that occur in the text as it was before any replacement
    (`_present_hints`). That is safe: a replacement only removes text and inserts the marker,
    so a hint absent before can only appear inside the marker, which no rule matches
    (`_NOT_REDACTED`); only the marker itself, as a hint, is looked up in the current text."""
    if rule.hints:
        for hint in rule.hints:
            if present is None or hint == _MARKER_LOWER:
                found = hint in lowered
            else:
                found = hint in present
            if found:
                break
        else:
            return False
    return rule.gate is None or rule.gate.search(text) is not None


# Hints this short (`sk`, `-u`, `.`) occur all over ordinary text: a substring search finds
# them within the first few characters, where the automaton would report every occurrence.
_SHORT_HINT_CHARS = 2


@cache
def _hint_search() -> tuple[ahocorasick.Automaton, tuple[str, ...]]:
    """(an Aho-Corasick automaton of the rules' longer hints, the short ones), the marker aside."""
    hints = {hint for rule in _rules() for hint in rule.hints if hint != _MARKER_LOWER}
    automaton = ahocorasick.Automaton()
    for hint in hints:
        if len(hint) > _SHORT_HINT_CHARS:
            automaton.add_word(hint, hint)
    automaton.make_automaton()
    return automaton, tuple(sorted(hint for hint in hints if len(hint) <= _SHORT_HINT_CHARS))


def _present_hints(lowered: str) -> frozenset[str]:
    """The rules' hints that occur in `lowered`: the same answer as `hint in lowered` for each
    hint (the automaton reports every occurrence, overlapping ones too), in one pass over the
    text instead of one substring search per hint (benchmarks/README.md, "Ingest")."""
    automaton, short = _hint_search()
    found = {hint for _end, hint in automaton.iter(lowered)}
    found.update(hint for hint in short if hint in lowered)
    return frozenset(found)


@cache
def _screen() -> SecretScreen | None:
    """The Hyperscan screen over the whole table (None without Hyperscan), built on first use."""
    screen_rules = []
    for rule in _rules():
        if rule.widen:  # a detect-secrets rule: its own regexes and flags, over the original text
            screen_rules.append(ScreenRule(patterns=(rule.public, *rule.extra), hints=rule.hints))
        elif rule.case_insensitive:  # run as `fast` over the lowered text (`CompiledRule.edits`)
            screen_rules.append(ScreenRule(lowered_patterns=(rule.fast,), hints=rule.hints, screened=rule.starts is None))
        else:
            # Rules tried at `starts` only already skip most of the text, and their patterns
            # (long runs of a broad class) cost the screen more than they save.
            screen_rules.append(ScreenRule(patterns=(rule.public,), hints=rule.hints, screened=rule.starts is None))
    return build_screen(screen_rules)


# Building the screen costs about 0.6 s of CPU, what it saves on about 9 MB of text (0.064 s per
# MB on transcripts, benchmarks/README.md, "Ingest"). A process redacts this much without it
# first, so a hook, a note or a one-off command never pays the build, unless it announced bulk
# work (`prepare_screen`: phase 1's transcript worker does, off the claim path).
_SCREEN_AFTER_CHARS = 8_000_000
# Characters checked without the screen so far; racing threads can only delay the build.
_chars_unscreened = 0


def prepare_screen() -> None:
    """Build the screen now and use it from the next text on: the caller redacts in bulk."""
    global _chars_unscreened
    _screen()
    _chars_unscreened = _SCREEN_AFTER_CHARS


def _candidates(text: str, lowered: str) -> set[int] | None:
    """Indices (into `_rules()`) of the rules that can match `text`, hints and gates checked;
    None when the screen cannot tell or is not built yet (every rule is then checked as
    `_applies` does)."""
    global _chars_unscreened
    if _chars_unscreened < _SCREEN_AFTER_CHARS:
        _chars_unscreened += len(text)
        return None
    screen = _screen()
    candidates = None if screen is None else screen.candidates(text, lowered)
    if candidates is None:
        return None
    rules = _rules()
    return {index for index in candidates if rules[index].gate is None or rules[index].gate.search(text) is not None}


def redact_secrets(text: str) -> str:
    """Replace every recognised secret in `text` with `REDACTED` (rules applied in table order)."""
    if not text:
        return text
    lowered = text.lower()
    candidates = _candidates(text, lowered)
    # Without the screen, the hints that occur are found once, in the text as given (see `_applies`).
    present = _present_hints(lowered) if candidates is None else None
    for index, rule in enumerate(_rules()):
        if candidates is not None:
            if index not in candidates:
                continue
        elif not _applies(rule, text, lowered, present):
            continue
        replaced = _apply(rule, text, lowered)
        if replaced != text:
            text = replaced
            lowered = text.lower()
            if candidates is not None:
                # A replacement can make a later rule match (the marker starts
                # `wrapped_key_continuation`): screen the new text.
                candidates = _candidates(text, lowered)
    return text


def find_secret_kinds(text: str) -> list[str]:
    """Names of the rules that still find an unredacted secret in `text` (table order)."""
    if not text:
        return []
    lowered = text.lower()
    candidates = _candidates(text, lowered)
    return [
        rule.name
        for index, rule in enumerate(_rules())
        if (index in candidates if candidates is not None else _applies(rule, text, lowered))
        and next(rule.edits(text, lowered), None) is not None
    ]

