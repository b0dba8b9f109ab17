"""Task: phase 2 step 10, validate the consolidated files (`consolidate.workspace.validate_artifacts`).

Output: the problems found (empty when valid); symlinks found are removed and reported.
"""

from prefect import task

from codex_memories.consolidate.workspace import validate_artifacts as validate
from codex_memories.storage import LocalWorkspace


@task(name="validate-artifacts", cache_policy=None)
def validate_artifacts(workspace: LocalWorkspace) -> list[str]:
    return validate(workspace.path)
