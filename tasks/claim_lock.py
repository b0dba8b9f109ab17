"""Task: phase 2 step 1, claim the global consolidation lease (`consolidate.steps.claim_global_lock`).

Input: the configuration, `force` (skips the cooldown, never the lease) and, in a retried flow
run, its id (the backoff or lease an earlier attempt of it left does not apply). Output: the
claim result and this worker's id. Side effect: the global `jobs` row leased when claimed.
"""

from prefect import task

from codex_memories.consolidate.steps import claim_global_lock
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import Phase2ClaimResult
from codex_memories_tasks.claim import worker_id


@task(name="claim-global-lock", cache_policy=None)
def claim_lock(config: RuntimeConfig, force: bool, retried_flow_run: str | None = None) -> tuple[Phase2ClaimResult, str]:
    worker = worker_id()
    settings = config.settings
    result = claim_global_lock(
        open_store(settings.resolved_db_url),
        worker_id=worker,
        lease_seconds=settings.phase2_lease_seconds,
        cooldown_seconds=settings.phase2_cooldown_seconds,
        force=force,
        stage1_wait_seconds=settings.phase2_stage1_wait_seconds,
        retried_flow_run=retried_flow_run,
    )
    return result, worker
