"""Model providers for stage-1 extraction, chosen in one place.

- `openai`: the official client against OpenAI or any OpenAI-compatible server (vLLM, Ollama, ...).
- `codex`: the user's own Codex CLI (`codex exec --ephemeral --output-schema`): their ChatGPT
  login or their configured `model_provider`, no API key of ours.
- `heuristic`: the offline, rule-based extractor (`extract.heuristic`: its rules are extraction's),
  used automatically when neither of the others is available, so the pipeline runs end to end
  with no network.

`resolve_provider` is the one resolver (`RuntimeConfig.provider_choice` calls it): an explicit
request wins; `auto` is `openai` when an API key or a base URL is set, else `codex` when a
logged-in Codex was detected (`codex_runner.detect_codex_login`), else `heuristic`; the choice
carries a one-line reason. `build_extraction_provider` builds openai from plain values (nothing
here reads the environment); the codex and heuristic providers are built by `runtime.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from codex_memories.llm.base import (
    ExtractionProvider,
    ExtractionRequest,
    ExtractionResponse,
    InvalidModelOutput,
    ModelProviderError,
    ModelRequestError,
    TokenUsage,
    TransientModelError,
)
from codex_memories.llm.codex_runner import CodexLogin
from codex_memories.llm.schema import STAGE1_OUTPUT_SCHEMA, Stage1Extraction

OPENAI_PROVIDER = "openai"
CODEX_PROVIDER = "codex"
HEURISTIC_PROVIDER = "heuristic"
PROVIDER_NAMES = (OPENAI_PROVIDER, CODEX_PROVIDER, HEURISTIC_PROVIDER)

__all__ = [
    "CODEX_PROVIDER",
    "ProviderChoice",
    "resolve_provider",
    "HEURISTIC_PROVIDER",
    "OPENAI_PROVIDER",
    "PROVIDER_NAMES",
    "STAGE1_OUTPUT_SCHEMA",
    "ExtractionProvider",
    "ExtractionRequest",
    "ExtractionResponse",
    "InvalidModelOutput",
    "ModelProviderError",
    "ModelRequestError",
    "Stage1Extraction",
    "TokenUsage",
    "TransientModelError",
    "build_extraction_provider",
    "resolve_provider_name",
]


@dataclass(frozen=True)
class ProviderChoice:
    name: str
    reason: str


def resolve_provider(
    requested: str | None,
    api_key: SecretStr | str | None,
    base_url: str | None,
    codex_login: CodexLogin | None = None,
) -> ProviderChoice:
    """The one provider resolver. `codex_login` is the result of `detect_codex_login` (None: not
    probed, i.e. no usable Codex)."""
    if requested and requested.strip().lower() != "auto":
        name = requested.strip().lower()
        if name not in PROVIDER_NAMES:
            raise ValueError(f"unknown model provider {requested!r}; expected one of {', '.join(PROVIDER_NAMES)}")
        return ProviderChoice(name, f"requested explicitly (provider={name})")
    if _has_value(api_key):
        return ProviderChoice(OPENAI_PROVIDER, "auto: an API key is set")
    if base_url and base_url.strip():
        return ProviderChoice(OPENAI_PROVIDER, "auto: a base URL is set")
    if codex_login is not None and codex_login.available:
        return ProviderChoice(CODEX_PROVIDER, f"auto: no API key or base URL; logged-in Codex found ({codex_login.reason})")
    why = codex_login.reason if codex_login is not None else "Codex not probed"
    return ProviderChoice(HEURISTIC_PROVIDER, f"auto: no API key, base URL or logged-in Codex ({why})")


def resolve_provider_name(
    requested: str | None,
    api_key: SecretStr | str | None,
    base_url: str | None,
    codex_login: CodexLogin | None = None,
) -> str:
    """An explicit request wins; otherwise openai, codex, heuristic in that order of availability."""
    return resolve_provider(requested, api_key, base_url, codex_login).name


def build_extraction_provider(
    provider: str,
    *,
    api_key: SecretStr | None,
    base_url: str | None,
    model: str,
    api_mode: str = "responses",
    timeout_seconds: float = 120.0,
    reasoning_effort: str | None = None,
) -> ExtractionProvider:
    name = resolve_provider_name(provider, api_key, base_url)
    if name == CODEX_PROVIDER:
        raise ValueError("the codex provider is built by codex_memories.runtime (it needs a Codex runner)")
    if name == HEURISTIC_PROVIDER:
        # It lives with extraction (its rules are extraction's: `extract.heuristic`), above this package.
        raise ValueError("the heuristic provider is built by codex_memories.runtime (extract.heuristic.HeuristicProvider)")
    # Imported here so the heuristic path never loads the openai package.
    from codex_memories.llm.openai_provider import OpenAIExtractionProvider

    return OpenAIExtractionProvider(
        api_key=api_key if _has_value(api_key) else None,
        base_url=base_url,
        model=model,
        api_mode=api_mode,
        timeout_seconds=timeout_seconds,
        reasoning_effort=reasoning_effort,
    )


def _has_value(api_key: SecretStr | str | None) -> bool:
    if api_key is None:
        return False
    raw = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    return bool(raw.strip())
