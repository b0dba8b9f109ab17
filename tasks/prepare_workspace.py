from prefect import get_run_logger, task

from codex_memories.phase2 import prepare_workspace as prepare
from codex_memories.storage import LocalWorkspace


@task(name="prepare-workspace", cache_policy=None)
def prepare_workspace(workspace: LocalWorkspace) -> list[str]:
    removed_links = prepare(workspace)
    for link in removed_links:
        get_run_logger().warning("removed symlink inside the memory root: %s", link)
    return removed_links
