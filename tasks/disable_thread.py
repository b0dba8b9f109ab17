"""Task: forgetting route 5, disable one thread (`codex_memories.forget.threads.disable_thread`).

Sets memory mode `disabled` (phase 2 enqueued if it was selected), writes its `forget_audit` row
and returns the actions (none when it already was). Raises `UnknownThread` for an unknown id.
Idempotent.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.threads import disable_thread as disable
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="disable-thread", cache_policy=None)
def disable_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 5: memory mode `disabled` (phase 2 enqueued if it was selected)."""
    store = open_store(config.settings.resolved_db_url)
    return record_actions(store, disable(store, thread_id, reason="disabled by the forget flow"))
