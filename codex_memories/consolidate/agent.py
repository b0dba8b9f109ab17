"""The phase-2 consolidation agent: a tool-calling loop over `MemoryFileTools` (spec 3 step 9).

Contract:
- `run_consolidation_agent` sends the rendered prompt as the only user input with the tool
  definitions of `agent_tools`, executes every function call through `MemoryFileTools.dispatch`,
  and feeds the results back until the model answers without tool calls or a limit is reached.
  It returns an `AgentRun`; it raises only for programming errors (bad arguments). Model
  failures are a `model_error` stop, after up to three retries with backoff for transient ones
  (connection, timeout, 429, 5xx). The model requests themselves are `llm.tool_calls`.
- `should_continue()` is asked before every model call and before every tool call; once it says
  no, the loop stops at once as `ownership_lost` (the caller's lease heartbeat drives it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import openai

from codex_memories.consolidate.agent_tools import MemoryFileTools, chat_tools, responses_tools
from codex_memories.llm.base import ModelProviderError, ModelTimeoutError, TokenUsage, TransientModelError
from codex_memories.llm.openai_provider import ApiMode
from codex_memories.llm.tool_calls import ToolSet, call_model, tool_result_item, user_item
from codex_memories.prompts import RenderedPrompt

DEFAULT_MAX_STEPS = 80
DEFAULT_MAX_TOTAL_TOKENS = 2_000_000
DEFAULT_TIMEOUT_SECONDS = 1_800.0
MAX_TRANSIENT_RETRIES = 3
DEFAULT_RETRY_BACKOFF_SECONDS = (2.0, 4.0, 8.0)
# A single request never waits longer than this, even when the run has more time left.
MAX_REQUEST_TIMEOUT_SECONDS = 600.0

AGENT_TOOLS = ToolSet(responses=responses_tools(), chat=chat_tools())


class AgentStopReason(StrEnum):
    finished = "finished"
    step_limit = "step_limit"
    token_budget = "token_budget"
    timeout = "timeout"
    ownership_lost = "ownership_lost"
    model_error = "model_error"


@dataclass
class AgentRun:
    completed: bool
    stop_reason: AgentStopReason
    steps: int
    tool_calls: int
    tool_calls_by_name: dict[str, int]
    refused_calls: int
    usage: TokenUsage
    final_message: str | None
    files_written: list[str]
    files_deleted: list[str] = field(default_factory=list)
    # Why the model call failed (`model_error`) or the request that timed out; never secret text.
    error: str | None = None


def run_consolidation_agent(
    root_dir: Path,
    *,
    model: str,
    prompt: RenderedPrompt,
    client: openai.OpenAI | None = None,
    client_factory: Callable[[], openai.OpenAI] | None = None,
    api_mode: ApiMode | str = ApiMode.responses,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_total_tokens: int = DEFAULT_MAX_TOTAL_TOKENS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    should_continue: Callable[[], bool] = lambda: True,
    retry_backoff_seconds: Sequence[float] = DEFAULT_RETRY_BACKOFF_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> AgentRun:
    """Let the model consolidate the memory root with `MemoryFileTools` until it is done or a limit hits.

    A step is one model request. Limits are checked before every request: `should_continue()`
    (`ownership_lost`), `max_steps` (`step_limit`), `max_total_tokens` summed over all responses
    (`token_budget`) and `timeout_seconds` of wall time (`timeout`, also when a request times out
    past the deadline). Tool calls of a response that pushed the run over the token budget are
    still executed; no further request is made.
    """
    if (client is None) == (client_factory is None):
        raise ValueError("pass exactly one of client or client_factory")
    if max_steps < 1 or max_total_tokens < 1 or timeout_seconds <= 0:
        raise ValueError("max_steps, max_total_tokens and timeout_seconds must be positive")
    mode = ApiMode(api_mode)
    openai_client = client if client is not None else client_factory()  # type: ignore[misc]
    tools = MemoryFileTools(Path(root_dir))
    conversation: list[dict[str, Any]] = [user_item(mode, prompt.text)]
    started = clock()
    steps = 0
    usage = TokenUsage()

    def finish(reason: AgentStopReason, final_message: str | None = None, error: str | None = None) -> AgentRun:
        return AgentRun(
            completed=reason is AgentStopReason.finished,
            stop_reason=reason,
            steps=steps,
            tool_calls=sum(tools.calls_by_name.values()),
            tool_calls_by_name=dict(sorted(tools.calls_by_name.items())),
            refused_calls=tools.refused_calls,
            usage=usage,
            final_message=final_message,
            files_written=list(tools.files_written),
            files_deleted=list(tools.files_deleted),
            error=error,
        )

    while True:
        if not should_continue():
            return finish(AgentStopReason.ownership_lost)
        if steps >= max_steps:
            return finish(AgentStopReason.step_limit)
        if usage.total_tokens >= max_total_tokens:
            return finish(AgentStopReason.token_budget)
        if clock() - started >= timeout_seconds:
            return finish(AgentStopReason.timeout)

        attempt = 0
        while True:
            remaining = timeout_seconds - (clock() - started)
            try:
                turn = call_model(
                    openai_client, mode, model, conversation, AGENT_TOOLS, min(remaining, MAX_REQUEST_TIMEOUT_SECONDS)
                )
                break
            except ModelProviderError as failure:
                if isinstance(failure, ModelTimeoutError) and clock() - started >= timeout_seconds:
                    return finish(AgentStopReason.timeout, error=failure.reason)
                if not isinstance(failure, TransientModelError) or attempt >= MAX_TRANSIENT_RETRIES:
                    return finish(AgentStopReason.model_error, error=failure.reason)
                backoff = retry_backoff_seconds[min(attempt, len(retry_backoff_seconds) - 1)] if retry_backoff_seconds else 0.0
                attempt += 1
                if clock() - started + backoff >= timeout_seconds:
                    return finish(AgentStopReason.timeout, error=failure.reason)
                sleep(backoff)
                if not should_continue():
                    return finish(AgentStopReason.ownership_lost, error=failure.reason)

        steps += 1
        usage = usage + turn.usage
        conversation.extend(turn.history_items)
        if turn.incomplete is not None:
            return finish(AgentStopReason.model_error, final_message=turn.text, error=turn.incomplete)
        if not turn.calls:
            return finish(AgentStopReason.finished, final_message=turn.text)
        for call in turn.calls:
            if not should_continue():
                return finish(AgentStopReason.ownership_lost)
            result = tools.dispatch(call.name, call.arguments)
            conversation.append(tool_result_item(mode, call.call_id, result))


