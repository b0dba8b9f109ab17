from prefect import task

from codex_memories.forgetting import ForgetAction, reset_memories as reset
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import open_memory_root


@task(name="reset-memories", cache_policy=None)
def reset_memories(config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 7, global reset: every memory row and the memory folder's contents."""
    settings = config.settings
    root = open_memory_root(settings.resolved_memory_root)
    return [reset(open_store(settings.resolved_db_url), root, reason="reset by the forget flow")]
