"""Task: phase 2 step 2, pull an object-store root and prepare the workspace (`memory_folder.workspace.prepare_workspace`).

Output: the symlinks removed (each logged). Side effects: the layout, ad-hoc instructions seeded,
a usable git baseline. Retried on transient object-store errors.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import pull_and_prepare_workspace
from codex_memories.runtime import Phase2Context
from codex_memories_tasks.storage_retries import (
    STORAGE_RETRIES,
    STORAGE_RETRY_DELAYS_SECONDS,
    retry_transient_storage_errors,
)


@task(
    name="prepare-workspace",
    cache_policy=None,
    retries=STORAGE_RETRIES,
    retry_delay_seconds=STORAGE_RETRY_DELAYS_SECONDS,
    retry_condition_fn=retry_transient_storage_errors,
)
def prepare_workspace(context: Phase2Context) -> list[str]:
    removed_links = pull_and_prepare_workspace(context.workspace, from_scratch=context.from_scratch)
    for link in removed_links:
        get_run_logger().warning("removed symlink inside the memory root: %s", link)
    return removed_links
