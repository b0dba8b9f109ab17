"""Model providers for stage-1 extraction, chosen in one place.

- `openai`: the official client against OpenAI or any OpenAI-compatible server (vLLM, Ollama, ...).
- `heuristic`: the offline, rule-based extractor, used automatically when neither an API key nor a
  base URL is configured, so the pipeline runs end to end with no network.

`resolve_provider_name` decides which one; `build_extraction_provider` builds it from plain values
(the caller reads them from the settings tree; nothing here reads the environment).
"""

from __future__ import annotations

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
from codex_memories.llm.schema import STAGE1_OUTPUT_SCHEMA, Stage1Extraction

OPENAI_PROVIDER = "openai"
HEURISTIC_PROVIDER = "heuristic"
PROVIDER_NAMES = (OPENAI_PROVIDER, HEURISTIC_PROVIDER)

__all__ = [
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


def resolve_provider_name(requested: str | None, api_key: SecretStr | str | None, base_url: str | None) -> str:
    """An explicit request wins; otherwise `openai` when a key or a base URL is configured, else `heuristic`."""
    if requested:
        name = requested.strip().lower()
        if name not in PROVIDER_NAMES:
            raise ValueError(f"unknown model provider {requested!r}; expected one of {', '.join(PROVIDER_NAMES)}")
        return name
    if _has_value(api_key) or (base_url and base_url.strip()):
        return OPENAI_PROVIDER
    return HEURISTIC_PROVIDER


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
    if name == HEURISTIC_PROVIDER:
        from codex_memories.llm.heuristic import HeuristicProvider

        return HeuristicProvider()
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
