import json
import socket

import pytest
from pydantic import SecretStr

from codex_memories.llm.base import (
    ExtractionRequest,
    InvalidModelOutput,
    ModelRequestError,
    TokenUsage,
    TransientModelError,
)
from codex_memories.llm.openai_provider import OpenAIExtractionProvider
from codex_memories.llm.schema import STAGE1_OUTPUT_SCHEMA
from codex_memories.prompts import render_stage_one_prompts
from tests.support.openai_server import ScriptedReply, running_openai_server

API_KEY = "sk-testkeytestkeytestkeytestkey0000"
VALID_ANSWER = {"rollout_summary": "# Added jitter\n", "rollout_slug": "add-jitter", "raw_memory": "---\ndescription: d\n---\n"}


def make_request(model: str = "gpt-test") -> ExtractionRequest:
    system, user = render_stage_one_prompts(
        rollout_path="/sessions/rollout-1.jsonl",
        rollout_cwd="/src/billing-api",
        rollout_transcript="[user] Add jitter to the webhook backoff.",
    )
    return ExtractionRequest(
        thread_id="thread-1",
        rollout_path="/sessions/rollout-1.jsonl",
        cwd="/src/billing-api",
        model=model,
        system_prompt=system,
        user_prompt=user,
        transcript_items=[],
    )


def make_provider(base_url: str, api_mode: str = "responses", **overrides) -> OpenAIExtractionProvider:
    settings = {
        "api_key": SecretStr(API_KEY),
        "base_url": base_url,
        "model": "gpt-test",
        "api_mode": api_mode,
        "timeout_seconds": 5.0,
        "reasoning_effort": None,
    }
    settings.update(overrides)
    return OpenAIExtractionProvider(**settings)


def answer(text: str, usage: dict[str, int] | None = None):
    return lambda request: ScriptedReply(text=text, usage=usage)


def test_responses_mode_sends_strict_schema_instructions_and_one_user_message():
    usage = {"input_tokens": 120, "cached_input_tokens": 20, "output_tokens": 30, "reasoning_output_tokens": 5}
    with running_openai_server(answer(json.dumps(VALID_ANSWER), usage)) as server:
        request = make_request()
        response = make_provider(server.base_url).extract(request)
        recorded = server.requests

    assert len(recorded) == 1
    sent = recorded[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    body = sent.body
    assert body["model"] == "gpt-test"
    assert body["instructions"] == request.system_prompt.text
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": request.user_prompt.text}]}
    ]
    assert body["text"]["format"] == {
        "type": "json_schema",
        "name": "stage1_memory",
        "schema": STAGE1_OUTPUT_SCHEMA,
        "strict": True,
    }
    assert "Add jitter to the webhook backoff." in body["input"][0]["content"][0]["text"]
    assert "reasoning" not in body
    assert body.get("stream") in (None, False)

    assert response.extraction.rollout_slug == "add-jitter"
    assert response.extraction.raw_memory == VALID_ANSWER["raw_memory"]
    assert response.provider == "openai"
    assert response.model == "gpt-test"
    assert response.usage == TokenUsage(
        input_tokens=120, cached_input_tokens=20, output_tokens=30, reasoning_output_tokens=5, total_tokens=150
    )


def test_responses_mode_sends_reasoning_effort_only_when_configured():
    with running_openai_server(answer(json.dumps(VALID_ANSWER))) as server:
        make_provider(server.base_url, reasoning_effort="low").extract(make_request())
        body = server.requests[0].body
    assert body["reasoning"] == {"effort": "low"}


def test_chat_mode_sends_system_and_user_messages_with_strict_response_format():
    usage = {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0}
    with running_openai_server(answer(json.dumps(VALID_ANSWER), usage)) as server:
        request = make_request()
        response = make_provider(server.base_url, api_mode="chat").extract(request)
        sent = server.requests[0]

    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": request.system_prompt.text},
        {"role": "user", "content": request.user_prompt.text},
    ]
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "stage1_memory", "schema": STAGE1_OUTPUT_SCHEMA, "strict": True},
    }
    assert "reasoning_effort" not in sent.body
    assert response.extraction.rollout_summary == VALID_ANSWER["rollout_summary"]
    assert response.usage.input_tokens == 50
    assert response.usage.output_tokens == 10
    assert response.usage.total_tokens == 60


