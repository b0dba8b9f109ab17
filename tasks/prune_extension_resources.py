"""Task: forgetting route 6, extension expiry (`codex_memories.consolidate.steps.prune_extension_resources`).

Deletes the timestamped extension resources older than 7 days from the workspace, writes one
`forget_audit` row each and returns the actions. Idempotent: a rerun finds nothing expired.
"""

from prefect import task

from codex_memories.consolidate.steps import prune_extension_resources as prune
from codex_memories.forget.audit import ForgetAction
from codex_memories.runtime import Phase2Context


@task(name="prune-extension-resources", cache_policy=None)
def prune_extension_resources(context: Phase2Context) -> list[ForgetAction]:
    return prune(context.workspace, context.store, now=context.now())
