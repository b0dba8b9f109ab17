from prefect import get_run_logger, task

from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="prune-retention", cache_policy=None)
def prune_retention(config: RuntimeConfig) -> list[str]:
    """Forgetting route 1: delete stale, unselected stage-1 rows (spec section 6)."""
    store = open_store(config.settings.resolved_db_url)
    pruned = store.prune_stage1_outputs_for_retention(
        max_unused_days=config.memories.max_unused_days,
        limit=config.settings.prune_batch_size,
    )
    for thread_id in pruned:
        store.record_forget_audit(
            route="retention_prune",
            target=thread_id,
            reason=f"unselected and unused for more than {config.memories.max_unused_days} days",
            removed={"stage1_output": thread_id},
        )
    get_run_logger().info("retention prune removed %d stage-1 outputs", len(pruned))
    return pruned
