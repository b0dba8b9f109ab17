import json

import pytest
from pydantic import SecretStr

from codex_memories.llm import (
    ExtractionProvider,
    build_extraction_provider,
    resolve_provider_name,
)
from codex_memories.llm.heuristic import HeuristicProvider
from codex_memories.llm.openai_provider import OpenAIExtractionProvider
from tests.llm.test_openai_provider import VALID_ANSWER, make_request
from tests.support.openai_server import ScriptedReply, running_openai_server


@pytest.mark.parametrize(
    ("requested", "api_key", "base_url", "expected"),
    [
        (None, None, None, "heuristic"),
        (None, SecretStr(""), "", "heuristic"),
        (None, SecretStr("sk-x"), None, "openai"),
        (None, None, "http://127.0.0.1:8000/v1", "openai"),
        ("heuristic", SecretStr("sk-x"), None, "heuristic"),
        ("openai", None, "http://localhost:11434/v1", "openai"),
        ("OpenAI", None, None, "openai"),
    ],
)
def test_provider_is_heuristic_only_when_nothing_is_configured_and_explicit_requests_win(requested, api_key, base_url, expected):
    assert resolve_provider_name(requested, api_key, base_url) == expected


def test_unknown_provider_name_is_an_error():
    with pytest.raises(ValueError, match="unknown model provider"):
        resolve_provider_name("anthropic", None, None)


def common(**overrides):
    values = {"api_key": None, "base_url": None, "model": "gpt-test", "api_mode": "responses", "timeout_seconds": 5.0, "reasoning_effort": None}
    values.update(overrides)
    return values


def test_factory_builds_the_heuristic_provider():
    provider = build_extraction_provider("heuristic", **common())
    assert isinstance(provider, HeuristicProvider)
    assert isinstance(provider, ExtractionProvider)


def test_explicit_openai_without_key_or_url_fails_loudly():
    with pytest.raises(ValueError, match="API key or a base URL"):
        build_extraction_provider("openai", **common())


def test_factory_builds_a_working_openai_provider_in_chat_mode():
    with running_openai_server(lambda request: ScriptedReply.output_text(json.dumps(VALID_ANSWER))) as server:
        provider = build_extraction_provider("openai", **common(base_url=server.base_url, api_mode="chat"))
        assert isinstance(provider, OpenAIExtractionProvider)
        response = provider.extract(make_request())
        assert server.requests[0].path == "/v1/chat/completions"
    assert response.extraction.rollout_slug == "add-jitter"


def test_unknown_api_mode_is_rejected():
    with pytest.raises(ValueError):
        build_extraction_provider("openai", **common(base_url="http://127.0.0.1:1/v1", api_mode="completions"))
