"""Later words in one session (issue 34, items 1 to 3): a change of state is a fact, a correction
or a retraction replaces what it corrects, an addition stands beside it, and what was done for a
one-off is not remembered. Sentences written for these tests, not taken from the benchmarks."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from codex_memories.extract.heuristic import extract_heuristically
from codex_memories.extract.rules import asks_one_off, judge_sentence, rules_in_session
from codex_memories.llm.base import ExtractionRequest
from codex_memories.prompts import RenderedPrompt

TUESDAY = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "sentence",
    [
        "we moved the build farm to gradle 8.7 yesterday",
        "the team switched from npm to pnpm",
        "Wir sind letzte Woche auf Kotlin 2.0 umgestiegen.",
        "上周把 CI 镜像升级到 debian-12 了",
        "先週から Ruby 3.3 に移行しました",
        "hemos migrado el servicio de pagos a Go 1.22",
        "мы перешли на Kafka 3.7 в прошлом месяце",
    ],
)
def test_a_change_of_state_is_a_standing_fact_whatever_the_day_it_was_made(sentence: str) -> None:
    judgement = judge_sentence(sentence, TUESDAY)
    assert judgement.verdict == "kept", judgement
    assert not judgement.rules[0].temporary, "the day a change was made does not box the new state"


@pytest.mark.parametrize(
    "sentence",
    [
        "I moved the retry helper into net/retry.go",
        "I renamed parse_cfg to parse_config",
        "yesterday I had to restart the worker twice",
        "I bumped the sleep in that flaky test to 45 to see if it helps",
    ],
)
def test_an_edit_of_the_moment_is_not_a_fact(sentence: str) -> None:
    assert judge_sentence(sentence, TUESDAY).rules == ()


@pytest.mark.parametrize(
    ("turns", "kept", "dropped"),
    [
        (
            [
                "the changelog lives in docs/CHANGES.md",
                "wait, I changed my mind: keep the changelog in CHANGELOG.md at the root",
            ],
            "CHANGELOG.md at the root",
            "docs/CHANGES.md",
        ),
        (
            ["部署统一用 helm 3", "帮我看看这个报错", "等一下，改主意了：部署统一用 kustomize，helm 不要了"],
            "kustomize",
            "部署统一用 helm 3",
        ),
        (
            [
                "on utilise toujours Cypress pour les tests e2e",
                "en fait non, pour les tests e2e on part sur Playwright",
            ],
            "Playwright",
            "Cypress",
        ),
        (
            ["we format SQL with sqlfluff", "sqlfluff is out, sql-formatter replaces it"],
            "sql-formatter",
            "format SQL with sqlfluff",
        ),
        (["메시지 큐는 항상 RabbitMQ 써요", "RabbitMQ는 빼고 NATS로 갑니다"], "NATS", "RabbitMQ 써요"),
    ],
)
def test_a_correction_in_a_later_turn_replaces_what_it_corrects(turns: list[str], kept: str, dropped: str) -> None:
    first = rules_in_session(turns[:1], TUESDAY)
    assert first and dropped in first[0].text, "the first statement is kept when nothing corrects it"
    texts = [rule.text for rule in rules_in_session(turns, TUESDAY)]
    assert any(kept in text for text in texts), texts
    assert not any(dropped in text for text in texts), texts


@pytest.mark.parametrize(
    "turns",
    [
        ["always run shellcheck before you push", "also run the bats tests before pushing"],
        ["推送之前一定要跑 shellcheck", "另外推送之前也要跑 bats 测试"],
        ["Vor jedem Push immer shellcheck laufen lassen.", "Außerdem vor jedem Push die bats-Tests laufen lassen."],
    ],
)
def test_an_addition_stands_beside_the_statement_it_adds_to(turns: list[str]) -> None:
    assert [rule.turn for rule in rules_in_session(turns, TUESDAY)] == [1, 2]


def test_an_unrelated_correction_word_does_not_retire_an_earlier_rule() -> None:
    turns = ["Never push to main.", "Actually, deploys always go out on Thursdays."]
    assert [rule.turn for rule in rules_in_session(turns, TUESDAY)] == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        "skip the e2e suite just this once, the staging env is down",
        "今回だけ lint を飛ばしてビルドしてもらえますか",
        "nur dieses Mal ohne --frozen-lockfile installieren",
    ],
)
def test_a_one_off_is_asked_as_a_statement_or_a_question(text: str) -> None:
    assert asks_one_off(text)


def test_what_was_run_for_a_one_off_is_not_remembered_but_the_rest_is() -> None:
    def message(role: str, text: str) -> dict:
        return {
            "type": "message",
            "role": role,
            "content": [{"type": "input_text" if role == "user" else "output_text", "text": text}],
        }

    def run(call_id: str, command: str) -> list[dict]:
        return [
            {
                "type": "function_call",
                "name": "shell",
                "call_id": call_id,
                "arguments": json.dumps({"command": ["bash", "-lc", command]}),
            },
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": json.dumps({"output": "ok", "metadata": {"exit_code": 0}}),
            },
        ]

    items = [
        message("user", "<environment_context>\n  <cwd>/src/app</cwd>\n</environment_context>"),
        message("user", "the snapshot tests are stale, update them"),
        *run("c1", "npx vitest run -u"),
        message("assistant", "Updated."),
        message("user", "push it with --no-verify just this once, the hook server is down"),
        *run("c2", "git push --no-verify origin HEAD"),
        message("assistant", "Pushed."),
    ]
    prompt = RenderedPrompt(text="unused", template_name="stage_one_input", sha256="0" * 64)
    request = ExtractionRequest(
        thread_id="t",
        rollout_path="/s/t.jsonl",
        cwd="/src/app",
        model="heuristic",
        system_prompt=prompt,
        user_prompt=prompt,
        transcript_items=items,
        session_time=TUESDAY,
    )
    raw_memory = extract_heuristically(request).raw_memory
    assert "npx vitest run -u" in raw_memory
    assert "--no-verify" not in raw_memory
