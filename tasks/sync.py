"""Task: sync the phase-2 inputs from the selection (`codex_memories.consolidate.steps.sync_inputs`).

Writes `raw_memories.md` and `rollout_summaries/`; the summaries that left the selection are
deleted and audited there (forgetting route 2). Idempotent: an unchanged selection writes
nothing and audits nothing (and a local root is not even copied: see `StagedWorkspace`).
"""

from prefect import task

from codex_memories.consolidate.steps import Selection, SyncReport, sync_workspace_inputs
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="sync-inputs", cache_policy=None)
def sync(workspace: LocalWorkspace, selection: Selection, config: RuntimeConfig) -> SyncReport:
    return sync_workspace_inputs(workspace, selection, open_store(config.settings.resolved_db_url))
