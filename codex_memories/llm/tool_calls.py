"""Model requests of a tool-calling conversation (the consolidation agent), over the `openai` client.

Contract:
- `user_item` / `tool_result_item` build conversation items in the shape of the API mode.
- `call_model(client, mode, model, conversation, tools, timeout)` sends one request with the
  whole conversation (Responses API: `store=False`, stateless, so it works with servers that keep
  no response state and never leaves the memory contents stored server-side; reasoning items are
  not resent) and returns a `ModelTurn`: the text, the function calls, the token usage and the
  items to append so the next request carries this turn. An incomplete answer without calls is
  `ModelTurn.incomplete`, not an exception.
- Client errors are the provider errors of `llm.base`, classified once for every caller by
  `openai_provider.classify_api_error` (`ModelTimeoutError` / `TransientModelError` are worth a
  retry; the others are final).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai

from codex_memories.llm.base import InvalidModelOutput, TokenUsage
from codex_memories.llm.openai_provider import ApiMode, classify_api_error
from codex_memories.llm.usage import chat_usage, responses_usage


@dataclass(frozen=True)
class FunctionCall:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelTurn:
    text: str | None
    calls: list[FunctionCall]
    usage: TokenUsage
    # Items to append to the conversation so the next request carries this turn.
    history_items: list[dict[str, Any]]
    incomplete: str | None = None


@dataclass(frozen=True)
class ToolSet:
    """One set of function tools in both API shapes."""

    responses: Sequence[dict[str, Any]]
    chat: Sequence[dict[str, Any]]


def user_item(mode: ApiMode, text: str) -> dict[str, Any]:
    if mode is ApiMode.responses:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"role": "user", "content": text}


def tool_result_item(mode: ApiMode, call_id: str, result: str) -> dict[str, Any]:
    if mode is ApiMode.responses:
        return {"type": "function_call_output", "call_id": call_id, "output": result}
    return {"role": "tool", "tool_call_id": call_id, "content": result}


def call_model(
    client: openai.OpenAI,
    mode: ApiMode,
    model: str,
    conversation: list[dict[str, Any]],
    tools: ToolSet,
    timeout: float,
) -> ModelTurn:
    request_client = client.with_options(timeout=max(timeout, 1.0), max_retries=0)
    endpoint = "responses" if mode is ApiMode.responses else "chat.completions"
    try:
        if mode is ApiMode.responses:
            response = request_client.responses.create(
                model=model, input=conversation, tools=list(tools.responses), store=False
            )
            return _responses_turn(response)
        completion = request_client.chat.completions.create(model=model, messages=conversation, tools=list(tools.chat))
        return _chat_turn(completion)
    except openai.APIError as error:
        raise classify_api_error(error, endpoint) from None
    except ValueError:
        # The client could not decode the body (an HTML error page behind a proxy, say).
        raise InvalidModelOutput(f"{endpoint}: server response is not JSON") from None


def _responses_turn(response: Any) -> ModelTurn:
    texts: list[str] = []
    calls: list[FunctionCall] = []
    history: list[dict[str, Any]] = []
    for item in getattr(response, "output", None) or []:
        kind = getattr(item, "type", None)
        if kind == "message":
            text = "".join(
                getattr(part, "text", "") or ""
                for part in getattr(item, "content", None) or []
                if getattr(part, "type", None) == "output_text"
            )
            if text:
                texts.append(text)
                history.append({"role": "assistant", "content": text})
        elif kind == "function_call":
            call = FunctionCall(call_id=item.call_id, name=item.name, arguments=item.arguments or "")
            calls.append(call)
            history.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
        # Reasoning items are not resent: without server-side storage they cannot be referenced.
    incomplete = None
    if getattr(response, "status", None) == "incomplete" and not calls:
        details = getattr(response, "incomplete_details", None)
        incomplete = f"responses: incomplete output ({getattr(details, 'reason', None) or 'unknown reason'})"
    return ModelTurn(
        text="\n".join(texts) if texts else None,
        calls=calls,
        usage=responses_usage(response),
        history_items=history,
        incomplete=incomplete,
    )


def _chat_turn(completion: Any) -> ModelTurn:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return ModelTurn(None, [], chat_usage(completion), [], incomplete="chat.completions: no choices")
    choice = choices[0]
    message = choice.message
    calls = [
        FunctionCall(call_id=tool_call.id, name=tool_call.function.name, arguments=tool_call.function.arguments or "")
        for tool_call in (getattr(message, "tool_calls", None) or [])
        if getattr(tool_call, "type", "function") == "function"
    ]
    assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
    if calls:
        assistant["tool_calls"] = [
            {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in calls
        ]
    incomplete = None
    if getattr(choice, "finish_reason", None) == "length" and not calls:
        incomplete = "chat.completions: incomplete output (length)"
    return ModelTurn(
        text=message.content or None,
        calls=calls,
        usage=chat_usage(completion),
        history_items=[assistant],
        incomplete=incomplete,
    )
