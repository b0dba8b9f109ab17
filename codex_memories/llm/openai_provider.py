"""Stage-1 extraction through the official `openai` client, against any OpenAI-compatible server.

Two API modes:
- `responses` (default): `POST /v1/responses` with the system prompt as `instructions`, one user
  message, and the strict JSON schema as `text.format` (spec 1.7).
- `chat`: `POST /v1/chat/completions` with a system and a user message and the schema as
  `response_format`, for servers without the Responses API (vLLM, Ollama, ...).

The client is built with `max_retries=0`: retrying is the Prefect task's job, and a hidden retry
loop here would multiply the wait and the bill. Errors are mapped onto the three provider errors
of `codex_memories.llm.base`; their reasons name the HTTP status and error code, never the key,
the prompt or the model's text. No state besides the client; safe to share between threads.
"""

from __future__ import annotations

import json
import threading
import time
from enum import StrEnum
from types import SimpleNamespace
from typing import Any

import openai
from pydantic import SecretStr

from codex_memories.llm.base import (
    ExtractionRequest,
    ExtractionResponse,
    InvalidModelOutput,
    ModelProviderError,
    ModelRequestError,
    ModelTimeoutError,
    TokenUsage,
    TransientModelError,
)
from codex_memories.llm.rate_limits import RateLimitSnapshot, snapshot_from_headers
from codex_memories.llm.schema import STAGE1_SCHEMA_NAME, Stage1OutputError, parse_stage1_output, stage1_output_schema
from codex_memories.llm.usage import chat_usage, responses_usage

PROVIDER_NAME = "openai"

# The client refuses to start without a key; a local server usually ignores it.
LOCAL_SERVER_PLACEHOLDER_KEY = "no-key-configured"


class ApiMode(StrEnum):
    responses = "responses"
    chat = "chat"


class OpenAIExtractionProvider:
    name = PROVIDER_NAME

    def __init__(
        self,
        *,
        api_key: SecretStr | None,
        base_url: str | None,
        model: str,
        api_mode: ApiMode | str = ApiMode.responses,
        timeout_seconds: float = 120.0,
        reasoning_effort: str | None = None,
    ) -> None:
        if api_key is None and not base_url:
            raise ValueError("the openai provider needs an API key or a base URL")
        if not model:
            raise ValueError("the openai provider needs a model name")
        self.model = model
        self.api_mode = ApiMode(api_mode)
        self.reasoning_effort = reasoning_effort or None
        self._rate_limits: RateLimitSnapshot | None = None
        self._rate_limits_lock = threading.Lock()
        self._client = openai.OpenAI(
            api_key=api_key.get_secret_value() if api_key is not None else LOCAL_SERVER_PLACEHOLDER_KEY,
            base_url=base_url or None,
            timeout=timeout_seconds,
            max_retries=0,
        )
        self._warm_client()

    def _warm_client(self) -> None:
        """Imports, once and in this thread, the resource module of the API mode, which the client
        imports lazily on its first call: left to the first call, the first wave's threads each did
        it at once under the GIL (measured for benchmarks/README.md "Phase-1 efficiency"). The
        answer's own parsing needs no warm-up (`_answer_fields`). No request is sent."""
        if self.api_mode is ApiMode.responses:
            self._client.responses  # noqa: B018 - the lazy resource import is the point
        else:
            self._client.chat  # noqa: B018 - the lazy resource import is the point

    def last_rate_limits(self) -> RateLimitSnapshot | None:
        """The rate limits the server reported with our newest response (the guard's first signal)."""
        with self._rate_limits_lock:
            return self._rate_limits

    def _record_rate_limits(self, headers: Any) -> None:
        if not headers:
            return
        snapshot = snapshot_from_headers(dict(headers.items()), time.time())
        if snapshot is None:
            return
        with self._rate_limits_lock:
            if self._rate_limits is None or snapshot.observed_at >= self._rate_limits.observed_at:
                self._rate_limits = snapshot

    def extract(self, request: ExtractionRequest) -> ExtractionResponse:
        model = request.model or self.model
        if self.api_mode is ApiMode.responses:
            text, usage = self._call_responses(request, model)
        else:
            text, usage = self._call_chat(request, model)
        try:
            extraction = parse_stage1_output(text)
        except Stage1OutputError as error:
            raise InvalidModelOutput(str(error)) from None
        return ExtractionResponse(extraction=extraction, usage=usage, provider=self.name, model=model)

    def _call_responses(self, request: ExtractionRequest, model: str) -> tuple[str, TokenUsage]:
        optional: dict[str, Any] = {}
        if self.reasoning_effort:
            optional["reasoning"] = {"effort": self.reasoning_effort}
        try:
            raw = self._client.responses.with_raw_response.create(
                model=model,
                instructions=request.system_prompt.text,
                input=[
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": request.user_prompt.text}],
                    }
                ],
                text={
                    "format": {
                        "type": "json_schema",
                        "name": STAGE1_SCHEMA_NAME,
                        "schema": stage1_output_schema(),
                        "strict": True,
                    }
                },
                # Transcripts are private: ask the server not to keep the exchange.
                store=False,
                **optional,
            )
            self._record_rate_limits(raw.headers)
            response = _answer_fields(raw)
        except openai.APIError as error:
            self._record_rate_limits(getattr(getattr(error, "response", None), "headers", None))
            raise classify_api_error(error, "responses") from None
        except ValueError:
            # The client could not decode the body (an HTML error page behind a proxy, say).
            raise InvalidModelOutput("responses: server response is not JSON") from None
        return _responses_text(response), responses_usage(response)

    def _call_chat(self, request: ExtractionRequest, model: str) -> tuple[str, TokenUsage]:
        optional: dict[str, Any] = {}
        if self.reasoning_effort:
            optional["reasoning_effort"] = self.reasoning_effort
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=model,
                messages=[
                    {"role": "system", "content": request.system_prompt.text},
                    {"role": "user", "content": request.user_prompt.text},
                ],
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        "name": STAGE1_SCHEMA_NAME,
                        "schema": stage1_output_schema(),
                        "strict": True,
                    },
                },
                **optional,
            )
            self._record_rate_limits(raw.headers)
            completion = _answer_fields(raw)
        except openai.APIError as error:
            self._record_rate_limits(getattr(getattr(error, "response", None), "headers", None))
            raise classify_api_error(error, "chat.completions") from None
        except ValueError:
            # The client could not decode the body (an HTML error page behind a proxy, say).
            raise InvalidModelOutput("chat.completions: server response is not JSON") from None
        return _chat_text(completion), chat_usage(completion)


