"""The Hyperscan screen changes how fast redaction is, never what it redacts.

Every test compares against redaction with the screen off (`_screen` returning None), which runs
each rule as before the screen existed."""

import json
import random
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from codex_memories.redact import engine, find_secret_kinds, redact_secrets
from codex_memories.redact import screen as screen_module
from codex_memories.redact.screen import UNSAFE_RANGES, as_ranges, disagreeing_code_points, loosened
from tests.support.secret_formats import PLACEMENTS, ordinary_texts, planted_items, secret_cases, serialize

pytestmark = pytest.mark.skipif(screen_module.hyperscan is None, reason="hyperscan is not installed here")


@pytest.fixture(autouse=True)
def _screen_in_use():
    """Bulk mode, as phase 1's transcript worker sets it: the screen answers from the first text."""
    engine.prepare_screen()


# Characters where Python and Hyperscan disagree, or where lower-casing is odd (İ grows, K is
# the Kelvin sign, ſ folds to s), whitespace Python knows and PCRE may not, a lone surrogate
# (no valid UTF-8), and characters that are safe but not ASCII.
_ODD = ["\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "İ", "ı", "K", "ſ", "\ud800", "é", "ß", "—", "✓", "漢", "🙂", "\u0560"]


def _unscreened(function, text, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(engine, "_screen", lambda: None)
        return function(text)


def _corpus() -> list[str]:
    texts = []
    for seed in (1, 2):
        texts += [serialize(planted.item) for planted in planted_items(secret_cases(seed), seed)]
        ordinary = ordinary_texts(seed)
        texts += [serialize(build(text, random.Random(0))) for text in ordinary.values() for build in PLACEMENTS.values() if build]
    return texts


def _mixes(texts: list[str], count: int) -> list[str]:
    """Pieces of `texts` joined with odd characters, some upper-cased, some JSON-escaped again."""
    rng = random.Random(20261202)
    mixes = []
    for _ in range(count):
        pieces = []
        for text in rng.sample(texts, rng.randint(1, 4)):
            start = rng.randrange(len(text))
            piece = text[start : start + rng.randint(20, 600)]
            roll = rng.random()
            if roll < 0.15:
                piece = piece.upper()
            elif roll < 0.3:
                piece = json.dumps(piece, ensure_ascii=False)
            pieces.append(piece)
            pieces.append(rng.choice(_ODD) if rng.random() < 0.5 else rng.choice([" ", "\n", "\\n", ""]))
        mixes.append("".join(pieces))
    return mixes


_CORPUS = _corpus()
_MIXES = _mixes(_CORPUS, 300)


def test_screened_redaction_is_the_unscreened_one(monkeypatch):
    screen = engine._screen()
    judged = [text for text in _CORPUS + _MIXES if screen.candidates(text, text.lower()) is not None]
    # Not vacuous: the screen answers for every generated text and most of the odd mixes.
    assert len(judged) > len(_CORPUS) + len(_MIXES) // 2
    differences = []
    for text in _CORPUS + _MIXES:
        for function in (redact_secrets, find_secret_kinds):
            screened, unscreened = function(text), _unscreened(function, text, monkeypatch)
            if screened != unscreened:
                differences.append((function.__name__, text[:200], screened, unscreened))
    assert differences == []


def test_the_screen_leaves_rules_out_and_keeps_the_ones_that_match():
    screen = engine._screen()
    assert screen is not None
    rules = engine._rules()
    pruned = 0
    for planted in planted_items(secret_cases(1), 1):
        text = serialize(planted.item)
        candidates = screen.candidates(text, text.lower())
        if candidates is None:
            continue
        pruned += len(rules) - len(candidates)
        for index, rule in enumerate(rules):
            if engine._applies(rule, text, text.lower()) and next(rule.edits(text, text.lower()), None) is not None:
                assert index in candidates, (rule.name, planted.case.name)
    # Most rules are left out of most texts: otherwise the screen saves nothing.
    planted_count = len(planted_items(secret_cases(1), 1))
    assert pruned > planted_count * len(rules) // 2


@pytest.mark.parametrize("odd", ["\x1c", "İ", "\ud800", "\u0870"])
def test_no_screen_for_text_it_cannot_judge(odd):
    screen = engine._screen()
    text = f"token = abc{odd}defghijkl"
    assert screen.candidates(text, text.lower()) is None
    assert screen.candidates("token = abcdefghijkl", "token = abcdefghijkl") is not None


def test_unsafe_ranges_are_what_this_hyperscan_disagrees_on():
    assert as_ranges(disagreeing_code_points()) == UNSAFE_RANGES


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"sk-[A-Za-z0-9]{20,}", r"sk-[A-Za-z0-9]{4,}"),
        (r"(?:[A-Z0-9]{1,20} ){0,3}KEY", r"(?:[A-Z0-9]{1,} )*KEY"),
        (r"[A-Za-z]{0,24}+[_\-.]", r"[A-Za-z]*[_\-.]"),
        (r"(?>(?:-[a-z]{1,6}\s{1,4})+)x", r"(?:(?:-[a-z]{1,}\s{1,})+)x"),
        (r"a{,5}b{3}", r"a*b{3,}"),
        (r"[{]{2}\{3\}[]{}]", r"[{]{2,}\{3\}[]{}]"),
        (r"a++b*+c?+", r"a+b*c?"),
    ],
)
def test_loosened_patterns(pattern, expected):
    assert loosened(pattern) == expected


def test_loosened_rule_patterns_accept_every_match_of_the_rule():
    texts = _CORPUS[:400]
    for rule in engine._rules():
        for regex in (rule.fast, rule.public, *rule.extra):
            wider = re.compile(loosened(regex.pattern), regex.flags)
            for text in texts:
                for match in regex.finditer(text):
                    assert wider.match(text, match.start()) is not None, (rule.name, match.group())


def test_threads_share_the_screen():
    texts = _CORPUS[:300]
    expected = [redact_secrets(text) for text in texts]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(redact_secrets, texts)) == expected


def test_the_screen_is_built_only_for_bulk_work(monkeypatch):
    builds = []
    real = engine._screen
    monkeypatch.setattr(engine, "_screen", lambda: builds.append(1) or real())
    monkeypatch.setattr(engine, "_chars_unscreened", 0)
    text = "token = abcdefghijkl and some ordinary words " * 200
    for _ in range(20):  # a hook's or a note's worth of text: no build
        redact_secrets(text)
    assert builds == []
    monkeypatch.setattr(engine, "_chars_unscreened", engine._SCREEN_AFTER_CHARS - 1)
    redact_secrets(text)
    assert builds == []
    assert redact_secrets(text) == _unscreened(redact_secrets, text, monkeypatch)
    assert builds, "past the threshold, the screen answers"
    monkeypatch.setattr(engine, "_chars_unscreened", 0)
    engine.prepare_screen()
    builds.clear()
    redact_secrets(text)
    assert builds
