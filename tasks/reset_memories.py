from prefect import task

from codex_memories.forget.routes import ForgetAction, reset_memories as reset
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="reset-memories", cache_policy=None)
def reset_memories(config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 7, global reset: every memory row and the memory folder's contents."""
    settings = config.settings
    root = memory_root(config)
    return [reset(open_store(settings.resolved_db_url), root, reason="reset by the forget flow")]
