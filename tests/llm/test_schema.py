import json

import pytest

from codex_memories.llm.schema import (
    STAGE1_OUTPUT_SCHEMA,
    Stage1Extraction,
    Stage1OutputError,
    parse_stage1_output,
    stage1_output_schema,
)


def test_output_schema_matches_scenario_78_plus_typed_entries_and_task_scopes():
    assert STAGE1_OUTPUT_SCHEMA["type"] == "object"
    assert set(STAGE1_OUTPUT_SCHEMA["required"]) == {"raw_memory", "rollout_slug", "rollout_summary", "memory_entries", "task_scopes"}
    assert STAGE1_OUTPUT_SCHEMA["properties"]["rollout_slug"]["type"] == ["string", "null"]
    assert STAGE1_OUTPUT_SCHEMA["properties"]["rollout_summary"]["type"] == "string"
    assert STAGE1_OUTPUT_SCHEMA["properties"]["raw_memory"]["type"] == "string"
    assert STAGE1_OUTPUT_SCHEMA["additionalProperties"] is False
    assert set(STAGE1_OUTPUT_SCHEMA["properties"]) == set(STAGE1_OUTPUT_SCHEMA["required"])


def test_schema_copies_are_independent_of_the_constant():
    copy = stage1_output_schema()
    copy["properties"]["extra"] = {"type": "string"}
    assert "extra" not in STAGE1_OUTPUT_SCHEMA["properties"]


def test_a_complete_answer_parses():
    parsed = parse_stage1_output(json.dumps({"rollout_summary": "s", "rollout_slug": "a-b", "raw_memory": "m"}))
    assert parsed == Stage1Extraction(rollout_summary="s", rollout_slug="a-b", raw_memory="m")
    assert not parsed.is_empty


@pytest.mark.parametrize("payload", [{"rollout_summary": "s", "raw_memory": "m"}, {"rollout_summary": "s", "raw_memory": "m", "rollout_slug": None}])
def test_slug_may_be_absent_or_null(payload):
    assert parse_stage1_output(json.dumps(payload)).rollout_slug is None


def test_unknown_field_is_rejected_without_quoting_values():
    text = json.dumps({"rollout_summary": "s", "raw_memory": "m", "rollout_slug": None, "notes": "sk-secretsecretsecretsecret"})
    with pytest.raises(Stage1OutputError, match="notes") as raised:
        parse_stage1_output(text)
    assert "sk-secret" not in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "not json at all",
        "```json\n{}\n```",
        "[]",
        '"just a string"',
        json.dumps({"rollout_summary": "s"}),
        json.dumps({"rollout_summary": 1, "raw_memory": "m", "rollout_slug": None}),
        json.dumps({"rollout_summary": "s", "raw_memory": "m", "rollout_slug": 5}),
    ],
)
def test_invalid_answers_are_rejected(text):
    with pytest.raises(Stage1OutputError):
        parse_stage1_output(text)


@pytest.mark.parametrize(
    ("summary", "memory", "empty"),
    [("", "", True), ("s", "", True), ("", "m", True), (" ", " ", False), ("s", "m", False)],
)
def test_empty_means_either_text_field_is_the_empty_string(summary, memory, empty):
    assert Stage1Extraction(rollout_summary=summary, raw_memory=memory).is_empty is empty


# -- typed entries (issue 15) -----------------------------------------------------------------------


def test_typed_entries_are_strict_objects_with_every_field_required():
    item = STAGE1_OUTPUT_SCHEMA["properties"]["memory_entries"]["items"]
    assert item["additionalProperties"] is False
    assert set(item["required"]) == set(item["properties"]) == {"text", "type", "weight", "reason", "expires"}
    assert item["properties"]["type"]["enum"] == ["constraint", "preference", "fact", "command"]


def test_typed_entries_parse_and_fold_into_the_raw_memory_redacted():
    from codex_memories.llm.schema import typed_raw_memory

    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    payload = {
        "rollout_summary": "s",
        "rollout_slug": None,
        "raw_memory": "Preference signals:\n- Use httpx, not requests\n",
        "memory_entries": [
            {"text": "use httpx, not requests", "type": "constraint", "weight": 1, "reason": "", "expires": None},
            {"text": f"the deploy token is {secret}", "type": "fact", "weight": 0.5, "reason": "", "expires": "2026-12-06"},
        ],
    }
    raw = typed_raw_memory(parse_stage1_output(json.dumps(payload)))
    assert "- Use httpx, not requests {memory: type=constraint; weight=1.0}" in raw
    assert secret not in raw and "expires=2026-12-06" in raw


@pytest.mark.parametrize(
    "entry",
    [
        {"text": "x", "type": "rule", "weight": 0.5, "reason": "", "expires": None},
        {"text": "x", "type": "fact", "weight": 1.5, "reason": "", "expires": None},
        {"text": "x", "type": "fact", "weight": 0.5, "reason": "", "expires": "next friday"},
        {"text": "x", "type": "fact", "weight": 0.5, "reason": "", "expires": None, "scope": "user"},
    ],
)
def test_a_bad_typed_entry_is_an_invalid_output(entry):
    payload = {"rollout_summary": "s", "rollout_slug": None, "raw_memory": "m", "memory_entries": [entry]}
    with pytest.raises(Stage1OutputError):
        parse_stage1_output(json.dumps(payload))


# -- task scopes (issue 15) ------------------------------------------------------------------------


def test_task_scopes_are_parsed_in_block_order_and_may_be_absent():
    parsed = parse_stage1_output(
        json.dumps({"rollout_summary": "s", "rollout_slug": None, "raw_memory": "m", "task_scopes": ["project", "user"]})
    )
    assert parsed.task_scopes == ["project", "user"]
    assert parse_stage1_output(json.dumps({"rollout_summary": "s", "raw_memory": "m"})).task_scopes == []
    assert STAGE1_OUTPUT_SCHEMA["properties"]["task_scopes"]["items"]["enum"] == ["user", "project"]


@pytest.mark.parametrize("scopes", [["team"], "user", [1], [None]])
def test_a_task_scope_outside_user_and_project_is_invalid_output(scopes):
    with pytest.raises(Stage1OutputError) as raised:
        parse_stage1_output(json.dumps({"rollout_summary": "s", "raw_memory": "m", "task_scopes": scopes}))
    assert "task_scopes" in str(raised.value)


def test_lone_surrogates_and_nul_in_an_answer_become_storable_text():
    answer = '{"rollout_summary": "a\\ud800b", "rollout_slug": "x-y", "raw_memory": "m\\u0000n"}'
    parsed = parse_stage1_output(answer)
    assert (parsed.rollout_summary, parsed.raw_memory) == ("a\ufffdb", "m\ufffdn")