def test_request_model_overrides_the_provider_default():
    with running_openai_server(answer(json.dumps(VALID_ANSWER))) as server:
        response = make_provider(server.base_url).extract(make_request(model="other-model"))
        assert server.requests[0].body["model"] == "other-model"
    assert response.model == "other-model"


def test_default_test_server_handler_gives_a_valid_extraction_in_both_modes():
    with running_openai_server() as server:
        for mode in ("responses", "chat"):
            response = make_provider(server.base_url, api_mode=mode).extract(make_request())
            assert response.extraction.raw_memory.startswith("---\n")
            assert "cwd: /src/billing-api" in response.extraction.raw_memory


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
def test_building_the_provider_warms_the_client_without_sending_a_request(api_mode):
    with running_openai_server() as server:
        provider = make_provider(server.base_url, api_mode=api_mode)
        assert server.requests == []  # the warm-up is local: no request, nothing billed
        assert provider.extract(make_request()).extraction.raw_memory.startswith("---\n")
        assert len(server.requests) == 1


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (500, TransientModelError),
        (502, TransientModelError),
        (503, TransientModelError),
        (429, TransientModelError),
        (400, ModelRequestError),
        (401, ModelRequestError),
        (404, ModelRequestError),
        (422, ModelRequestError),
    ],
)
def test_http_errors_map_to_transient_or_permanent_errors_without_client_retries(api_mode, status, error_type):
    with running_openai_server(lambda request: ScriptedReply.http_error(status)) as server:
        with pytest.raises(error_type) as raised:
            make_provider(server.base_url, api_mode=api_mode).extract(make_request())
        assert len(server.requests) == 1, "the client must not retry: retries are Prefect's job"
    assert f"HTTP {status}" in raised.value.reason


def test_error_reasons_never_echo_the_server_message_or_the_key():
    echo = f"Incorrect API key provided: {API_KEY}"
    with running_openai_server(lambda request: ScriptedReply.http_error(401, echo)) as server:
        with pytest.raises(ModelRequestError) as raised:
            make_provider(server.base_url).extract(make_request())
    assert API_KEY not in raised.value.reason
    assert API_KEY not in str(raised.value)
    assert raised.value.__cause__ is None


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
@pytest.mark.parametrize(
    "text",
    [
        "Sure! Here is your memory.",
        json.dumps({**VALID_ANSWER, "confidence": "high"}),
        json.dumps({"rollout_summary": "s"}),
        "",
    ],
)
def test_garbage_or_off_schema_output_is_invalid_model_output(api_mode, text):
    with running_openai_server(answer(text)) as server:
        with pytest.raises(InvalidModelOutput):
            make_provider(server.base_url, api_mode=api_mode).extract(make_request())


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
@pytest.mark.parametrize("body", ['{"id": "resp_1", "object": "response"}', "<html>bad gateway</html>", "[1, 2]"])
def test_an_unreadable_server_body_is_invalid_output_not_success(api_mode, body):
    with running_openai_server(lambda request: ScriptedReply.raw(body)) as server:
        with pytest.raises(InvalidModelOutput):
            make_provider(server.base_url, api_mode=api_mode).extract(make_request())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
def test_connection_refused_is_transient(api_mode):
    provider = make_provider(f"http://127.0.0.1:{free_port()}/v1", api_mode=api_mode)
    with pytest.raises(TransientModelError, match="connection error"):
        provider.extract(make_request())


def test_timeout_is_transient():
    with running_openai_server(answer(json.dumps(VALID_ANSWER)), latency_seconds=2.0) as server:
        with pytest.raises(TransientModelError, match="timeout"):
            make_provider(server.base_url, timeout_seconds=0.3).extract(make_request())


def test_a_local_server_needs_no_api_key():
    with running_openai_server(answer(json.dumps(VALID_ANSWER))) as server:
        response = make_provider(server.base_url, api_key=None).extract(make_request())
    assert response.extraction.rollout_slug == "add-jitter"


def test_neither_key_nor_base_url_is_a_configuration_error():
    with pytest.raises(ValueError, match="API key or a base URL"):
        OpenAIExtractionProvider(api_key=None, base_url=None, model="m")
