"""Review before apply (`review = ask`): proposals, `codex-memories review`, and the paused Prefect run.

The flow runs for real (Prefect test harness, SQLite, the heuristic consolidator); the CLI runs as
a user runs it (subprocess). The paused-run tests resume the run through the harness's server
with `resume_flow_run`, as the Prefect UI's form does.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from prefect import get_client
from prefect.flow_runs import resume_flow_run
from prefect.input.run_input import keyset_from_paused_state

import codex_memories_flows.phase2_review as phase2_review
from codex_memories.consolidate.review import load_proposal
from codex_memories.memory_folder.staging import proposal_path
from codex_memories.memory_folder.workspace import workspace_diff
from codex_memories.outcomes import Outcome
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.flow_runs import report_of
from codex_memories_flows.phase2 import phase2
from tests.flows import test_phase2_flow as phase2_tests
from tests.flows.test_phase2_flow import Home, served_summary
from tests.support.memory_home import CLI

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

home = phase2_tests.home
isolated_settings = phase2_tests.isolated_settings


def whole_tree(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def run(home: Home, *, review: str = "ask", timeout: int | None = None) -> Phase2Report:
    state = phase2(
        overrides=SettingsOverrides(
            codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.root), provider="heuristic",
            review=review, review_timeout_seconds=timeout,
        ),
        force=True,
        return_state=True,
    )
    return report_of(state)


def review_cli(home: Home, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("CODEX_MEMORIES_")}
    return subprocess.run(
        [*CLI, "review", *arguments, "--codex-home", str(home.codex_home), "--db", home.db_url, "--memory-root", str(home.root)],
        capture_output=True, text=True, env=environment, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )


def selected(home: Home) -> dict[str, bool]:
    with home.store.engine.connect() as connection:
        rows = connection.exec_driver_sql("SELECT thread_id, selected_for_phase2 FROM stage1_outputs").all()
    return {thread_id: bool(flag) for thread_id, flag in rows}


@pytest.fixture
def consolidated_once(home: Home) -> Home:
    """One memory already live (review = auto), a second one extracted since."""
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert run(home, review="auto").outcome is Outcome.succeeded
    home.seed(hours_ago=20, topic="Lint first", preference="run make lint before committing", keyword="lint")
    return home


def test_ask_mode_proposes_review_shows_the_diff_and_approve_applies_it(consolidated_once: Home) -> None:
    home = consolidated_once
    before, flags_before = whole_tree(home.root), selected(home)

    report = run(home)

    assert report.outcome is Outcome.proposed_awaiting_review
    assert whole_tree(home.root) == before and "make lint" not in served_summary(home)
    assert selected(home) == flags_before  # not marked consolidated
    proposal = load_proposal(home.root)
    assert proposal is not None and proposal.path == proposal_path(home.root) and len(proposal.selection) == 2
    assert run(home).outcome is Outcome.skipped_review_pending  # one proposal at a time

    shown = review_cli(home)
    assert shown.returncode == 0, shown.stderr
    assert "from 2 stage-1 output(s)" in shown.stdout
    assert "M MEMORY.md" in shown.stdout and "+" in shown.stdout and "make lint" in shown.stdout

    approved = review_cli(home, "--approve")

    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith("approved: applied 2 stage-1 output(s)")
    assert "make lint" in (home.root / "MEMORY.md").read_text(encoding="utf-8")
    assert not workspace_diff(home.root).changes and not proposal_path(home.root).exists()
    assert all(selected(home).values())
    job = home.store.get_job("memory_consolidate_global", "global")
    assert job.status == "done" and job.lease_until is None
    assert run(home).outcome is Outcome.succeeded_no_workspace_changes


def test_reject_leaves_folder_baseline_and_selection_and_the_next_run_consolidates_again(consolidated_once: Home) -> None:
    home = consolidated_once
    before, flags_before = whole_tree(home.root), selected(home)
    assert run(home).outcome is Outcome.proposed_awaiting_review

    assert review_cli(home, "--reject", "--provider", "gpt").returncode == 2  # a bad common option, as anywhere
    rejected = review_cli(home, "--reject", "--provider", "heuristic", "--concurrency", "2")  # the common options

    assert rejected.returncode == 0, rejected.stderr
    assert whole_tree(home.root) == before  # files, baseline and index
    assert selected(home) == flags_before
    assert not proposal_path(home.root).exists()
    again = run(home)
    assert again.outcome is Outcome.proposed_awaiting_review and again.consolidator == "heuristic"
    assert "make lint" in (proposal_path(home.root) / "MEMORY.md").read_text(encoding="utf-8")


def test_a_run_that_cannot_pause_says_so_and_how_to_decide(consolidated_once: Home) -> None:
    report = run(consolidated_once)
    assert report.outcome is Outcome.proposed_awaiting_review
    assert "cannot pause" in (report.reason or "") and "codex-memories review" in (report.reason or "")
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        [artifact] = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["codex-memories-review"])),
            sort=ArtifactSort.CREATED_DESC, limit=1,
        )
    assert "cannot pause for a decision" in str(artifact.data) and "in its form" not in str(artifact.data)


def test_a_proposal_made_from_another_baseline_is_refused_with_exit_2(consolidated_once: Home) -> None:
    home = consolidated_once
    assert run(home).outcome is Outcome.proposed_awaiting_review
    home.seed(hours_ago=10, topic="Use httpx", preference="use httpx, not requests", keyword="httpx")
    assert run(home, review="auto").outcome is Outcome.succeeded  # the live baseline moves on
    live = whole_tree(home.root)

    refused = review_cli(home, "--approve")

    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1 and "baseline" in refused.stderr and "Traceback" not in refused.stderr
    assert whole_tree(home.root) == live and proposal_path(home.root).exists()
    assert review_cli(home, "--reject").returncode == 0


def _paused_run(home: Home, monkeypatch, *, timeout: int = 600) -> tuple[threading.Thread, list[Phase2Report]]:
    # The harness's runs have no deployment; its server outlives them, so they can pause here.
    monkeypatch.setattr(phase2_review, "can_pause", lambda: True)
    monkeypatch.setattr(phase2_review, "REVIEW_POLL_SECONDS", 1)
    results: list[Phase2Report] = []
    thread = threading.Thread(target=lambda: results.append(run(home, timeout=timeout)))
    thread.start()
    return thread, results


def _wait_until_paused(home: Home) -> str:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        proposal = load_proposal(home.root)
        if proposal is not None and proposal.flow_run_id:
            with get_client(sync_client=True) as client:
                state = client.read_flow_run(proposal.flow_run_id).state
            if state is not None and state.is_paused():
                return proposal.flow_run_id
        time.sleep(0.5)
    raise AssertionError("the run never paused for review")


@pytest.mark.parametrize("approve", [True, False])
def test_a_paused_run_resumed_with_the_decision_applies_or_discards(consolidated_once: Home, monkeypatch, caplog, approve: bool) -> None:
    home = consolidated_once
    before, flags_before = whole_tree(home.root), selected(home)
    caplog.set_level(logging.INFO, logger="prefect.flow_runs")
    thread, results = _paused_run(home, monkeypatch)
    try:
        run_id = _wait_until_paused(home)
        # The CLI cannot reach this run (no PREFECT_API_URL, no serve): it refuses, and decides nothing.
        refused = review_cli(home, "--approve" if approve else "--reject")
        assert refused.returncode == 2, refused.stdout
        assert "PREFECT_API_URL is unset" in refused.stderr and run_id in refused.stderr
        assert proposal_path(home.root).exists() and whole_tree(home.root) == before
        assert whole_tree(home.root) == before  # the read path never sees the proposal
        with get_client(sync_client=True) as client:
            artifacts = client.read_artifacts()
            # The form the UI shows for the decision carries the diff itself.
            paused = client.read_flow_run(run_id)
            form = client.read_flow_run_input(run_id, keyset_from_paused_state(paused.state)["description"])
        assert any("make lint" in str(artifact.data) for artifact in artifacts if artifact.key == "codex-memories-review")
        assert "+" in form and "make lint" in form and "approve to apply" in form
        resume_flow_run(run_id, run_input={"decision": "approve" if approve else "reject", "comment": "checked"})
    finally:
        thread.join(180)
    [report] = results
    said = [record.getMessage() for record in caplog.records if record.name == "prefect.flow_runs"]
    assert f"review: {'approved' if approve else 'rejected'}: checked" in said, said
    if approve:
        assert report.outcome is Outcome.succeeded, report.reason
        assert "make lint" in (home.root / "MEMORY.md").read_text(encoding="utf-8")
        assert all(selected(home).values())
    else:
        assert report.outcome is Outcome.skipped_review_rejected and "checked" in (report.reason or "")
        assert whole_tree(home.root) == before and selected(home) == flags_before
    assert not proposal_path(home.root).exists()


def test_no_decision_within_the_timeout_is_a_reject(consolidated_once: Home, monkeypatch) -> None:
    home = consolidated_once
    before, flags_before = whole_tree(home.root), selected(home)
    thread, results = _paused_run(home, monkeypatch, timeout=3)
    thread.join(180)
    [report] = results
    assert report.outcome is Outcome.skipped_review_timeout
    assert whole_tree(home.root) == before and selected(home) == flags_before
    assert not proposal_path(home.root).exists()
    job = home.store.get_job("memory_consolidate_global", "global")
    assert job.ownership_token is None and job.status == "pending"  # the inputs wait for the next run
