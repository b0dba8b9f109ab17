"""Task: forgetting route 7, the global reset (`codex_memories.forget.manual.reset_memories`).

Deletes every stage-1 output and memory job and the memory folder's contents, writes one
`forget_audit` row and returns it (also when it stops half way: `ForgetIncomplete`). Raises `ResetRefused` while phase 2 holds its lease.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, carry_out
from codex_memories.forget.manual import reset_memories as reset
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="reset-memories", cache_policy=None)
def reset_memories(config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 7, global reset: every memory row and the memory folder's contents."""
    store = open_store(config.settings.resolved_db_url)
    root = memory_root(config)
    return carry_out(store, lambda: reset(store, root, reason="reset by the forget flow"))
