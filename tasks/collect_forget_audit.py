"""Task: read back the `forget_audit` rows written since a run started (`codex_memories.forget.audit`).

Read-only; includes rows other runs wrote in the same window (the audit has no run id).
"""

from prefect import task

from codex_memories.forget.audit import audit_rows_since
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import ForgetAuditRecord


@task(name="collect-forget-audit", cache_policy=None)
def collect_forget_audit(config: RuntimeConfig, since: int) -> list[ForgetAuditRecord]:
    """The forget-audit rows written since `since` (Unix seconds), for the run's report."""
    return audit_rows_since(open_store(config.settings.resolved_db_url), since)
