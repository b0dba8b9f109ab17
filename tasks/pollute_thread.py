from prefect import task

from codex_memories.forget.routes import ForgetAction, pollute_thread as pollute
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="pollute-thread", cache_policy=None)
def pollute_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 5: memory mode `polluted` (phase 2 enqueued if it was selected)."""
    action = pollute(open_store(config.settings.resolved_db_url), thread_id, reason="marked polluted by the forget flow")
    return [action] if action else []
