"""The user's durable statements, whatever the language or lead-in (issue 34): kept in their words,
with the turn that said them; questions, requests, chatter, past events and one-offs are not rules."""

from datetime import UTC, date, datetime

import pytest

from codex_memories.extract.lexicons import language_of
from codex_memories.extract.rules import (
    NARRATION,
    ONE_OFF,
    OPEN_ENDED_TEMPORARY_DAYS,
    QUESTION,
    judge_sentence,
    rules_in_session,
)
from codex_memories.typed_entries import EntryMeta, split_entry, with_meta

TUESDAY = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "sentence",
    [
        "Decision: payments go through Stripe Connect.",
        "Note: the reports job needs the read replica.",
        "FYI the Grafana dashboards live in ops/dashboards.",
        "Staging runs on the eu-central-1 cluster.",
        "Releases are tagged vYYYY.MM.DD.",
        "We review every schema change in the Thursday meeting.",
        "预发环境的 Redis 在 6390 端口。",
        "我们决定前端统一用 Vite。",
        "決定事項：ログは JSON 形式で出力する。",
        "ステージングの Redis は 6390 番ポートです。",
        "결정: 로그는 JSON 형식으로 남깁니다.",
        "스테이징 Redis는 6390 포트입니다.",
        "Nota: el Redis de staging está en el puerto 6390.",
        "Decidimos usar Vite en el frontend.",
        "Obs: o Redis de staging fica na porta 6390.",
        "Decidimos usar Vite no frontend.",
        "Pour info, le Redis de staging est sur le port 6390.",
        "On a décidé d'utiliser Vite pour le frontend.",
        "Hinweis: Das Staging-Redis läuft auf Port 6390.",
        "Wir haben beschlossen, im Frontend Vite zu nutzen.",
        "К сведению: Redis на стейджинге слушает порт 6390.",
        "Мы решили использовать Vite во фронтенде.",
    ],
)
def test_a_durable_statement_is_kept_in_the_users_words_in_every_language(sentence: str) -> None:
    judgement = judge_sentence(sentence, TUESDAY)
    assert judgement.rules, judgement.verdict
    assert judgement.rules[0].text == sentence
    assert not judgement.rules[0].temporary


@pytest.mark.parametrize(
    "sentence",
    [
        "Which port does the worker use?",
        "Update the changelog for this release.",
        "Great, thanks a lot!",
        "The e2e suite crashed twice this morning.",
        "哪个端口是给 worker 用的？",
        "帮我更新一下 changelog。",
        "ワーカーはどのポートを使っていますか？",
        "ありがとうございます、助かりました。",
        "워커는 어떤 포트를 써요?",
        "¿Qué puerto usa el worker?",
        "Actualiza el changelog para esta versión.",
        "Qual porta o worker usa?",
        "Atualiza o changelog desta versão.",
        "Quel port utilise le worker ?",
        "Merci beaucoup, c'est parfait.",
        "Welchen Port nutzt der Worker?",
        "Danke dir, passt so.",
        "Какой порт использует воркер?",
        "Спасибо большое, всё заработало.",
    ],
)
def test_a_question_a_request_or_chatter_is_not_kept_in_any_language(sentence: str) -> None:
    assert judge_sentence(sentence, TUESDAY).rules == ()


@pytest.mark.parametrize(
    "sentence",
    [
        "Only for this release, skip the smoke tests.",
        "Just today, merge without the second review.",
        "这次提交先跳过 lint。",
        "今回だけ lint を飛ばしてください。",
        "이번만 lint를 건너뛰세요.",
        "Solo por hoy, haz merge sin la segunda revisión.",
        "Só desta vez, pode pular o lint.",
        "Cette fois, saute le lint.",
        "Nur heute ohne zweites Review mergen.",
        "В этот раз пропусти линтер.",
    ],
)
def test_a_one_off_never_becomes_a_rule(sentence: str) -> None:
    judgement = judge_sentence(sentence, TUESDAY)
    assert judgement.rules == ()
    assert judgement.verdict == ONE_OFF


