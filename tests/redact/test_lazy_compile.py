"""Compiling the redactor's regexes on first use changes when they are compiled, never what
redaction returns.

The reference is an eager table: every rule's regexes compiled up front the way the engine did
before (`public` with IGNORECASE for a case-insensitive rule, `fast` without), and every
module-level pattern of the redact modules replaced by `re.compile` of its source, and the
detect-secrets plugins listed by importing it, their regexes all loaded. Both tables
redact the same texts (secrets of every format in `tests/support/secret_formats`, planted in
transcript items; ordinary text; prose in several languages; odd characters) one at a time, each
from a fresh table, so each text compiles only what it reaches in the lazy one."""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Callable

import pytest

from codex_memories.redact import detector as detector_module
from codex_memories.redact import documents, engine, names, prose, rules, shapes, values
from codex_memories.redact.lazy import LazyPattern
from tests.support.secret_formats import ordinary_texts, planted_items, secret_cases, serialize

_MODULES = (documents, names, prose, rules, shapes, values, detector_module)

_PROSE = [
    "The deploy password is Tr0ub4dor&3x, keep it out of the repo.",
    "Das Passwort für die Datenbank lautet Kx9!vQ2#mZ7p, bitte nicht teilen.",
    "La contraseña del servidor es Zq8$Lm3!pW2x y caduca el lunes.",
    "Le mot de passe de l'admin est Wq7!rT5#kY9z.",
    "数据库密码是 Hk4#pL9!xQ2m，别提交到仓库。",
    "本番DBのパスワードは Rt6!nB3#vC8x です。",
    "서버 비밀번호는 Mj5!tG8#wE2q 입니다.",
    "Пароль от базы: Yp3!kD7#sF1v, не коммитить.",
    "A senha do banco é Ux2!hN6#jR4t.",
    "We talked about password rotation policy but no password was shared.",
    # Lower-casing `İ` changes the length: case-insensitive rules then run their IGNORECASE regex
    # over the original text, upper-case names and all.
    "İstanbul ofisinin şifresi Ab3!İx9#Qw7z olarak kaldı.",
    "İzmir: THE DATABASE PASSWORD IS Kx9vQ2mZ7pLw, Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz",
    "İ export DB_PASSWORD='Hk4pL9xQ2mVr' && mysql -u root -pS3cr3tPa55 -h db.internal",
    "build atlas with make -j8; tabs in Makefiles; node 18.19.1 on the web repo",
]


def _texts() -> list[str]:
    texts = list(_PROSE)
    texts += list(ordinary_texts(3).values())
    texts += [serialize(planted.item) for planted in planted_items(secret_cases(3), 3)]
    texts += [json.dumps({"output": text}) for text in _PROSE]
    return texts


def _eager_compile(original: Callable[[rules.Rule], engine.CompiledRule]) -> Callable[[rules.Rule], engine.CompiledRule]:
    def compile_now(rule: rules.Rule) -> engine.CompiledRule:
        compiled = original(rule)
        flags = re.IGNORECASE if rule.case_insensitive else 0
        compiled._compiled[:] = [re.compile(rule.pattern, flags), re.compile(rule.pattern)]
        return compiled

    return compile_now


def _eager_detector(original: Callable[[detector_module.DetectorRule], engine.CompiledRule]) -> Callable[[detector_module.DetectorRule], engine.CompiledRule]:
    def load_now(rule: detector_module.DetectorRule) -> engine.CompiledRule:
        compiled = original(rule)
        compiled._compiled[:] = [rule.regexes[0], rule.regexes[0]]
        return compiled

    return load_now


def _fresh_tables() -> None:
    engine._rules.cache_clear()
    engine._hint_search.cache_clear()


def _outputs(texts: list[str]) -> list[tuple[str, list[str], list[object]]]:
    found = []
    for text in texts:
        _fresh_tables()
        patterns = engine.SECRET_PATTERNS
        found.append((engine.redact_secrets(text), engine.find_secret_kinds(text), [pattern.search(text) for _, pattern in patterns]))
    return found


@pytest.fixture()
def unscreened(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Hyperscan screen compiles every rule when it is built: the comparison is of the path
    # a hook takes, before any screen.
    monkeypatch.setattr(engine, "_screen", lambda: None)
    yield
    _fresh_tables()


def test_lazy_and_eager_tables_redact_alike(unscreened: None, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts()
    detector_module._installed_plugins()  # loaded once, whichever way the list is known
    with monkeypatch.context() as patch:
        # As in a fresh process: the detector's plugins listed from the record, their regexes
        # loaded when a text first passes their hints and gate.
        patch.delitem(sys.modules, "detect_secrets", raising=False)
        lazy = _outputs(texts)
    with monkeypatch.context() as patch:
        patch.setattr(detector_module, "recorded_plugins", lambda: None)
        patch.setattr(engine, "_compile_detector_rule", _eager_detector(engine._compile_detector_rule))
        patch.setattr(engine, "_compile", _eager_compile(engine._compile))
        for module in _MODULES:
            for name, value in vars(module).items():
                if isinstance(value, LazyPattern):
                    patch.setattr(module, name, re.compile(value.pattern, value._flags))
        eager = _outputs(texts)
    assert len(lazy) == len(texts)
    differences = [(text[:200], mine, theirs) for text, mine, theirs in zip(texts, lazy, eager, strict=True) if mine != theirs]
    assert differences == []
    # The comparison is not between two tables that redact nothing.
    assert sum(redacted != text for text, (redacted, _, _) in zip(texts, lazy, strict=True)) > len(texts) // 3


def test_a_short_ordinary_block_compiles_few_rules(unscreened: None) -> None:
    _fresh_tables()
    block = "- memory_summary.md:7-7 (current project atlas)\n    - note 1: the atlas build uses make -j8 and tabs in Makefiles\n"
    assert engine.redact_secrets(block) == block
    table = engine._rules()
    compiled = [rule.name for rule in table if rule._compiled != [None, None] and not rule.widen]
    own_rules = [rule for rule in table if not rule.widen]
    # The hints rule out most of the table: the point of compiling on first use.
    assert len(compiled) < len(own_rules) // 2, compiled
    # Nor does it pass any detect-secrets plugin's hints and gate: none of their regexes loaded.
    assert [rule.name for rule in table if rule.widen and rule._compiled != [None, None]] == []


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    pattern = LazyPattern(r"(?P<word>[a-z]+)(\d*)", re.IGNORECASE)
    compiled = re.compile(r"(?P<word>[a-z]+)(\d*)", re.IGNORECASE)
    text = "ABC12 def 3 Ghi"
    assert pattern.match(text, 6).span() == compiled.match(text, 6).span()
    assert pattern.match(text, 0, 2).span() == compiled.match(text, 0, 2).span()
    assert pattern.search(text, 3).span() == compiled.search(text, 3).span()
    assert pattern.fullmatch("abc9") is not None and pattern.fullmatch("abc9-") is None
    assert [m.span() for m in pattern.finditer(text, 1, 12)] == [m.span() for m in compiled.finditer(text, 1, 12)]
    assert pattern.findall(text) == compiled.findall(text)
    assert pattern.sub("x", text, 2) == compiled.sub("x", text, 2)
    assert pattern.split(text, 1) == compiled.split(text, 1)
    assert (pattern.flags, pattern.groups, pattern.groupindex) == (compiled.flags, compiled.groups, compiled.groupindex)
    copied = copy.copy(pattern)
    assert copied.match(text).span() == compiled.match(text).span()
