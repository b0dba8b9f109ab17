"""Task: phase 2 step 1, claim the global consolidation lease (`consolidate.steps.claim_global_lock`).

Input: the configuration, `force` (skips the cooldown and lifts a failure's backoff, never the
lease) and, in a retried flow run, its id (the backoff or lease an earlier attempt of it left does
not apply), and whether to wait `phase2_stage1_wait_seconds` for extractions in flight (a
backfill does not). A backoff left by a failure that ran with other settings is lifted too
(`MemoryStore.lift_global_phase2_backoff`). Output: the claim result and this worker's id. Side
effect: the global `jobs` row leased when claimed; a lifted backoff is logged.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import claim_global_lock
from codex_memories.runtime import Phase2Context, open_store
from codex_memories.settings import RuntimeConfig, config_fingerprint
from codex_memories.state.records import Phase2ClaimResult
from codex_memories_tasks.claim import worker_id


@task(name="claim-global-lock", cache_policy=None)
def claim_lock(
    config: RuntimeConfig, force: bool, retried_flow_run: str | None = None, wait_for_stage1: bool = True
) -> tuple[Phase2ClaimResult, str]:
    worker = worker_id()
    settings = config.settings
    store = open_store(settings.resolved_db_url)
    lifted = store.lift_global_phase2_backoff(force=force, settings_fingerprint=settings_fingerprint(config))
    if lifted is not None:
        get_run_logger().info("%s", lifted)
    result = claim_global_lock(
        store,
        worker_id=worker,
        lease_seconds=settings.phase2_lease_seconds,
        cooldown_seconds=settings.phase2_cooldown_seconds,
        force=force,
        stage1_wait_seconds=settings.phase2_stage1_wait_seconds if wait_for_stage1 else 0.0,
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


def settings_fingerprint(config: RuntimeConfig) -> str:
    """The settings a phase-2 pass runs with, short: a failure's backoff holds back only a run
    with the same ones (`codex_memories.state.phase2.tag_failure_with_settings`)."""
    return config_fingerprint(config)[:12]
