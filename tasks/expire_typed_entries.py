"""Task: forgetting route `entry_expiry` (`codex_memories.consolidate.steps.expire_typed_entries`).

Removes the temporary memory entries whose expiry date has passed from the selected stage-1
rows and the synced inputs, writes one `forget_audit` row per entry and returns the actions.
Idempotent: a rerun finds nothing expired.
"""

from prefect import task

from codex_memories.consolidate.steps import Selection
from codex_memories.consolidate.steps import expire_typed_entries as expire
from codex_memories.forget.audit import ForgetAction
from codex_memories.runtime import Phase2Context


@task(name="expire-typed-entries", cache_policy=None)
def expire_typed_entries(context: Phase2Context, selection: Selection) -> list[ForgetAction]:
    return expire(context.workspace, selection, context.store, now=context.now())
