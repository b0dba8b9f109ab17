"""Task: phase 2 step 3, select the top-N stage-1 outputs (`consolidate.steps.select_inputs`).

Output: the `Selection` (refs without payloads, and what left the last selection). Read-only.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import Phase2Lease, Selection, select_inputs
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="select-inputs", cache_policy=None)
def select(config: RuntimeConfig, lease: Phase2Lease) -> Selection:
    selection = select_inputs(
        open_store(config.settings.resolved_db_url),
        lease=lease,
        max_outputs=config.memories.max_raw_memories_for_consolidation,
        max_unused_days=config.memories.max_unused_days,
    )
    get_run_logger().info("selected %d stage-1 outputs", len(selection.refs))
    return selection
