from prefect import task

from codex_memories.forget.routes import ForgetAction, audit_manual_changes as audit
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace
from codex_memories.consolidate.workspace import WorkspaceDiff


@task(name="audit-manual-changes", cache_policy=None)
def audit_manual_changes(workspace: LocalWorkspace, diff: WorkspaceDiff, config: RuntimeConfig) -> list[ForgetAction]:
    """Forgetting route 7: the ad-hoc notes and user edits this consolidation integrated."""
    return audit(open_store(config.settings.resolved_db_url), workspace.path, diff.changes)
