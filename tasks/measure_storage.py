"""Task: phase 2, the size of the memory folder a pass leaves (`memory_folder.inputs.storage_bytes`), for the run report.

Read-only.
"""

from prefect import task

from codex_memories.memory_folder.inputs import storage_bytes
from codex_memories.runtime import Phase2Context


@task(name="measure-storage", cache_policy=None)
def measure_storage(context: Phase2Context) -> int:
    return storage_bytes(context.workspace.path)
