"""Tasks: phase 2, the diff against the git baseline and the diff file the consolidator reads.

Outputs: the `WorkspaceDiff` and whether the workspace is settled (no change, valid artifacts);
then `phase2_workspace_diff.md` written into the workspace.
"""

from prefect import task

from codex_memories.consolidate.steps import diff_and_settle
from codex_memories.memory_folder.workspace import WorkspaceDiff, write_workspace_diff_file
from codex_memories.runtime import Phase2Context


@task(name="git-diff", cache_policy=None)
def git_diff(context: Phase2Context) -> tuple[WorkspaceDiff, bool]:
    """The diff against the baseline, and whether the workspace is settled (no change, valid)."""
    return diff_and_settle(context.workspace)


@task(name="write-diff-file", cache_policy=None)
def write_workspace_diff(context: Phase2Context, diff: WorkspaceDiff) -> None:
    write_workspace_diff_file(context.workspace.path, diff)
