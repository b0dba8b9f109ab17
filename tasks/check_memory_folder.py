"""Task: before phase 1 changes anything, the memory folder takes writes and was built with this
state DB (`codex_memories.memory_folder.identity.check_memory_folder`).

Raises `MemoryRootNotWritable` (a read-only folder fails here, not after the extractions) or
`StateDbMismatch` (a fresh or different state DB would re-extract every session into a folder it
did not build; `codex-memories run --rebuild-state` rebinds it). Returns how the folder is bound.
"""

from prefect import get_run_logger, task

from codex_memories.memory_folder.identity import check_memory_folder as check
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.state.db import shown_db_url


@task(name="check-memory-folder", cache_policy=None)
def check_memory_folder(config: RuntimeConfig) -> str:
    """The memory folder is writable and belongs to this state DB."""
    url = config.settings.resolved_db_url
    outcome = check(open_store(url), memory_root(config), rebuild=False, db_shown=shown_db_url(url))
    get_run_logger().info("memory folder: writable, state DB %s", outcome.value)
    return outcome.value
