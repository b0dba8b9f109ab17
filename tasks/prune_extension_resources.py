"""Task: forgetting route 6, extension expiry (`codex_memories.consolidate.steps.prune_workspace_extension_resources`).

Deletes the timestamped extension resources older than 7 days from the workspace, writes one
`forget_audit` row each and returns the actions. Idempotent: a rerun finds nothing expired.
"""

from prefect import task

from codex_memories.consolidate.steps import prune_workspace_extension_resources as prune
from codex_memories.consolidate.steps import utc_now
from codex_memories.forget.audit import ForgetAction
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="prune-extension-resources", cache_policy=None)
def prune_extension_resources(workspace: LocalWorkspace, config: RuntimeConfig) -> list[ForgetAction]:
    return prune(workspace, open_store(config.settings.resolved_db_url), now=utc_now())
