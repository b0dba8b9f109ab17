"""Task: phase 2, run the configured consolidator under the lease heartbeat (`consolidate.steps.run_consolidation`).

Input: the pass's context (its workspace, which consolidator, limits, the lease). Output: the
`ConsolidationOutcome` (stop reason, steps, usage, files changed, ownership lost). Side effect: the
memory files in the workspace; the lease renewed while it runs.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.consolidate.steps import LeaseHeartbeat, run_consolidation
from codex_memories.runtime import Phase2Context, consolidator


def lease_heartbeat(context: Phase2Context) -> LeaseHeartbeat:
    """The renewal of the phase-2 lease while a step waits (the agent, a paused review)."""
    settings = context.config.settings
    return LeaseHeartbeat(
        context.store,
        ownership_token=context.lease.ownership_token,
        lease_seconds=settings.phase2_lease_seconds,
        period_seconds=settings.phase2_heartbeat_seconds,
    )


@task(name="consolidate", cache_policy=None)
def consolidate(context: Phase2Context) -> ConsolidationOutcome:
    outcome = run_consolidation(context.workspace.path, consolidator(context.config), heartbeat=lease_heartbeat(context))
    get_run_logger().info(
        "%s consolidator: %s after %d steps, %d tool calls",
        outcome.consolidator, outcome.stop_reason, outcome.steps, outcome.tool_calls,
    )
    return outcome
