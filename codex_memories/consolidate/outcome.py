"""What one consolidation returns, whichever consolidator ran it (the sandboxed agent, the user's
Codex or the offline merge): its own module, so each consolidator and the run report use it
without importing one another."""

from __future__ import annotations

from dataclasses import dataclass

from codex_memories.llm.base import TokenUsage


@dataclass(frozen=True)
class ConsolidationOutcome:
    """One consolidation's result, from the consolidator to the run report (`Phase2Report.record_consolidation`)."""

    completed: bool
    stop_reason: str
    steps: int
    tool_calls: int
    usage: TokenUsage
    files_changed: list[str]
    refused_calls: int = 0
    final_message: str | None = None
    error: str | None = None
    # Set by phase 2 around the call (`consolidate.steps.run_consolidation`): which consolidator
    # ran, and whether the lease was lost while it ran (another worker owns the job then).
    consolidator: str = ""
    ownership_lost: bool = False
