"""Task: phase 2 step 13, make the consolidated tree the new baseline and publish object-store roots.

Side effects: the diff file deleted and the single-commit baseline recreated in the copy, then the
mirror pushed or the staging copy made the live folder. Output: False when a local live folder
changed since it was copied (nothing published). Retried on transient object-store errors.
"""

from prefect import task

from codex_memories.consolidate.steps import publish_workspace
from codex_memories.runtime import Phase2Context
from codex_memories_tasks.storage_retries import (
    STORAGE_RETRIES,
    STORAGE_RETRY_DELAYS_SECONDS,
    retry_transient_storage_errors,
)


@task(
    name="reset-baseline",
    cache_policy=None,
    retries=STORAGE_RETRIES,
    retry_delay_seconds=STORAGE_RETRY_DELAYS_SECONDS,
    retry_condition_fn=retry_transient_storage_errors,
)
def reset_baseline(context: Phase2Context) -> bool:
    """Delete the diff file, recreate the single-commit baseline, publish the copy; False when the
    live folder changed meanwhile and nothing was published."""
    return publish_workspace(context.workspace)
