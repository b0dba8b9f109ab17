"""Task: forgetting route 5, mark one thread polluted (`codex_memories.forget.threads.pollute_thread`).

Sets memory mode `polluted` (phase 2 enqueued if it was selected), writes its `forget_audit` row
and returns the actions (none when it already was). Raises `UnknownThread` for an unknown id.
Idempotent.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.threads import pollute_thread as pollute
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="pollute-thread", cache_policy=None)
def pollute_thread(config: RuntimeConfig, thread_id: str) -> list[ForgetAction]:
    """Forgetting route 5: memory mode `polluted` (phase 2 enqueued if it was selected)."""
    store = open_store(config.settings.resolved_db_url)
    return record_actions(store, pollute(store, thread_id, reason="marked polluted by the forget flow"))
