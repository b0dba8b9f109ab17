"""Task: phase 2 step 14, mark the global job succeeded for the exact selection it consolidated.

Output: True when this run still owned the job. Side effects: selection flags on
`stage1_outputs`, the watermark and token usage on the global `jobs` row.
"""

from prefect import task

from codex_memories.consolidate.steps import Phase2Lease, Selection, SuccessMark
from codex_memories.consolidate.steps import mark_succeeded as mark
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="mark-succeeded", cache_policy=None)
def mark_succeeded(
    config: RuntimeConfig, lease: Phase2Lease, selection: Selection, usage: dict[str, int] | None
) -> SuccessMark:
    return mark(open_store(config.settings.resolved_db_url), lease=lease, selection=selection, usage=usage)
