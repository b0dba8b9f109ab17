"""Tasks: review before apply (`review = ask`; `codex_memories.consolidate.review`).

`proposal_waiting` says whether an earlier run's proposal still waits for a decision (a new
consolidation would bury it). `propose` keeps the gated staging copy as the proposal beside the live folder and publishes its
redacted diff as a markdown artifact, saying where the decision is made (the run's form when it
pauses, `codex-memories review` when it cannot; `flow_run_id` is None then). `discard_proposal`
deletes it after a reject or a timeout. Neither touches the live folder.
"""

from prefect import task
from prefect.artifacts import create_markdown_artifact

from codex_memories.consolidate.review import Proposal, load_proposal, proposal_diff, save_proposal
from codex_memories.consolidate.steps import Selection
from codex_memories.memory_folder.staging import discard
from codex_memories.memory_folder.workspace import WorkspaceDiff
from codex_memories.reports.phase2 import render_review_artifact
from codex_memories.runtime import Phase2Context

REVIEW_ARTIFACT_KEY = "codex-memories-review"


@task(name="proposal-waiting", cache_policy=None)
def proposal_waiting(context: Phase2Context) -> bool:
    local_root = context.root.local_path
    return context.config.settings.review == "ask" and local_root is not None and load_proposal(local_root) is not None


@task(name="propose", cache_policy=None)
def propose(
    context: Phase2Context,
    selection: Selection,
    usage: dict[str, int] | None,
    diff: WorkspaceDiff,
    flow_run_id: str | None,
) -> Proposal:
    proposal = save_proposal(
        context.workspace, lease=context.lease, selection=selection, usage=usage, changes=diff.changes, flow_run_id=flow_run_id
    )
    create_markdown_artifact(
        key=REVIEW_ARTIFACT_KEY,
        markdown=render_review_artifact(
            proposal_diff(proposal), proposal_path=str(proposal.path), outputs=len(proposal.selection),
            pausable=flow_run_id is not None,
        ),
        description="The proposed change to the memory folder (redacted)",
    )
    return proposal


@task(name="discard-proposal", cache_policy=None)
def discard_proposal(context: Phase2Context) -> None:
    context.workspace.kept = False
    discard(context.workspace.path)
