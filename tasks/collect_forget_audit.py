"""Tasks: mark where the `forget_audit` stands when a run starts, and read back what it wrote after (`codex_memories.forget.audit`).

Read-only; by row id, so a row of a run that ended in the same second is not counted; rows other
runs write while this one runs are (the audit has no run id).
"""

from prefect import task

from codex_memories.forget.audit import audit_mark, audit_rows_after
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import ForgetAuditRecord


@task(name="mark-forget-audit", cache_policy=None)
def mark_forget_audit(config: RuntimeConfig) -> int:
    return audit_mark(open_store(config.settings.resolved_db_url))


@task(name="collect-forget-audit", cache_policy=None)
def collect_forget_audit(config: RuntimeConfig, mark: int) -> list[ForgetAuditRecord]:
    """The forget-audit rows written after `mark`, for the run's report."""
    return audit_rows_after(open_store(config.settings.resolved_db_url), mark)
