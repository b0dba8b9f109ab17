"""Forgetting route 3, empty re-extraction: an updated thread now teaches nothing (spec 6).

Contract: `empty_reextraction_actions(thread_id, previous)` is called after the store has
finalized a `succeeded_no_output` job (`mark_stage1_job_succeeded_no_output`, which deletes the
thread's `stage1_outputs` row). `previous` is that row as it was before the finalizer ran: when
there was one, the re-extraction forgot it and one `ForgetAction` describes it; when there was
none (a first extraction that found nothing), nothing was forgotten and the list is empty.

Pure: no I/O. The caller (`extract.extraction.finalize_extraction`) records the actions.
"""

from __future__ import annotations

from codex_memories.forget.audit import ForgetAction
from codex_memories.state.records import ForgetRoute, Stage1Output

REASON = "re-extraction of the updated rollout found nothing worth keeping"


def empty_reextraction_actions(thread_id: str, previous: Stage1Output | None) -> list[ForgetAction]:
    """The action for the stage-1 row an empty re-extraction deleted; none if there was no row."""
    if previous is None:
        return []
    return [
        ForgetAction(
            route=ForgetRoute.empty_reextraction,
            target=thread_id,
            reason=REASON,
            removed={
                "stage1_output_source_updated_at": previous.source_updated_at,
                "rollout_slug": previous.rollout_slug,
            },
        )
    ]
