from prefect import task

from codex_memories.phase2 import publish_workspace
from codex_memories.storage import LocalWorkspace


@task(name="reset-baseline", cache_policy=None)
def reset_baseline(workspace: LocalWorkspace) -> None:
    """Delete the diff file, recreate the single-commit baseline, publish object-store roots."""
    publish_workspace(workspace)
