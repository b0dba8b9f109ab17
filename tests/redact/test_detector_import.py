"""detect-secrets is imported only when a text passes one of its plugins' hints and gates, and the
plugins' rules are the same whether their list comes from the record or from the import."""

from __future__ import annotations

import json
import subprocess
import sys

from codex_memories.redact import detector, engine, redact_secrets
from tests.support.secret_formats import ordinary_texts, planted_items, secret_cases, serialize


def test_the_recorded_plugins_are_the_installed_ones() -> None:
    installed = tuple(detector._installed_plugins())
    version = __import__("detect_secrets.__version__", fromlist=["VERSION"]).VERSION
    if version == detector._RECORDED_VERSION:
        assert detector._RECORDED_PLUGINS == installed
    else:
        # Another version: the record is not used (the rules come from the import).
        assert detector.recorded_plugins() is None


def test_every_gate_matches_where_its_plugin_does() -> None:
    texts = [serialize(planted.item) for planted in planted_items(secret_cases(5), 5)]
    texts += list(ordinary_texts(5).values())
    texts += [
        "https://deploy:Zx9pQ2mL7vKw@git.example.com/repo.git",
        "AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\" aws key",
        "0123456789abcdef0123456789abcdef-us12 mailchimp",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        "ACabcdef0123456789abcdef0123456789 SK0123456789abcdef0123456789abcdef",
    ]
    gated = [rule for rule in detector.detector_rules() if rule.gate is not None]
    met = set()
    for rule in gated:
        for text in texts:
            if any(regex.search(text) for regex in rule.regexes):
                met.add(rule.name)
                assert rule.gate.search(text) is not None, (rule.name, text[:200])
    # Every gated plugin met at least one of its own secrets above.
    assert met == {rule.name for rule in gated}


_TEXTS = [
    "- memory_summary.md:7-7 (current project atlas)\n    - note 1: back to the task stack, msg.send, en-us, https://example.com/x, aws docs",
    "twilio ACabcdef0123456789abcdef0123456789 key",
    "https://deploy:Zx9pQ2mL7vKw@git.example.com/repo.git",
    "token ghp_" + "a1B2" * 9,
]


# Redacts the texts on stdin one by one; prints each result and whether detect-secrets was
# imported by then.
_FRESH_PROCESS = """
import json, sys
from codex_memories.redact import redact_secrets
print(json.dumps([[redact_secrets(text), "detect_secrets" in sys.modules] for text in json.load(sys.stdin)]))
"""


def test_a_fresh_process_imports_the_detector_only_for_a_text_that_needs_it() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS], input=json.dumps(_TEXTS), capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    seen = json.loads(completed.stdout)
    # Here detect-secrets is imported, so the table lists what the import finds installed: what
    # the fresh process redacted with the recorded list must be the same.
    detector._installed_plugins()
    assert detector.recorded_plugins() is None
    engine._rules.cache_clear()
    engine._hint_search.cache_clear()
    expected = [redact_secrets(text) for text in _TEXTS]
    assert [redacted for redacted, _ in seen] == expected
    assert expected[1:] != _TEXTS[1:]  # the secrets were there to find
    assert [imported for _, imported in seen] == [False, True, True, True]
