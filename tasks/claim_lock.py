"""Task: phase 2 step 1, claim the global consolidation lease (`consolidate.steps.claim_global_lock`).

Input: the configuration, `force` (skips the cooldown, never the lease) and, in a retried flow
run, its id (the backoff or lease an earlier attempt of it left does not apply). Output: the
claim result and this worker's id. Side effect: the global `jobs` row leased when claimed.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from prefect import task

from codex_memories.consolidate.steps import claim_global_lock
from codex_memories.runtime import Phase2Context, open_store
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


@contextmanager
def lease_given_back_if_interrupted(context: Phase2Context) -> Iterator[None]:
    """The global lease goes back at once when the run is interrupted (Ctrl-C, SIGTERM), so the
    next run consolidates without waiting for it to expire. Not a task: no task run can start
    while the flow run is torn down; a lease already released or marked is not touched."""
    try:
        yield
    except BaseException as error:
        if not isinstance(error, Exception):  # an interruption, Prefect's termination signal, an exit
            context.store.release_global_phase2_job(ownership_token=context.lease.ownership_token)
        raise
