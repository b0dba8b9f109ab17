from prefect import get_run_logger, task

from codex_memories.forget.routes import ForgetAction, forget_deleted_threads as forget
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-deleted-threads", cache_policy=None)
def forget_deleted_threads(config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 4: the memories of threads whose rollout file disappeared."""
    actions = forget(open_store(config.settings.resolved_db_url))
    get_run_logger().info("thread deletion forgot %d stage-1 outputs", len(actions))
    return actions
