"""Task: move the consolidation out of the memory folder before a rebuild
(`codex_memories.consolidate.rebuild.set_aside_consolidation`).

Raises `ResetRefused` while phase 2 holds its lease and `RebuildRefused` for an object-store or
missing root. Not idempotent on its own: the rebuild flow settles every set-aside it makes.
"""

from prefect import task

from codex_memories.consolidate.rebuild import SetAside
from codex_memories.consolidate.rebuild import set_aside_consolidation as set_aside
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="set-aside-consolidation", cache_policy=None)
def set_aside_consolidation(config: RuntimeConfig) -> SetAside:
    """The consolidated files go to a sibling folder; the notes and extensions stay."""
    return set_aside(open_store(config.settings.resolved_db_url), config.settings.resolved_memory_root)
