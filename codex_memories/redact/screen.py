"""Which redaction rules can match a text, found in one Hyperscan pass instead of one regex each.

The redaction engine (`engine.py`) runs about sixty regexes over every text it is given; on
transcripts almost none of them match, yet each costs a full pass (benchmarks/README.md,
"Ingest"). Hyperscan (Intel's
multi-pattern regex engine, the `hyperscan` wheel) scans for all of them at once. It is used as a
*screen* only: it says which rules to run, and the rules themselves still decide, in Python, what
is redacted. The output of `redact_secrets` is therefore the same with or without it, provided
the screen never leaves out a rule that would have matched. That is what this module is built
around:

* Every pattern is compiled in Hyperscan's prefilter mode, which may report more matches than the
  pattern has but never fewer (constructs it cannot run, such as look-arounds, are loosened).
  `loosened()` loosens it further where that is cheap to scan but expensive to compile: counted
  repeats lose their upper bound and most of their lower one, atomic groups and possessive
  quantifiers become plain ones. Each step only widens what the pattern accepts.
* Hyperscan's `\\s`, `\\w`, `\\d` (Unicode properties, `HS_FLAG_UCP`) and case folding do not
  agree with Python's `re` on every code point. `UNSAFE_RANGES` lists the code points where they
  disagree (`disagreeing_code_points()` measures it; a test keeps the list current); a text that
  holds one of them, that is not valid UTF-8 (lone surrogates), or whose lower-cased copy has a
  different length, gets no screen and every rule runs, as before.
* Hints are matched exactly (as literals), so the screen also answers `_applies`' "does one of
  the rule's hints occur?" without the separate Aho-Corasick pass.

A rule whose pattern cannot be screened (Hyperscan refuses it, or it is marked `screened=False`)
always runs. When the `hyperscan` wheel is not installed (it is built for x86-64 Linux only),
`build_screen` returns None and every rule runs.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

logger = logging.getLogger(__name__)

try:
    import hyperscan
except ImportError:  # not built for this platform: redaction runs every rule
    hyperscan = None


@dataclass(frozen=True, slots=True)
class ScreenRule:
    """One redaction rule as the screen sees it."""

    # The regexes the rule runs over the original text.
    patterns: tuple[re.Pattern[str], ...] = ()
    # The regexes it runs over the lower-cased text (case-insensitive rules).
    lowered_patterns: tuple[re.Pattern[str], ...] = ()
    # Lower-case literals; the rule runs only when one occurs in the lowered text (empty: always).
    hints: tuple[str, ...] = ()
    # False: the pattern is not screened (the rule runs whenever a hint occurs).
    screened: bool = True


# ---- loosening a pattern --------------------------------------------------------------------

_COUNTED_REPEAT = re.compile(r"\{(\d*)(,?)(\d*)\}")
# Counted repeats keep at most this much of their lower bound: `[A-Za-z0-9]{20,}` becomes
# `[A-Za-z0-9]{4,}`. Hyperscan compiles a bounded repeat into states per count, which is what
# made the full patterns take seconds (one did not finish in a minute) to compile.
_KEPT_MINIMUM = 4


def loosened(pattern: str) -> str:
    """`pattern` with every counted repeat `{m,n}`, `{m}`, `{m,}` as `{min(m, 4),}`, atomic
    groups `(?>...)` as `(?:...)` and possessive quantifiers (`*+`, `{m,n}+`) as greedy ones.

    Every match of `pattern` is a match of the result. Character classes and escapes are copied
    as they are (a `{` inside `[...]` or after a backslash is no quantifier)."""
    out: list[str] = []
    position, length = 0, len(pattern)
    in_class = False
    while position < length:
        char = pattern[position]
        if char == "\\":
            out.append(pattern[position : position + 2])
            position += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
            position += 1
            continue
        if char == "[":
            in_class = True
            # `[]...]` and `[^]...]`: a `]` right after the opening is a member, not the end.
            end = position + 1
            if pattern.startswith("^", end):
                end += 1
            if pattern.startswith("]", end):
                end += 1
            out.append(pattern[position:end])
            position = end
            continue
        if pattern.startswith("(?>", position):
            out.append("(?:")
            position += 3
            continue
        repeat = _COUNTED_REPEAT.match(pattern, position) if char == "{" else None
        if repeat is not None and (repeat.group(1) or repeat.group(3)):
            # Python reads `{,n}` as `{0,n}`; Hyperscan (like PCRE) would read it as text.
            minimum = min(int(repeat.group(1) or 0), _KEPT_MINIMUM)
            out.append(f"{{{minimum},}}" if minimum else "*")
            position = repeat.end()
            if pattern.startswith("+", position):
                position += 1
            continue
        if char in "*+?" and pattern.startswith("+", position + 1):
            out.append(char)
            position += 2
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _hyperscan_source(regex: re.Pattern[str]) -> tuple[bytes, int]:
    """(expression, flags) that makes Hyperscan prefilter `regex` as Python would run it."""
    assert hyperscan is not None
    flags = (
        hyperscan.HS_FLAG_PREFILTER
        | hyperscan.HS_FLAG_SINGLEMATCH
        | hyperscan.HS_FLAG_ALLOWEMPTY
        | hyperscan.HS_FLAG_UTF8
        | hyperscan.HS_FLAG_UCP
    )
    if regex.flags & re.IGNORECASE:
        flags |= hyperscan.HS_FLAG_CASELESS
    if regex.flags & re.DOTALL:
        flags |= hyperscan.HS_FLAG_DOTALL
    if regex.flags & re.MULTILINE:
        flags |= hyperscan.HS_FLAG_MULTILINE
    source = loosened(regex.pattern)
    if regex.flags & re.VERBOSE:
        # The newline ends a trailing comment, which would otherwise swallow the `)`.
        source = f"(?x:{source}\n)"
    return source.encode("utf-8"), flags


def _literal_source(literal: str) -> bytes:
    """A Hyperscan expression matching exactly `literal` (every character as a code point escape)."""
    return "".join(f"\\x{{{ord(char):x}}}" for char in literal).encode("ascii")


# ---- the code points where Hyperscan and Python disagree ------------------------------------

# (first, last) code point, inclusive. Generated by `disagreeing_code_points()` for hyperscan
# 0.9.1 (Hyperscan 5.4) and Python's `re` on Python 3.11; tests/test_secret_screen.py checks it.
UNSAFE_RANGES: tuple[tuple[int, int], ...] = (
    (0x1C, 0x1F), (0x130, 0x131), (0x560, 0x560), (0x588, 0x588), (0x5EF, 0x5EF), (0x860, 0x86A),
    (0x870, 0x887), (0x889, 0x88E), (0x8B3, 0x8C9), (0x9FC, 0x9FC), (0xAF9, 0xAF9), (0xC5A, 0xC5A),
    (0xC5D, 0xC5D), (0xC80, 0xC80), (0xCDD, 0xCDD), (0xD04, 0xD04), (0xD54, 0xD56), (0xD58, 0xD5F),
    (0xD76, 0xD78), (0xE86, 0xE86), (0xE89, 0xE89), (0xE8C, 0xE8C), (0xE8E, 0xE93), (0xE98, 0xE98),
    (0xEA0, 0xEA0), (0xEA8, 0xEA9), (0xEAC, 0xEAC), (0x13F5, 0x13F5), (0x13F8, 0x13FD), (0x170D, 0x170D),
    (0x171F, 0x171F), (0x180E, 0x180E), (0x1878, 0x1878), (0x1885, 0x1886), (0x19B0, 0x19C0),
    (0x19C8, 0x19C9), (0x1B4C, 0x1B4C), (0x1C80, 0x1C88), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF),
    (0x1CF2, 0x1CF3), (0x1CFA, 0x1CFA), (0x2C2F, 0x2C2F), (0x2C5F, 0x2C5F), (0x312E, 0x312F),
    (0x31BB, 0x31BF), (0x4DB6, 0x4DBF), (0x9FCD, 0x9FFF), (0xA78F, 0xA78F), (0xA7AE, 0xA7AF),
    (0xA7B2, 0xA7CA), (0xA7D0, 0xA7D1), (0xA7D3, 0xA7D3), (0xA7D5, 0xA7D9), (0xA7F2, 0xA7F6),
    (0xA8FD, 0xA8FE), (0xAB60, 0xAB63), (0xAB66, 0xAB69), (0xAB70, 0xABBF), (0x1032D, 0x1032F),
    (0x104B0, 0x104D3), (0x104D8, 0x104FB), (0x10570, 0x1057A), (0x1057C, 0x1058A), (0x1058C, 0x10592),
    (0x10594, 0x10595), (0x10597, 0x105A1), (0x105A3, 0x105B1), (0x105B3, 0x105B9), (0x105BB, 0x105BC),
    (0x10780, 0x10785), (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x108E0, 0x108F2), (0x108F4, 0x108F5),
    (0x108FB, 0x108FF), (0x109BC, 0x109BD), (0x109C0, 0x109CF), (0x109D2, 0x109FF), (0x10A34, 0x10A35),
    (0x10A48, 0x10A48), (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x10CFA, 0x10D23), (0x10D30, 0x10D39),
    (0x10E80, 0x10EA9), (0x10EB0, 0x10EB1), (0x10F00, 0x10F27), (0x10F30, 0x10F45), (0x10F51, 0x10F54),
    (0x10F70, 0x10F81), (0x10FB0, 0x10FCB), (0x10FE0, 0x10FF6), (0x11071, 0x11072), (0x11075, 0x11075),
    (0x11144, 0x11144), (0x11147, 0x11147), (0x111DC, 0x111DC), (0x11280, 0x11286), (0x11288, 0x11288),
    (0x1128A, 0x1128D), (0x1128F, 0x1129D), (0x1129F, 0x112A8), (0x11350, 0x11350), (0x11400, 0x11434),
    (0x11447, 0x1144A), (0x11450, 0x11459), (0x1145F, 0x11461), (0x115D8, 0x115DB), (0x116B8, 0x116B8),
    (0x11700, 0x1171A), (0x11730, 0x1173B), (0x11740, 0x11746), (0x11800, 0x1182B), (0x11900, 0x11906),
    (0x11909, 0x11909), (0x1190C, 0x11913), (0x11915, 0x11916), (0x11918, 0x1192F), (0x1193F, 0x1193F),
    (0x11941, 0x11941), (0x11950, 0x11959), (0x119A0, 0x119A7), (0x119AA, 0x119D0), (0x119E1, 0x119E1),
    (0x119E3, 0x119E3), (0x11A00, 0x11A00), (0x11A0B, 0x11A32), (0x11A3A, 0x11A3A), (0x11A50, 0x11A50),
    (0x11A5C, 0x11A89), (0x11A9D, 0x11A9D), (0x11AB0, 0x11ABF), (0x11C00, 0x11C08), (0x11C0A, 0x11C2E),
    (0x11C40, 0x11C40), (0x11C50, 0x11C6C), (0x11C72, 0x11C8F), (0x11D00, 0x11D06), (0x11D08, 0x11D09),
    (0x11D0B, 0x11D30), (0x11D46, 0x11D46), (0x11D50, 0x11D59), (0x11D60, 0x11D65), (0x11D67, 0x11D68),
    (0x11D6A, 0x11D89), (0x11D98, 0x11D98), (0x11DA0, 0x11DA9), (0x11EE0, 0x11EF2), (0x11FB0, 0x11FB0),
    (0x11FC0, 0x11FD4), (0x12399, 0x12399), (0x12480, 0x12543), (0x12F90, 0x12FF0), (0x14400, 0x14646),
    (0x16A70, 0x16ABE), (0x16AC0, 0x16AC9), (0x16E40, 0x16E96), (0x16F45, 0x16F4A), (0x16FE0, 0x16FE1),
    (0x16FE3, 0x16FE3), (0x17000, 0x187F7), (0x18800, 0x18CD5), (0x18D00, 0x18D08), (0x1AFF0, 0x1AFF3),
    (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE), (0x1B002, 0x1B122), (0x1B150, 0x1B152), (0x1B164, 0x1B167),
    (0x1B170, 0x1B2FB), (0x1D2E0, 0x1D2F3), (0x1D372, 0x1D378), (0x1DF00, 0x1DF1E), (0x1E100, 0x1E12C),
    (0x1E137, 0x1E13D), (0x1E140, 0x1E149), (0x1E14E, 0x1E14E), (0x1E290, 0x1E2AD), (0x1E2C0, 0x1E2EB),
    (0x1E2F0, 0x1E2F9), (0x1E7E0, 0x1E7E6), (0x1E7E8, 0x1E7EB), (0x1E7ED, 0x1E7EE), (0x1E7F0, 0x1E7FE),
    (0x1E900, 0x1E943), (0x1E94B, 0x1E94B), (0x1E950, 0x1E959), (0x1EC71, 0x1ECAB), (0x1ECAD, 0x1ECAF),
    (0x1ECB1, 0x1ECB4), (0x1ED01, 0x1ED2D), (0x1ED2F, 0x1ED3D), (0x1FBF0, 0x1FBF9), (0x2A6D7, 0x2A6DF),
    (0x2B735, 0x2B738), (0x2B820, 0x2CEA1), (0x2CEB0, 0x2EBE0), (0x30000, 0x3134A),
)

_SURROGATES = range(0xD800, 0xE000)


def _character_probes() -> list[tuple[str, int]]:
    """(single-character pattern, Python flags) for every way a redaction pattern classifies one
    character: the class escapes (`\\b` and `\\B` are decided by `\\w`), `.`, and each ASCII
    letter and case-folded class under IGNORECASE (the detect-secrets patterns that use it)."""
    probes = [(escape, 0) for escape in (r"\s", r"\S", r"\w", r"\W", r"\d", r"\D", ".")]
    probes.append((".", re.DOTALL))
    probes += [(letter, re.IGNORECASE) for letter in "abcdefghijklmnopqrstuvwxyz"]
    probes += [(r"[a-z]", re.IGNORECASE), (r"[A-Z]", re.IGNORECASE), (r"\w", re.IGNORECASE)]
    return probes


def disagreeing_code_points() -> list[int]:
    """Every code point (surrogates aside) that one of `_character_probes()` matches in Python's
    `re` but not in Hyperscan, or the other way round. Takes some seconds."""
    if hyperscan is None:
        raise RuntimeError("hyperscan is not installed")
    code_points = [code for code in range(0x110000) if code not in _SURROGATES]
    text = "".join(map(chr, code_points))
    data = text.encode("utf-8")
    # Hyperscan reports the byte offset where a match ends; map it back to the code point.
    index_at_end: dict[int, int] = {}
    offset = 0
    for index, char in enumerate(text):
        offset += len(char.encode("utf-8"))
        index_at_end[offset] = index
    disagreeing: set[int] = set()
    for pattern, python_flags in _character_probes():
        regex = re.compile(pattern, python_flags)
        in_python = {match.start() for match in regex.finditer(text)}
        expression, flags = _hyperscan_source(regex)
        flags &= ~(hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH)
        database = hyperscan.Database()
        database.compile(expressions=[expression], ids=[0], elements=1, flags=[flags])
        in_hyperscan: set[int] = set()
        database.scan(data, match_event_handler=lambda _id, _start, end, _flags, _context: in_hyperscan.add(index_at_end[end]))
        disagreeing.update(code_points[index] for index in in_python ^ in_hyperscan)
    return sorted(disagreeing)


def as_ranges(code_points: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Sorted code points as (first, last) runs."""
    ranges: list[tuple[int, int]] = []
    for code in sorted(code_points):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return tuple(ranges)


