"""Task: phase 2 step 10, validate the consolidated files (`consolidate.workspace.validate_artifacts`).

Output: the problems found (empty when valid); symlinks found are removed and reported.
"""

from prefect import task

from codex_memories.consolidate.workspace import validate_artifacts as validate
from codex_memories.runtime import Phase2Context


@task(name="validate-artifacts", cache_policy=None)
def validate_artifacts(context: Phase2Context) -> list[str]:
    return validate(context.workspace.path)
