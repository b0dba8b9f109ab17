"""Task: forgetting route 4, threads whose rollout file disappeared (`codex_memories.forget.threads`).

Deletes their stage-1 memory, writes one `forget_audit` row each and returns the actions.
Idempotent: a rerun finds nothing more to forget.
"""

from prefect import get_run_logger, task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.threads import forget_deleted_threads as forget
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-deleted-threads", cache_policy=None)
def forget_deleted_threads(config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 4: the memories of threads whose rollout file disappeared."""
    store = open_store(config.settings.resolved_db_url)
    actions = record_actions(store, forget(store))
    get_run_logger().info("thread deletion forgot %d stage-1 outputs", len(actions))
    return actions
