"""Task: forgetting route `entry_expiry` (`codex_memories.consolidate.steps.expire_workspace_typed_entries`).

Removes the temporary memory entries whose expiry date has passed from the selected stage-1
rows and the synced inputs, writes one `forget_audit` row per entry and returns the actions.
Idempotent: a rerun finds nothing expired.
"""

from prefect import task

from codex_memories.consolidate.steps import Selection, utc_now
from codex_memories.consolidate.steps import expire_workspace_typed_entries as expire
from codex_memories.forget.audit import ForgetAction
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="expire-typed-entries", cache_policy=None)
def expire_typed_entries(workspace: LocalWorkspace, selection: Selection, config: RuntimeConfig) -> list[ForgetAction]:
    return expire(workspace, selection, open_store(config.settings.resolved_db_url), now=utc_now())
