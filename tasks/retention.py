"""Task: forgetting route 1, retention prune (`codex_memories.forget.retention`), audited.

Deletes the stale, unselected stage-1 rows (at most `prune_batch_size` per run), writes one
`forget_audit` row each and returns the pruned thread ids, stalest first. Idempotent: a rerun
finds nothing stale left.
"""

from prefect import get_run_logger, task

from codex_memories.forget.audit import record_actions
from codex_memories.forget.retention import prune_stale_outputs
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="prune-retention", cache_policy=None)
def prune_retention(config: RuntimeConfig) -> list[str]:
    """Forgetting route 1: delete stale, unselected stage-1 rows (spec section 6)."""
    store = open_store(config.settings.resolved_db_url)
    pruned = prune_stale_outputs(
        store, max_unused_days=config.memories.max_unused_days, limit=config.settings.prune_batch_size
    )
    actions = record_actions(store, pruned)
    get_run_logger().info("retention prune removed %d stage-1 outputs", len(actions))
    return [action.target for action in actions]
