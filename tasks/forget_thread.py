from prefect import task

from codex_memories.forget.routes import ForgetAction, forget_thread as forget
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-thread", cache_policy=None)
def forget_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 4 on request: one thread's memory, and no re-extraction."""
    action = forget(open_store(config.settings.resolved_db_url), thread_id, reason="forgotten by the forget flow")
    return [action] if action else []
