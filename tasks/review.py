"""Tasks: review before apply (`review = ask`; `codex_memories.consolidate.review`).

`propose` keeps the gated staging copy as the proposal beside the live folder and publishes its
redacted diff as a markdown artifact (the page a reviewer reads before approving in the Prefect
UI). `discard_proposal` deletes it after a reject or a timeout. Neither touches the live folder.
"""

from prefect import task
from prefect.artifacts import create_markdown_artifact

from codex_memories.consolidate.review import Proposal, proposal_diff, save_proposal
from codex_memories.consolidate.staging import StagedWorkspace, discard
from codex_memories.consolidate.steps import Phase2Lease, Selection
from codex_memories.consolidate.workspace import WorkspaceDiff

REVIEW_ARTIFACT_KEY = "codex-memories-review"


@task(name="propose", cache_policy=None)
def propose(
    workspace: StagedWorkspace,
    lease: Phase2Lease,
    selection: Selection,
    usage: dict[str, int] | None,
    diff: WorkspaceDiff,
    flow_run_id: str | None,
) -> Proposal:
    proposal = save_proposal(
        workspace, lease=lease, selection=selection, usage=usage, changes=diff.changes, flow_run_id=flow_run_id
    )
    text = proposal_diff(proposal)
    fence = "~~~~" if "```" in text else "```"
    create_markdown_artifact(
        key=REVIEW_ARTIFACT_KEY,
        markdown=(
            "# codex-memories: consolidation waiting for review\n\n"
            f"Proposal `{proposal.path}` ({len(proposal.selection)} stage-1 outputs). Approve or reject it in this "
            "flow run's form, or with `codex-memories review --approve` / `--reject`.\n\n"
            f"{fence}diff\n{text}\n{fence}\n"
        ),
        description="The proposed change to the memory folder (redacted)",
    )
    return proposal


@task(name="discard-proposal", cache_policy=None)
def discard_proposal(workspace: StagedWorkspace) -> None:
    workspace.kept = False
    discard(workspace.path)
