"""Task: phase 2, select the top-N stage-1 outputs (`consolidate.steps.select_inputs`).

Output: the `Selection` (refs without payloads, and the watermark a success records). Read-only.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import Selection, select_inputs
from codex_memories.runtime import Phase2Context


@task(name="select-inputs", cache_policy=None)
def select(context: Phase2Context) -> Selection:
    memories = context.config.memories
    selection = select_inputs(
        context.store,
        lease=context.lease,
        max_outputs=memories.max_raw_memories_for_consolidation,
        max_unused_days=memories.max_unused_days,
    )
    get_run_logger().info("selected %d stage-1 outputs", len(selection.refs))
    return selection