def _unsafe_class() -> bytes:
    """A Hyperscan class of `UNSAFE_RANGES` (exact code points, no properties)."""
    members = "".join(f"\\x{{{first:x}}}-\\x{{{last:x}}}" for first, last in UNSAFE_RANGES)
    return f"[{members}]".encode("ascii")


_UNSAFE = (_unsafe_class(), hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_UTF8) if hyperscan is not None else None


# ---- the screen -----------------------------------------------------------------------------


class SecretScreen:
    """The rules that can match a text, from two Hyperscan scans (the text and its lower-cased
    copy). Thread-safe: each thread scans with its own scratch space."""

    def __init__(self, rules: Sequence[ScreenRule]) -> None:
        assert hyperscan is not None
        # Per rule: its expressions for the scan of the original text and of the lowered one.
        screened: dict[int, tuple[list[tuple[bytes, int]], list[tuple[bytes, int]]]] = {}
        self._always: set[int] = set()  # unscreened rules: they run whenever a hint occurs
        for index, rule in enumerate(rules):
            if rule.screened and (rule.patterns or rule.lowered_patterns):
                screened[index] = (
                    [_hyperscan_source(regex) for regex in rule.patterns],
                    [_hyperscan_source(regex) for regex in rule.lowered_patterns],
                )
            else:
                self._always.add(index)
        self._hinted = [(index, rule.hints) for index, rule in enumerate(rules) if rule.hints]
        hints = sorted({hint for rule in rules for hint in rule.hints})
        try:
            self._compile(screened, hints)
        except hyperscan.error:
            # One pattern Hyperscan refuses fails the whole database: find it (and any other),
            # leave those rules unscreened, and compile the rest.
            for index in [index for index, (original, lowered) in screened.items() if not all(map(_compiles, original + lowered))]:
                logger.warning("secret screen: rule %d is not screened, Hyperscan refuses its pattern", index)
                del screened[index]
                self._always.add(index)
            self._compile(screened, hints)
        self._scratch = threading.local()

    def _compile(self, screened: dict[int, tuple[list[tuple[bytes, int]], list[tuple[bytes, int]]]], hints: list[str]) -> None:
        # Expression id -> what it stands for: a rule index, a hint, or None for an unsafe
        # character (both scans look for those: lower-casing can make one).
        self._original_meaning: list[int | None] = [None]
        self._lowered_meaning: list[int | str | None] = [None]
        original, lowered = [_UNSAFE], [_UNSAFE]
        for index, (original_sources, lowered_sources) in screened.items():
            original += original_sources
            self._original_meaning += [index] * len(original_sources)
            lowered += lowered_sources
            self._lowered_meaning += [index] * len(lowered_sources)
        lowered += [(_literal_source(hint), hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_UTF8) for hint in hints]
        self._lowered_meaning += hints
        self._original = _database(original)
        self._lowered = _database(lowered)

    def candidates(self, text: str, lowered: str) -> set[int] | None:
        """Indices of the rules that can match `text` (whose lower-cased copy is `lowered`), or
        None when the screen cannot say (every rule must then run)."""
        if len(lowered) != len(text):
            return None
        try:
            data, lowered_data = text.encode("utf-8"), lowered.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: Hyperscan's UTF-8 mode needs valid input
            return None
        original_scratch, lowered_scratch = self._scratches()
        rules: set[int] = set()
        hints: set[str] = set()
        for database, data_, scratch, meaning in (
            (self._original, data, original_scratch, self._original_meaning),
            (self._lowered, lowered_data, lowered_scratch, self._lowered_meaning),
        ):
            unsafe = _scan(database, data_, scratch, meaning, rules, hints)
            if unsafe:
                return None
        rules |= self._always
        for index, rule_hints in self._hinted:
            if index in rules and not any(hint in hints for hint in rule_hints):
                rules.discard(index)
        return rules

    def _scratches(self) -> tuple[object, object]:
        scratches = getattr(self._scratch, "spaces", None)
        if scratches is None:
            scratches = (hyperscan.Scratch(self._original), hyperscan.Scratch(self._lowered))
            self._scratch.spaces = scratches
        return scratches


