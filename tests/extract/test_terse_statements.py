"""Instructions given without a verb (issue 34): "pnpm over npm", "small diffs, one change per
PR", a bare environment fact ("Redis 7 in staging"), in several languages, are kept in the user's
words; fragments of the same shape that report, ask, thank or box a one-off are not rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from codex_memories.extract.rules import judge_sentence, recognise_rule

SAID_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

KEPT = [
    ("Ruff over flake8.", "preference"),
    ("One migration per PR, no data fixes inside.", "preference"),
    ("Integration tests against a real broker, no mocks.", "preference"),
    ("Poetry only, no pip installs.", "preference"),
    ("Squash-Merges statt Merge-Commits.", "preference"),
    ("Sin console.log en el código de producción.", "preference"),
    ("Pas de dépendances non épinglées.", "preference"),
    ("Только yarn, без npm.", "preference"),
    ("提交信息只用英文。", "preference"),
    ("レビューは一つの PR に一人ずつ。", "preference"),
    ("Redis 7 in staging, Redis 6 in production.", "fact"),
    ("Grafana at grafana.ops.local:3000, VPN only.", "preference"),
]

NOT_RULES = [
    "Lint green, no warnings left.",  # a report
    "Postgres or MySQL for the new service?",  # a question
    "Thanks, not sure it matters.",  # chatter
    "Just for this release: no changelog, no docs.",  # a one-off
    "Yesterday: moved the cache, nothing broken.",  # narration
    "j'ai déplacé le helper en utils/http.py tout à l'heure",  # an edit of the moment
    "только что поправил конфиг в deploy/values.yaml",  # an edit of the moment
    "Commit-Messages bitte auf Deutsch, kurz.",  # no value with a digit: no environment fact
]


@pytest.mark.parametrize(("sentence", "kind"), KEPT)
def test_an_instruction_without_a_verb_is_kept_in_the_users_words(sentence: str, kind: str) -> None:
    rule = recognise_rule(sentence, SAID_AT)
    assert rule is not None, judge_sentence(sentence, SAID_AT)
    assert rule.text == sentence
    assert rule.type == {"preference": "preference", "fact": "fact"}[kind] or rule.type == "constraint"


@pytest.mark.parametrize("sentence", NOT_RULES)
def test_a_fragment_that_reports_asks_or_boxes_a_one_off_is_no_standing_rule(sentence: str) -> None:
    rule = recognise_rule(sentence, SAID_AT)
    assert rule is None or rule.expires is not None, rule


def _session(turns: list[tuple[str, str | None]]) -> list[str]:
    """The quoted preference bullets of a session of (user, assistant) turns, offline."""
    from dataclasses import replace

    from benchmarks.rule_recognition import _ENVIRONMENT, _request, preference_bullets
    from codex_memories.extract.heuristic import extract_heuristically

    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": _ENVIRONMENT}]}]
    for user, assistant in turns:
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]})
        if assistant is not None:
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": assistant}]})
    request = replace(_request("unused"), transcript_items=items)
    return [text for text, _ in preference_bullets(extract_heuristically(request).raw_memory)]


@pytest.mark.parametrize(
    ("question", "answer", "kept"),
    [
        ("Should the export run nightly or on demand?", "Nightly, at 02:00 UTC. Never during business hours.",
         "Nightly, at 02:00 UTC. Never during business hours."),
        ("¿Guardamos las fechas en UTC o en hora local?", "UTC, en ISO 8601. Nunca guardes hora local.",
         "UTC, en ISO 8601. Nunca guardes hora local."),
        ("ログは標準出力とファイルのどちらに出しますか？", "標準出力、JSON 形式で。ファイルには絶対に書かないでください。",
         "標準出力、JSON 形式で。ファイルには絶対に書かないでください。"),
    ],
)
def test_the_answer_to_the_assistants_question_leads_the_rule_said_with_it(question: str, answer: str, kept: str) -> None:
    assert kept in _session([("the export keeps timing out", question), (answer, "Done.")])


def test_without_a_question_or_with_a_reply_that_is_chatter_the_rule_stands_alone() -> None:
    no_question = _session([("the export keeps timing out", "I raised the timeout."), ("Nightly, at 02:00 UTC. Never during business hours.", None)])
    assert no_question == ["Never during business hours."]
    chatter = _session([("fix the flaky test", "Should I commit it?"), ("Yes please. Never push to main though.", None)])
    assert chatter == ["Never push to main though."]
