from prefect import task

from codex_memories.consolidate.steps import Selection, SyncReport, sync_inputs
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="sync-inputs", cache_policy=None)
def sync(workspace: LocalWorkspace, selection: Selection, config: RuntimeConfig) -> SyncReport:
    store = open_store(config.settings.resolved_db_url)
    report = sync_inputs(workspace.path, selection, store)
    for forgotten in report.forgotten:
        store.record_forget_audit(
            route=forgotten.route, target=forgotten.path, reason=forgotten.reason, removed={"file": forgotten.path}
        )
    return report
