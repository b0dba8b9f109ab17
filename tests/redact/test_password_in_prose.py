"""A credential handed over in a sentence with no word that announces it (issue 36, round 4's
prose and the blind round 5): it is redacted by its look and its place among words; what only
looks technical in the same kind of sentence comes through."""

from __future__ import annotations

import pytest

from tests.redact.checks import assert_comes_through, assert_redacted_in_every_escaping

SECRETS = [
    ("ok, box is up: ops / {v} — change it after the demo", "Falcon#5512river"),
    ("the webhook still has {v} baked in, rotate it before Friday", "Qm7TnVx2LpR9sKd4WfZ8bHc3Jg"),
    ("数据库先用 admin，{v}，下午我再改", "Pingguo*8841xy"),
    ("Zugang fürs Testsystem: deploy und {v}, bitte nicht weitergeben", "Ahorn.Regen2024!"),
    ("Пробуй {v}, пароль сбросили утром", "Lisa-Vesna7731~"),
    ("la nueva del router es {v} desde ayer", "Gaviota$9917mar"),
]
ORDINARY = [
    "we moved from gpt-4o-mini to Qwen2.5-14B-Instruct for the summaries",
    "the request 01HZX3K8Q2M7V9T4R6N5B1C0DE timed out again",
    "bisect points at 3f9c2ab, full hash 3f9c2ab71e0d4c5b8a6f1e2d3c4b5a69788766554",
    "bump to 2.0.0-beta.3+exp.sha.5114f85 once CI is green",
    "see OrdersController#index and the e2e-Smoke-Tests job",
    "the doc is at docs.google.com/document/d/1AbCdEfGh2IjKlMn3OpQrStUv4WxYz/edit",
    "I rotated the token and put it in 1Password, vault Infra",
    "Llama-3.1-70B-Instruct stays the fallback, x86_64 only",
    "failed_agent: consolidation stopped: model_error [settings 9c41e07d2ab35f68]",
]


@pytest.mark.parametrize(("template", "secret"), SECRETS)
def test_a_credential_among_words_is_redacted(template: str, secret: str) -> None:
    assert_redacted_in_every_escaping(template.format(v=secret), secret)


@pytest.mark.parametrize("text", ORDINARY)
def test_names_ids_and_versions_among_words_come_through(text: str) -> None:
    assert_comes_through(text)
