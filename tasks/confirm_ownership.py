"""Task: phase 2, re-check the lease before anything irreversible (one more renewal of it).

Output: True while this run still owns the global job.
"""

from prefect import task

from codex_memories.runtime import Phase2Context


@task(name="confirm-ownership", cache_policy=None)
def confirm_ownership(context: Phase2Context) -> bool:
    return context.store.heartbeat_global_phase2_job(
        ownership_token=context.lease.ownership_token,
        lease_seconds=context.config.settings.phase2_lease_seconds,
    )
