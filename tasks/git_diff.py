"""Tasks: phase 2 steps 6 and 8, the diff against the git baseline and the diff file the consolidator reads.

Outputs: the `WorkspaceDiff` and whether the workspace is settled (no change, valid artifacts);
then `phase2_workspace_diff.md` written into the workspace.
"""

from prefect import task

from codex_memories.consolidate.steps import diff_and_settle, write_diff_file
from codex_memories.consolidate.workspace import WorkspaceDiff
from codex_memories.storage import LocalWorkspace


@task(name="git-diff", cache_policy=None)
def git_diff(workspace: LocalWorkspace) -> tuple[WorkspaceDiff, bool]:
    """The diff against the baseline, and whether the workspace is settled (no change, valid)."""
    return diff_and_settle(workspace)


@task(name="write-diff-file", cache_policy=None)
def write_workspace_diff(workspace: LocalWorkspace, diff: WorkspaceDiff) -> None:
    write_diff_file(workspace.path, diff)
