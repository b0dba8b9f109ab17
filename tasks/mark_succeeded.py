from prefect import task

from codex_memories.consolidate.steps import Phase2Lease, Selection, SuccessMark, mark_succeeded as mark
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="mark-succeeded", cache_policy=None)
def mark_succeeded(
    config: RuntimeConfig, lease: Phase2Lease, selection: Selection, usage: dict[str, int] | None
) -> SuccessMark:
    return mark(open_store(config.settings.resolved_db_url), lease=lease, selection=selection, usage=usage)
