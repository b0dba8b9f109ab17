from prefect import task

from codex_memories.forget.routes import ForgetAction, disable_thread as disable
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="disable-thread", cache_policy=None)
def disable_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 5: memory mode `disabled` (phase 2 enqueued if it was selected)."""
    action = disable(open_store(config.settings.resolved_db_url), thread_id, reason="disabled by the forget flow")
    return [action] if action else []
