from prefect import task

from codex_memories.consolidate.steps import restore_folder as restore
from codex_memories.consolidate.workspace import WorkspaceDiff
from codex_memories.storage import LocalWorkspace


@task(name="restore-folder", cache_policy=None)
def restore_folder(workspace: LocalWorkspace, diff: WorkspaceDiff) -> bool:
    """Put back the folder a failed consolidation found (its half-written or rejected files go)."""
    return restore(workspace, diff)
