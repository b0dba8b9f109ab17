import json

import pytest
from pydantic import SecretStr

from codex_memories.extract.heuristic import HeuristicProvider
from codex_memories.llm import (
    ExtractionProvider,
    build_extraction_provider,
    resolve_provider_name,
)
from codex_memories.llm.openai_provider import OpenAIExtractionProvider
from codex_memories.runtime import extraction_provider
from codex_memories.settings import load_runtime_config
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


def test_the_runtime_builds_the_heuristic_provider_and_the_llm_factory_leaves_it_to_the_runtime(tmp_path):
    provider = extraction_provider(load_runtime_config(codex_home=str(tmp_path), provider="heuristic"))
    assert isinstance(provider, HeuristicProvider)
    assert isinstance(provider, ExtractionProvider)
    with pytest.raises(ValueError, match="built by codex_memories.runtime"):
        build_extraction_provider("heuristic", **common())


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


# -- the one resolver, with the codex provider -------------------------------------------------

from codex_memories.llm import resolve_provider  # noqa: E402
from codex_memories.llm.base import ModelRequestError, ModelTimeoutError, TransientModelError  # noqa: E402
from codex_memories.llm.codex_runner import CodexLogin, CodexRun, classify_codex_failure, detect_codex_login  # noqa: E402

LOGGED_IN = CodexLogin(True, "`codex login status` exit 0 (Logged in using ChatGPT)", "/usr/bin/codex")
LOGGED_OUT = CodexLogin(False, "`codex login status` exit 1 (not logged in)", "/usr/bin/codex")


@pytest.mark.parametrize(
    ("requested", "api_key", "base_url", "login", "expected", "reason_part"),
    [
        (None, SecretStr("sk-x"), None, LOGGED_IN, "openai", "an API key is set"),
        ("auto", None, "http://127.0.0.1:8000/v1", LOGGED_IN, "openai", "a base URL is set"),
        ("auto", None, None, LOGGED_IN, "codex", "logged-in Codex found (`codex login status` exit 0"),
        ("auto", None, None, LOGGED_OUT, "heuristic", "not logged in"),
        (None, None, None, None, "heuristic", "Codex not probed"),
        ("codex", SecretStr("sk-x"), None, None, "codex", "requested explicitly"),
        ("heuristic", None, None, LOGGED_IN, "heuristic", "requested explicitly"),
    ],
)
def test_auto_prefers_openai_then_a_logged_in_codex_then_heuristic(requested, api_key, base_url, login, expected, reason_part):
    choice = resolve_provider(requested, api_key, base_url, login)
    assert choice.name == expected
    assert reason_part in choice.reason


def test_settings_use_the_same_resolver(monkeypatch, tmp_path):
    from codex_memories.settings import forget_codex_login_probes, load_runtime_config

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_MEMORIES_PROVIDER", "CODEX_MEMORIES_BASE_URL", "CODEX_MEMORIES_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nname = "m"\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "MY_PROVIDER_KEY"\n'
    )
    monkeypatch.setenv("MY_PROVIDER_KEY", "k")
    forget_codex_login_probes()
    config = load_runtime_config(codex_home=str(home))
    assert (config.provider_name, config.extract_model) == ("codex", "codex-default")
    assert "model_provider 'mine' with its env_key MY_PROVIDER_KEY set" in config.provider_reason
    assert load_runtime_config(codex_home=str(home), extract_model="gpt-x").extract_model == "gpt-x"
    forget_codex_login_probes()


def test_detection_needs_the_binary_and_a_key_for_a_custom_provider(tmp_path):
    (tmp_path / "config.toml").write_text('model_provider = "mine"\n[model_providers.mine]\nname = "m"\nenv_key = "MY_PROVIDER_KEY"\n')
    assert not detect_codex_login(None, tmp_path, {}).available
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'Not logged in'\nexit 1\n")
    fake.chmod(0o755)
    assert detect_codex_login(str(fake), tmp_path, {"MY_PROVIDER_KEY": "k"}).available
    missing_key = detect_codex_login(str(fake), tmp_path, {"PATH": "/usr/bin:/bin"})
    assert not missing_key.available and "exit 1" in missing_key.reason
    fake.write_text("#!/bin/sh\necho 'Logged in using ChatGPT'\nexit 0\n")
    chatgpt = detect_codex_login(str(fake), tmp_path, {"PATH": "/usr/bin:/bin"})
    assert chatgpt.available and "Logged in using ChatGPT" in chatgpt.reason


def _failed(message: str, code: int = 1) -> CodexRun:
    stdout = json.dumps({"type": "turn.failed", "error": {"message": message}})
    return CodexRun(code, stdout, "", 0.5)


@pytest.mark.parametrize(
    ("message", "error_type", "reason_part"),
    [
        ("unexpected status 401 Unauthorized: bad key sk-LEAKED, url: http://127.0.0.1:40123/v1/responses", ModelRequestError, "HTTP 401"),
        ("You've hit your usage limit. Upgrade to Pro or try again later.", ModelRequestError, "quota exhausted"),
        ("Not logged in", ModelRequestError, "not logged in"),
        ("Missing environment variable: `MY_KEY`.", ModelRequestError, "missing environment variable"),
        ("exceeded retry limit, last status: 429 Too Many Requests", TransientModelError, "HTTP 429"),
        ("We're currently experiencing high demand, which may cause temporary errors.", TransientModelError, "connection or server"),
        ("unexpected status 404 Not Found: model gpt-x", ModelRequestError, "HTTP 404"),
    ],
)
def test_codex_failures_become_our_provider_errors_without_quoting_codex(message, error_type, reason_part):
    error = classify_codex_failure(_failed(message), "codex extraction")
    assert type(error) is error_type
    assert reason_part in error.reason
    assert "sk-LEAKED" not in error.reason and "127.0.0.1" not in error.reason


def test_a_timed_out_codex_is_a_timeout():
    error = classify_codex_failure(CodexRun(-15, "", "", 3.2, timed_out=True), "codex extraction")
    assert isinstance(error, ModelTimeoutError) and "process group killed" in error.reason
