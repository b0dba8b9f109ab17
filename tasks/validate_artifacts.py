"""Task: phase 2 step 10, validate the consolidated files (`memory_folder.workspace.validate_artifacts`).

Output: the problems found (empty when valid); symlinks found are removed and reported.
"""

from prefect import task

from codex_memories.memory_folder.workspace import validate_artifacts as validate
from codex_memories.runtime import Phase2Context


@task(name="validate-artifacts", cache_policy=None)
def validate_artifacts(context: Phase2Context) -> list[str]:
    return validate(context.workspace.path)
