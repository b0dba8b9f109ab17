"""Task: phase 2, mark the global job succeeded for the exact selection it consolidated.

Output: whether this run still owned the job, and whether stage-1 work arrived meanwhile. Side
effects: selection flags on `stage1_outputs`, the watermark and token usage on the global `jobs` row.
"""

from prefect import task

from codex_memories.consolidate.steps import Selection, SuccessMark
from codex_memories.consolidate.steps import mark_succeeded as mark
from codex_memories.runtime import Phase2Context


@task(name="mark-succeeded", cache_policy=None)
def mark_succeeded(context: Phase2Context, selection: Selection, usage: dict[str, int] | None) -> SuccessMark:
    return mark(context.store, lease=context.lease, selection=selection, usage=usage)
