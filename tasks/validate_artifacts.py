from prefect import task

from codex_memories.storage import LocalWorkspace
from codex_memories.consolidate.workspace import validate_artifacts as validate


@task(name="validate-artifacts", cache_policy=None)
def validate_artifacts(workspace: LocalWorkspace) -> list[str]:
    return validate(workspace.path)