def _scan(database, data: bytes, scratch, meaning: list, rules: set[int], hints: set[str]) -> bool:
    """Scan `data`, adding the rules and hints found; True when it holds an unsafe character
    (the scan then stops there)."""

    def on_match(expression: int, _start: int, _end: int, _flags: int, _context: object) -> bool:
        what = meaning[expression]
        if what is None:
            return True  # an unsafe character: stop, the screen cannot answer
        if isinstance(what, str):
            hints.add(what)
        else:
            rules.add(what)
        return False

    try:
        database.scan(data, match_event_handler=on_match, scratch=scratch)
    except hyperscan.ScanTerminated:
        return True
    return False


def _compiles(source: tuple[bytes, int]) -> bool:
    try:
        _database([source])
    except hyperscan.error as error:
        logger.debug("hyperscan refuses %r: %s", source[0][:80], error)
        return False
    return True


def _database(expressions: list[tuple[bytes, int]]):  # -> hyperscan.Database
    database = hyperscan.Database()
    database.compile(
        expressions=[expression for expression, _ in expressions],
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=[flags for _, flags in expressions],
    )
    return database


def build_screen(rules: Sequence[ScreenRule]) -> SecretScreen | None:
    """The screen for `rules`, or None when Hyperscan is not installed."""
    if hyperscan is None:
        return None
    return SecretScreen(rules)
