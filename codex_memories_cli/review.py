"""`codex-memories review`: the decision on a consolidation that waits for approval (`review = ask`).

Without `--approve`/`--reject` it prints the waiting proposal (when it was made, how many
stage-1 outputs it consolidates) and its redacted diff against the live folder.

A decision on a proposal whose flow run paused for it goes to that run (resumed with the same
input its Prefect UI form sends, on the server of PREFECT_API_URL or of the `serve` of the same
data), and only there: when the run cannot be reached (no server known, the server does not
answer or does not know the run, the run is not paused) the decision is refused with the reason,
exit 2, and nothing changes, since deciding on disk would leave the run paused and make its own
decision fail later. `--on-disk` decides on disk anyway, for a run whose server is gone for good.
A proposal whose run has ended (crashed, cancelled), or that no run waits for (a run that could
not pause), is decided here: the library applies (`approve_proposal`: atomically, as a successful
phase 2) or discards (`reject_proposal`) it. A proposal made from another baseline than the live
one, or one whose live folder changed since, is refused: one line on stderr, exit 2, nothing
changed. No proposal waiting is exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories_cli.errors import EXIT_BAD_SETTING, fail
from codex_memories_cli.options import local_memory_root, with_common_options

review_app = typer.Typer()

# A refused decision exits like a bad setting: it is the input that does not fit, nothing changed.
EXIT_REFUSED = EXIT_BAD_SETTING


@review_app.command()
@with_common_options
def review(
    overrides: SettingsOverrides,
    approve: Annotated[bool, typer.Option("--approve", help="Apply the waiting proposal to the memory folder.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Discard the waiting proposal (its inputs stay for the next run).")] = False,
    comment: Annotated[str, typer.Option("--comment", help="Why; sent with the decision to a paused run.")] = "",
    on_disk: Annotated[
        bool,
        typer.Option(
            "--on-disk",
            help="Decide on disk even when the paused run cannot be reached (its Prefect server is gone for good).",
        ),
    ] = False,
) -> None:
    """Show the consolidation waiting for review (review = ask), or --approve / --reject it."""
    from codex_memories.consolidate.review import ReviewRefused, load_proposal, proposal_diff

    if approve and reject:
        fail("give --approve or --reject, not both", EXIT_REFUSED)
    config = overrides.load()
    root = local_memory_root(config, "review")
    try:
        proposal = load_proposal(root)
    except ReviewRefused as error:
        fail(str(error), EXIT_REFUSED)
    if proposal is None:
        fail(f"no consolidation is waiting for review beside {root}")
    if not approve and not reject:
        waiting = f"; flow run {proposal.flow_run_id} is paused for the decision" if proposal.flow_run_id else ""
        print(f"proposal made {proposal.created_at} from {len(proposal.selection)} stage-1 output(s){waiting}")
        print(proposal_diff(proposal), end="")
        return
    if proposal.flow_run_id and not on_disk:
        try:
            delivered = _resume_paused_run(config, proposal.flow_run_id, approve=approve, comment=comment)
        except DecisionNotDelivered as error:
            fail(str(error), EXIT_REFUSED)
        if delivered:
            print(f"{'approved' if approve else 'rejected'}: flow run {proposal.flow_run_id} resumed with the decision")
            return
    try:
        if approve:
            print(_approve(config, root))
        else:
            from codex_memories.consolidate.review import reject_proposal

            reject_proposal(root)
            print("rejected: the proposal was discarded; the memory folder and the state DB are unchanged")
    except ReviewRefused as error:
        fail(str(error), EXIT_REFUSED)


def _approve(config: RuntimeConfig, root: Path) -> str:
    from codex_memories.consolidate.review import approve_proposal
    from codex_memories.read.index import build_index
    from codex_memories.runtime import open_store

    approval = approve_proposal(
        open_store(config.settings.resolved_db_url), root, lease_seconds=config.settings.phase2_lease_seconds
    )
    if not approval.mark.owned:
        return "approved and applied, but the lease was lost before marking success: the next phase 2 marks it"
    try:
        build_index(root)
    except (OSError, ValueError) as error:  # derived data: readers rebuild it lazily
        print(f"recall index not rebuilt: {type(error).__name__}: {error}")
    left = "; stage-1 outputs arrived meanwhile, the next phase 2 consolidates them" if approval.mark.work_left else ""
    return f"approved: applied {len(approval.proposal.selection)} stage-1 output(s) to {root}{left}"


class DecisionNotDelivered(Exception):
    """The paused run waiting for the decision could not be reached; the message says why and
    what to do."""


def _resume_paused_run(config: RuntimeConfig, flow_run_id: str, *, approve: bool, comment: str) -> bool:
    """Resume the paused flow run with the decision: True when it got it; False when the run has
    ended (crashed, cancelled, ...), so the proposal it left is decided on disk. Raises
    `DecisionNotDelivered` when the run may still be waiting but cannot be reached."""
    from uuid import UUID

    import httpx
    from prefect import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from codex_memories_cli.prefect_server import choose_prefect_server

    from codex_memories_flows.phase2_review import decision_input

    elsewhere = "decide in the run's form in the Prefect UI, or give --on-disk if that server is gone for good"
    api_url = choose_prefect_server(config).api_url
    if api_url is None:
        raise DecisionNotDelivered(
            f"flow run {flow_run_id} is paused for this decision on a Prefect server this command does not know: "
            f"PREFECT_API_URL is unset and no `codex-memories serve` of the same data is running; set PREFECT_API_URL "
            f"to that server, or {elsewhere}"
        )
    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        try:
            with get_client(sync_client=True) as client:
                run = client.read_flow_run(UUID(flow_run_id))
                state = run.state
                if state is not None and state.is_final():
                    return False
                if state is None or not state.is_paused():
                    raise DecisionNotDelivered(
                        f"flow run {flow_run_id} is {state.name if state else 'without a state'}, not paused for a decision; "
                        "run `codex-memories review` again once it is paused"
                    )
                _wait_for_the_form(client, run)
        except ObjectNotFound:
            raise DecisionNotDelivered(f"flow run {flow_run_id} is not on the Prefect server at {api_url}; {elsewhere}") from None
        except httpx.HTTPError as error:
            raise DecisionNotDelivered(
                f"the Prefect server at {api_url} did not answer ({type(error).__name__}: {error}); {elsewhere}"
            ) from None
        resume_flow_run(UUID(flow_run_id), run_input=decision_input(approve=approve, comment=comment))
    return True


# Prefect marks a run Paused first and stores the form of its input a moment later; a decision
# sent in between is refused by the server ("Run input schema not found").
FORM_WAIT_SECONDS = 30.0


def _wait_for_the_form(client: Any, run: Any) -> None:
    """Wait (bounded) until the paused run's input form is stored, so the decision is accepted;
    past the bound, resume_flow_run reports the server's reason."""
    import time

    from prefect.exceptions import PrefectHTTPStatusError
    from prefect.input.run_input import keyset_from_paused_state

    key = keyset_from_paused_state(run.state)["schema"]
    deadline = time.monotonic() + FORM_WAIT_SECONDS
    while True:
        try:
            client.read_flow_run_input(run.id, key)
            return
        except PrefectHTTPStatusError as error:
            if error.response.status_code != 404 or time.monotonic() >= deadline:
                return
        time.sleep(0.2)
