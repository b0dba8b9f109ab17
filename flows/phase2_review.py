"""Phase 2 with `review = ask`: keep the consolidated copy as a proposal and wait for a decision.

A deployment's run pauses with a form in the Prefect UI (`ReviewDecision`, the proposed diff
shown above it) while its lease is renewed; a run nobody can resume (a plain `codex-memories phase2` against Prefect's temporary
server) keeps the proposal for `codex-memories review` and gives the lease back. Orchestration
only: the proposal itself is `codex_memories.consolidate.review`.
"""

from __future__ import annotations

from typing import Any, Literal

from prefect import get_client, get_run_logger
from prefect.context import FlowRunContext
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from prefect.states import Running
from pydantic import Field

from codex_memories.consolidate.review import forget_proposal_metadata, proposal_diff
from codex_memories.consolidate.steps import Phase2Failure
from codex_memories.memory_folder.staging import StagedWorkspace
from codex_memories.memory_folder.workspace import WorkspaceDiff
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.reports.phase2 import Phase2Report, render_review_form
from codex_memories.runtime import Phase2Context
from codex_memories_flows.phase2_support import stage_step
from codex_memories_tasks.confirm_ownership import confirm_ownership
from codex_memories_tasks.consolidate import lease_heartbeat
from codex_memories_tasks.rate_limit import release_phase2_lease
from codex_memories_tasks.review import discard_proposal, propose


class ReviewDecision(RunInput):
    """The form a paused ask-mode run shows in the Prefect UI. The decision has no default: the
    reviewer picks approve or reject (a toggle that starts off would reject by default)."""

    decision: Literal["approve", "reject"] = Field(
        title="Decision", description="approve: apply the proposed change to the memory folder; reject: discard it."
    )
    comment: str = Field(default="", title="Comment", description="Why (written to the run's logs).")

    @property
    def approve(self) -> bool:
        return self.decision == "approve"


def decision_input(*, approve: bool, comment: str) -> dict[str, str]:
    """The run input a decision sends, as the form does (`codex-memories review --approve/--reject`)."""
    return ReviewDecision(decision="approve" if approve else "reject", comment=comment).model_dump(include={"decision", "comment"})


# How often a paused run asks the server whether it was resumed.
REVIEW_POLL_SECONDS = 10


def can_pause() -> bool:
    """A run can wait for a decision only where someone can resume it: a deployment's run on a
    server that outlives it (`codex-memories serve`, a worker). A plain `codex-memories phase2`
    runs against a temporary server that ends with it."""
    context = FlowRunContext.get()
    return context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None


def review_proposal(context: Phase2Context, report: Phase2Report, diff: WorkspaceDiff, selection: Any) -> bool:
    """Keep the copy as a proposal and wait for a decision; True when approved (publish it)."""
    workspace = context.workspace
    if not isinstance(workspace, StagedWorkspace):
        raise Phase2Failure(Outcome.failed_review, "review = ask needs a local memory root (object-store roots publish as auto)")
    pausable = can_pause()
    run_context = FlowRunContext.get()
    flow_run_id = str(run_context.flow_run.id) if pausable and run_context is not None and run_context.flow_run is not None else None
    proposal = stage_step(Outcome.failed_review, propose, context, selection, report.usage or None, diff, flow_run_id)
    if not pausable:
        release_phase2_lease(context)
        report.outcome = Outcome.proposed_awaiting_review
        report.reason = (
            f"proposal kept at {proposal.path}; this run cannot pause for a decision (it is not a deployment's "
            "run): `codex-memories review` shows it, then --approve or --reject"
        )
        return False
    form = render_review_form(proposal_diff(proposal), outputs=len(proposal.selection))
    decision = wait_for_decision(context, form)
    if decision is not None:
        get_run_logger().info(
            "review: %s%s", "approved" if decision.approve else "rejected",
            redact_secrets(f": {decision.comment}") if decision.comment else " (no comment)",
        )
    if decision is not None and decision.approve:
        forget_proposal_metadata(workspace.path)
        workspace.kept = False  # this run's copy again: published below, or discarded
        if not stage_step(Outcome.failed_confirm_ownership, confirm_ownership, context):
            report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost while waiting for review"
            return False
        return True
    stage_step(Outcome.failed_review, discard_proposal, context)
    release_phase2_lease(context)
    if decision is None:
        report.outcome, report.reason = Outcome.skipped_review_timeout, "no decision within the review timeout: rejected"
    else:
        report.outcome = Outcome.skipped_review_rejected
        report.reason = redact_secrets(f"rejected in review{': ' + decision.comment if decision.comment else ''}")
    return False


def wait_for_decision(context: Phase2Context, description: str) -> ReviewDecision | None:
    """Pause for the reviewer's form (`description`, the proposed diff, shown above it) while the
    lease is renewed; None when the timeout ran out."""
    settings = context.config.settings
    with lease_heartbeat(context).running():
        try:
            return pause_flow_run(
                wait_for_input=ReviewDecision.with_initial_data(description=description),
                timeout=settings.review_timeout_seconds,
                poll_interval=min(REVIEW_POLL_SECONDS, settings.review_timeout_seconds),
            )
        except FlowPauseTimeout:
            # The run is still Paused on the server (its pause expired): take it back to Running
            # so it finishes with its own outcome, the reject, instead of a failed state.
            run_context = FlowRunContext.get()
            if run_context is not None and run_context.flow_run is not None:
                with get_client(sync_client=True) as client:
                    client.set_flow_run_state(run_context.flow_run.id, Running(), force=True)
            return None
