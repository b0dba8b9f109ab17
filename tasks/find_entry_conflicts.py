"""Task: contradicting memory entries in the synced inputs (`codex_memories.consolidate.steps.find_entry_conflicts`).

Reads `raw_memories.md` only; returns each conflict with the newer entry that wins, for the run
artifact. Writes nothing.
"""

from prefect import task

from codex_memories.consolidate.conflicts import Conflict
from codex_memories.consolidate.steps import find_entry_conflicts as find
from codex_memories.runtime import Phase2Context


@task(name="find-entry-conflicts", cache_policy=None)
def find_entry_conflicts(context: Phase2Context) -> list[Conflict]:
    return find(context.workspace.path)
