"""Task: forgetting route 4 on request, one thread (`codex_memories.forget.threads.forget_thread`).

Deletes the thread's memory and disables it (recorded first in the memory folder's forget ledger), writes its `forget_audit` row and returns the
actions (none when there was nothing to forget). Raises `UnknownThread` for an unknown id.
Idempotent.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.threads import forget_thread as forget
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-thread", cache_policy=None)
def forget_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 4 on request: one thread's memory, and no re-extraction."""
    store = open_store(config.settings.resolved_db_url)
    return record_actions(store, forget(store, thread_id, root=memory_root(config), reason="forgotten by the forget flow"))