def classify_api_error(error: openai.APIError, endpoint: str) -> ModelProviderError:
    """One of the provider errors for an `openai` client error (extraction and agent alike)."""
    # APITimeoutError is a subclass of APIConnectionError; both mean "try again later".
    if isinstance(error, openai.APITimeoutError):
        return ModelTimeoutError(f"{endpoint}: timeout")
    if isinstance(error, openai.APIConnectionError):
        return TransientModelError(f"{endpoint}: connection error")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        reason = f"{endpoint}: HTTP {status}{_error_details(error)}"
        if status == 429 or status >= 500 or isinstance(error, (openai.RateLimitError, openai.InternalServerError)):
            return TransientModelError(reason)
        return ModelRequestError(reason)
    # APIResponseValidationError and friends: the server answered with something unreadable.
    return InvalidModelOutput(f"{endpoint}: unreadable server response ({type(error).__name__})")


def _error_details(error: openai.APIStatusError) -> str:
    # Only the structured code/type/param fields: the free-text message can echo parts of the key.
    details = [str(value) for value in (error.code, error.type, error.param) if isinstance(value, str) and value]
    if not details:
        return ""
    return " (" + ", ".join(detail[:60] for detail in details) + ")"


def _answer_fields(raw: Any) -> Any:
    """The answer's JSON as nested attribute objects, which is all `_responses_text`,
    `_chat_text` and the usage readers look at (by `getattr`, so a missing field reads as absent).
    Not `raw.parse()`: the client's parser builds a pydantic `TypeAdapter` for the output union of
    every answer (its cache misses on the annotated type), several milliseconds of CPU per answer
    under the GIL on the path that frees an extraction slot (py-spy, benchmarks/README.md
    "Phase-1 efficiency"). A body that is not JSON raises ValueError, as `raw.parse()` did."""
    return json.loads(raw.http_response.content, object_hook=lambda fields: SimpleNamespace(**fields))


def _responses_text(response: Any) -> str:
    status = getattr(response, "status", None)
    if status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        why = getattr(details, "reason", None) or "unknown reason"
        raise InvalidModelOutput(f"responses: incomplete output ({why})")
    if getattr(response, "error", None):
        raise InvalidModelOutput(f"responses: response carries an error ({getattr(response.error, 'code', 'unknown')})")
    pieces: list[str] = []
    refused = False
    for item in getattr(response, "output", None) or []:
        if getattr(item, "type", None) != "message":
            continue
        for part in getattr(item, "content", None) or []:
            part_type = getattr(part, "type", None)
            if part_type == "output_text":
                pieces.append(getattr(part, "text", "") or "")
            elif part_type == "refusal":
                refused = True
    if refused and not pieces:
        raise InvalidModelOutput("responses: the model refused")
    if not pieces:
        raise InvalidModelOutput("responses: no output text")
    return "".join(pieces)


def _chat_text(completion: Any) -> str:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise InvalidModelOutput("chat.completions: no choices")
    choice = choices[0]
    if getattr(choice, "finish_reason", None) == "length":
        raise InvalidModelOutput("chat.completions: incomplete output (length)")
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    if not content:
        if getattr(message, "refusal", None):
            raise InvalidModelOutput("chat.completions: the model refused")
        raise InvalidModelOutput("chat.completions: no output text")
    return content
