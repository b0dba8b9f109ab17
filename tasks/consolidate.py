"""Task: phase 2 step 9, run the configured consolidator under the lease heartbeat (`consolidate.steps.run_consolidation`).

Inputs: the prepared workspace, the configuration (which consolidator, limits) and the lease.
Output: a `ConsolidationStep` (stop reason, steps, usage, files changed, ownership lost). Side
effect: the memory files in the workspace; the lease renewed while it runs.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import ConsolidationStep, LeaseHeartbeat, Phase2Lease, run_consolidation
from codex_memories.runtime import consolidator, open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


def lease_heartbeat(config: RuntimeConfig, lease: Phase2Lease) -> LeaseHeartbeat:
    """The renewal of the phase-2 lease while a step waits (the agent, a paused review)."""
    settings = config.settings
    return LeaseHeartbeat(
        open_store(settings.resolved_db_url),
        ownership_token=lease.ownership_token,
        lease_seconds=settings.phase2_lease_seconds,
        period_seconds=settings.phase2_heartbeat_seconds,
    )


@task(name="consolidate", cache_policy=None)
def consolidate(workspace: LocalWorkspace, config: RuntimeConfig, lease: Phase2Lease) -> ConsolidationStep:
    step = run_consolidation(workspace.path, consolidator(config), heartbeat=lease_heartbeat(config, lease))
    get_run_logger().info(
        "%s consolidator: %s after %d steps, %d tool calls",
        step.consolidator, step.stop_reason, step.steps, step.tool_calls,
    )
    return step