def test_a_one_off_beside_a_standing_rule_leaves_only_the_standing_rule() -> None:
    judgement = judge_sentence("Always sign your commits; only for this commit, skip the hooks.", TUESDAY)
    assert [rule.text for rule in judgement.rules] == ["Always sign your commits"]
    assert not judgement.rules[0].temporary


@pytest.mark.parametrize(
    ("sentence", "standing", "for_now"),
    [
        ("我们决定以后都用 uv，旧的 requirements.txt 先别删。", "我们决定以后都用 uv", "旧的 requirements.txt 先别删。"),
        ("We moved the API to FastAPI for good, just don't delete the Flask app yet.", "We moved the API to FastAPI for good", "just don't delete the Flask app yet."),
    ],
)
def test_a_permanent_decision_is_not_made_temporary_by_a_not_yet_beside_it(sentence: str, standing: str, for_now: str) -> None:
    rules = judge_sentence(sentence, TUESDAY).rules
    assert [(rule.text, rule.temporary) for rule in rules] == [(standing, False), (for_now, True)]
    assert rules[1].expires == date(2026, 12, 1 + OPEN_ENDED_TEMPORARY_DAYS)


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("Never bump the Postgres major version by hand, we lost a weekend to it last time.", "we lost a weekend to it last time"),
        ("Nunca actualices Postgres a mano, la última vez perdimos un fin de semana.", "la última vez perdimos un fin de semana"),
    ],
)
def test_a_reason_in_the_past_tense_does_not_make_the_rule_a_past_event(sentence: str, reason: str) -> None:
    rules = judge_sentence(sentence, TUESDAY).rules
    assert len(rules) == 1 and rules[0].text == sentence and not rules[0].temporary
    assert rules[0].reason == reason


def test_a_sentence_that_only_narrates_the_past_is_not_kept() -> None:
    assert judge_sentence("Last night we rolled back the release twice.", TUESDAY).verdict == NARRATION


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("今回だけ main に直接プッシュしていいです。", "ja"),
        ("このリポジトリでは常に pnpm を使う。", "ja"),
        ("这个仓库一律用 pnpm。", "zh"),
        ("이 저장소에서는 항상 pnpm을 씁니다.", "ko"),
        ("В этом репозитории всегда pnpm.", "ru"),
        ("Nunca hagas deploy los viernes.", "es"),
    ],
)
def test_japanese_is_never_read_with_the_chinese_table(text: str, language: str) -> None:
    assert language_of(text) == language


def test_a_question_without_a_question_mark_is_not_kept() -> None:
    assert judge_sentence("I wonder whether staging still uses port 6390", TUESDAY).verdict == QUESTION


def test_a_correction_in_a_later_turn_replaces_the_first_statement() -> None:
    turns = [
        "Note: the staging Redis is on port 6390.",
        "Let's look at the worker logs.",
        "Actually, the staging Redis is on port 6391, not 6390.",
    ]
    rules = rules_in_session(turns, TUESDAY)
    assert [(rule.text, rule.turn) for rule in rules] == [("Actually, the staging Redis is on port 6391, not 6390.", 3)]


def test_a_restated_value_in_a_later_turn_replaces_the_first_one() -> None:
    turns = ["The local API listens on port 8087.", "Fix the import error.", "The local API listens on port 8090."]
    assert [rule.text for rule in rules_in_session(turns, TUESDAY)] == ["The local API listens on port 8090."]


def test_two_unrelated_statements_both_stay_with_their_turns() -> None:
    turns = ["Never push to main.", "Actually, also run the linter before every commit."]
    assert [rule.turn for rule in rules_in_session(turns, TUESDAY)] == [1, 2]


def test_the_turn_of_an_entry_survives_its_suffix() -> None:
    line = with_meta('"never push to main"', EntryMeta(type="constraint", weight=1.0, turn=3))
    assert "turn=3" in line
    assert split_entry(line)[1] == EntryMeta(type="constraint", weight=1.0, turn=3)


def test_an_entry_turn_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="turn"):
        EntryMeta(type="fact", weight=0.5, turn=0)
