from prefect import task

from codex_memories.forget.routes import ForgetAction, audit_polluted_threads as audit
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="audit-polluted-threads", cache_policy=None)
def audit_polluted_threads(config: RuntimeConfig, thread_ids: list[str]) -> list[ForgetAction]:
    """Forgetting route 5: audit the threads discovery marked polluted (external context)."""
    return audit(open_store(config.settings.resolved_db_url), thread_ids)
