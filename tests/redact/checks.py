"""The checks the redaction class tests share: a secret gone from every escaping a transcript
gives it, and ordinary text unchanged, raw and inside a tool output."""

from __future__ import annotations

import json

from codex_memories.redact import find_secret_kinds, redact_secrets
from tests.support.secret_formats import leaked


def escapings(text: str) -> tuple[str, ...]:
    """`text` raw, as a JSON string, as a JSON string inside another, and that with non-ASCII kept
    (how a tool call's arguments and a transcript line carry it)."""
    return (text, json.dumps(text), json.dumps(json.dumps(text)), json.dumps(json.dumps(text, ensure_ascii=False)))


def assert_redacted_in_every_escaping(text: str, secret: str) -> None:
    """No window of `secret` survives in any escaping; the JSON stays valid, a second pass
    changes nothing and finds nothing."""
    for form in escapings(text):
        redacted = redact_secrets(form)
        assert not leaked(secret, redacted), (form, redacted)
        if form != text:
            json.loads(redacted)
        assert redact_secrets(redacted) == redacted
        assert find_secret_kinds(redacted) == []


def assert_comes_through(text: str) -> None:
    """Ordinary text is unchanged raw and inside a tool output's JSON."""
    assert redact_secrets(text) == text
    escaped = json.dumps({"output": text})
    assert redact_secrets(escaped) == escaped
