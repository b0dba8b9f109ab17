"""Phase-2 consolidators: the interface, and the model agent behind it.

The caller picks a `Consolidator` by provider name (`runtime.consolidator`) and calls
`consolidate(root_dir, prompt=..., should_continue=...)` on a local memory root whose inputs are
already synced; it gets a `ConsolidationOutcome` back. `AgentConsolidator` runs
`codex_memories.consolidate.agent` with the prompt from `build_consolidation_prompt`; the offline
`HeuristicConsolidator` lives in `consolidate.heuristic`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

import openai

from codex_memories import paths
from codex_memories.consolidate.agent import (
    DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TOTAL_TOKENS,
    DEFAULT_TIMEOUT_SECONDS,
    run_consolidation_agent,
)
from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.llm.openai_provider import ApiMode
from codex_memories.prompts import RenderedPrompt, render_prompt

CONSOLIDATION_TEMPLATE = "consolidation"
CONSOLIDATION_EXTENSIONS_TEMPLATE = "consolidation_extensions"
AGENT_CONSOLIDATOR_NAME = "openai"


@runtime_checkable
class Consolidator(Protocol):
    name: str

    def consolidate(
        self, root_dir: Path, *, prompt: RenderedPrompt | None, should_continue: Callable[[], bool]
    ) -> ConsolidationOutcome: ...



class AgentConsolidator:
    """The model agent of `codex_memories.consolidate.agent` over the official `openai` client."""

    name = AGENT_CONSOLIDATOR_NAME

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        api_mode: ApiMode | str = ApiMode.responses,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_total_tokens: int = DEFAULT_MAX_TOTAL_TOKENS,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.client = client
        self.model = model
        self.api_mode = ApiMode(api_mode)
        self.max_steps = max_steps
        self.max_total_tokens = max_total_tokens
        self.timeout_seconds = timeout_seconds

    def consolidate(
        self, root_dir: Path, *, prompt: RenderedPrompt | None = None, should_continue: Callable[[], bool] = lambda: True
    ) -> ConsolidationOutcome:
        rendered = prompt if prompt is not None else build_consolidation_prompt(Path(root_dir))
        run = run_consolidation_agent(
            Path(root_dir),
            client=self.client,
            model=self.model,
            api_mode=self.api_mode,
            prompt=rendered,
            max_steps=self.max_steps,
            max_total_tokens=self.max_total_tokens,
            timeout_seconds=self.timeout_seconds,
            should_continue=should_continue,
        )
        return ConsolidationOutcome(
            completed=run.completed,
            stop_reason=run.stop_reason,
            steps=run.steps,
            tool_calls=run.tool_calls,
            usage=run.usage,
            files_changed=sorted(set(run.files_written) | set(run.files_deleted)),
            refused_calls=run.refused_calls,
            final_message=run.final_message,
            error=run.error,
        )


def build_consolidation_prompt(root_dir: Path) -> RenderedPrompt:
    """The agent's prompt for this root; the extensions block only when `extensions/` exists; the
    entries a later statement replaced (`conflicts.render_replaced_entries`), named explicitly."""
    # Imported here: the heuristic consolidator imports this module for its outcome type, and it
    # owns how `raw_memories.md` is read into entries (one reader for both consolidators).
    from codex_memories.consolidate.heuristic import replaced_entries_block

    root = Path(root_dir)
    extensions = root / paths.EXTENSIONS_DIR
    has_extensions = extensions.is_dir() and not extensions.is_symlink()
    block = render_prompt(CONSOLIDATION_EXTENSIONS_TEMPLATE).text if has_extensions else ""
    return render_prompt(
        CONSOLIDATION_TEMPLATE,
        memory_root=str(root),
        workspace_diff_file=paths.WORKSPACE_DIFF_FILE,
        extensions_block=block,
        replaced_entries_block=replaced_entries_block(root),
    )

