"""Token usage out of OpenAI API responses, for the extraction provider and the agent alike.

Missing fields (local servers often omit details) count as 0; a missing total is input + output.
"""

from __future__ import annotations

from typing import Any

from codex_memories.llm.base import TokenUsage


def responses_usage(response: Any) -> TokenUsage:
    """Usage of a Responses API answer (`input_tokens`, `output_tokens`, their details)."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return TokenUsage()
    return _usage(
        input_tokens=getattr(usage, "input_tokens", 0),
        cached_input_tokens=getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", 0),
        output_tokens=getattr(usage, "output_tokens", 0),
        reasoning_output_tokens=getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", 0),
        total_tokens=getattr(usage, "total_tokens", 0),
    )


def chat_usage(completion: Any) -> TokenUsage:
    """Usage of a chat-completions answer (`prompt_tokens`, `completion_tokens`, their details)."""
    usage = getattr(completion, "usage", None)
    if usage is None:
        return TokenUsage()
    return _usage(
        input_tokens=getattr(usage, "prompt_tokens", 0),
        cached_input_tokens=getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0),
        output_tokens=getattr(usage, "completion_tokens", 0),
        reasoning_output_tokens=getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", 0),
        total_tokens=getattr(usage, "total_tokens", 0),
    )


def _usage(**raw: Any) -> TokenUsage:
    counts = {name: _count(value) for name, value in raw.items()}
    counts["total_tokens"] = counts["total_tokens"] or counts["input_tokens"] + counts["output_tokens"]
    return TokenUsage(**counts)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
