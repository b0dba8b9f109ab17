"""Task: forgetting route 5, the threads discovery marked polluted (`codex_memories.forget.threads`).

Discovery already changed their memory mode; this writes one `forget_audit` row per thread id
given and returns the actions. Phase 1 passes only the threads newly polluted in this run.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.threads import polluted_thread_actions
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="audit-polluted-threads", cache_policy=None)
def audit_polluted_threads(config: RuntimeConfig, thread_ids: list[str]) -> list[ForgetAction]:
    """Forgetting route 5: audit the threads discovery marked polluted (external context)."""
    store = open_store(config.settings.resolved_db_url)
    return record_actions(store, polluted_thread_actions(store, thread_ids))
