"""Task: forgetting route 7, the notes and user edits a consolidation integrated (`codex_memories.forget.manual`).

Writes one `forget_audit` row per ad-hoc note and user edit in the workspace diff and returns
the actions. Not idempotent on the same diff: phase 2 calls it once, right before the baseline
reset that consumes the diff.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.manual import manual_change_actions
from codex_memories.memory_folder.workspace import WorkspaceDiff
from codex_memories.runtime import Phase2Context


@task(name="audit-manual-changes", cache_policy=None)
def audit_manual_changes(context: Phase2Context, diff: WorkspaceDiff) -> list[ForgetAction]:
    """Forgetting route 7: the ad-hoc notes and user edits this consolidation integrated."""
    return record_actions(context.store, manual_change_actions(context.workspace.path, diff.changes))
