"""Task: phase 2 step 11, re-check the lease before anything irreversible (`consolidate.steps.confirm_ownership`).

Output: True while this run still owns the global job. Read-only (renews nothing).
"""

from prefect import task

from codex_memories.consolidate.steps import Phase2Lease
from codex_memories.consolidate.steps import confirm_ownership as confirm
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="confirm-ownership", cache_policy=None)
def confirm_ownership(config: RuntimeConfig, lease: Phase2Lease) -> bool:
    return confirm(
        open_store(config.settings.resolved_db_url),
        lease=lease,
        lease_seconds=config.settings.phase2_lease_seconds,
    )
