from prefect import task

from codex_memories.consolidate.steps import ForgottenFile, prune_extension_resources as prune, utc_now
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="prune-extension-resources", cache_policy=None)
def prune_extension_resources(workspace: LocalWorkspace, config: RuntimeConfig) -> list[ForgottenFile]:
    forgotten = prune(workspace.path, now=utc_now())
    store = open_store(config.settings.resolved_db_url)
    for item in forgotten:
        store.record_forget_audit(route=item.route, target=item.path, reason=item.reason, removed={"file": item.path})
    return forgotten
