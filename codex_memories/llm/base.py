"""The model-provider interface for stage-1 extraction, and the errors every provider raises.

A provider turns one `ExtractionRequest` into one `ExtractionResponse` (a strictly parsed
`Stage1Extraction` plus token usage) or raises exactly one of:

- `TransientModelError`: worth retrying soon (connection refused, timeout, HTTP 429, HTTP 5xx).
  The Prefect task retries it with backoff.
- `ModelRequestError`: the request itself is wrong (HTTP 400/401/403/404, ...). Becomes the
  `failed_model_request` outcome.
- `InvalidModelOutput`: the model answered but not with a valid extraction (not JSON, schema
  mismatch, unknown fields, refusal). Becomes the `failed_invalid_output` outcome.

Every error carries a short `reason` meant for `jobs.last_error` and logs; it never contains the
API key, the prompt or the model's raw text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from codex_memories.llm.schema import Stage1Extraction
from codex_memories.outcomes import Outcome
from codex_memories.prompts import RenderedPrompt

MAX_REASON_CHARS = 300


class TokenUsage(BaseModel):
    """Token counts of one or more model calls; `+` sums them field by field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    reasoning_output_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_output_tokens=self.reasoning_output_tokens + other.reasoning_output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


ZERO_USAGE = TokenUsage()


@dataclass(frozen=True)
class ExtractionRequest:
    thread_id: str
    rollout_path: str
    cwd: str
    model: str
    system_prompt: RenderedPrompt
    user_prompt: RenderedPrompt
    transcript_items: list[dict[str, Any]] = field(default_factory=list)
    # When the session happened (UTC): what "this week" or "until Friday" in it counts from.
    session_time: datetime | None = None


@dataclass(frozen=True)
class ExtractionResponse:
    extraction: Stage1Extraction
    usage: TokenUsage
    provider: str
    model: str


class ModelProviderError(Exception):
    """Base of the three provider errors. `reason` is short and safe to store and log."""

    outcome: Outcome = Outcome.failed_model_request

    def __init__(self, reason: str) -> None:
        self.reason = _shorten(reason)
        super().__init__(self.reason)


class TransientModelError(ModelProviderError):
    """Connection error, timeout, rate limit or server error: retry later."""

    outcome = Outcome.failed_model_request


class ModelTimeoutError(TransientModelError):
    """The request timed out (a transient error; the agent also checks its own deadline)."""


class ModelRequestError(ModelProviderError):
    """The server rejected the request for good (bad request, auth, unknown model)."""

    outcome = Outcome.failed_model_request


class InvalidModelOutput(ModelProviderError):
    """The model's answer is not a valid stage-1 extraction."""

    outcome = Outcome.failed_invalid_output


@runtime_checkable
class ExtractionProvider(Protocol):
    name: str

    def extract(self, request: ExtractionRequest) -> ExtractionResponse: ...


def _shorten(reason: str) -> str:
    one_line = " ".join(reason.split())
    if len(one_line) <= MAX_REASON_CHARS:
        return one_line
    return one_line[: MAX_REASON_CHARS - 3] + "..."
