"""Task: sync the phase-2 inputs from the selection (`codex_memories.consolidate.steps.sync_inputs`).

Writes `raw_memories.md` and `rollout_summaries/`; the summaries that left the selection are
deleted and audited there (forgetting route 2). Idempotent: an unchanged selection writes
nothing and audits nothing (and a local root is not even copied: see `StagedWorkspace`).
"""

from prefect import task

from codex_memories.consolidate.steps import Selection, SyncReport, sync_inputs
from codex_memories.runtime import Phase2Context


@task(name="sync-inputs", cache_policy=None)
def sync(context: Phase2Context, selection: Selection) -> SyncReport:
    return sync_inputs(context.workspace, selection, context.store)
