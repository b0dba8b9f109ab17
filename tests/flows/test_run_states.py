"""A flow run's final state says whether it did its job (docs/prefect.md, "States").

Read back through the Prefect API (the test harness's server) as a UI filter, a notification or
an automation sees it: the state type, the state name and the message with the outcome counts.
The verdicts themselves are pure (`codex_memories.reports`), tested at the end.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prefect import get_client
from prefect.flow_runs import resume_flow_run

from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import Phase1Report
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.reports.verdicts import RunNotDone, backfill_verdict, phase1_verdict, phase2_verdict
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.backfill import backfill
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2
from tests.flows import test_phase1_flow as phase1_tests
from tests.flows import test_phase2_review as review_tests
from tests.flows.test_phase2_flow import Home
from tests.support.openai_server import RecordedRequest, ScriptedReply, default_handler, running_openai_server
from tests.support.rollout_factory import write_rollout

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

NOW = datetime.now(UTC)
home = review_tests.home
consolidated_once = review_tests.consolidated_once


isolated_settings = phase1_tests.isolated_settings


@pytest.fixture(autouse=True)
def no_model_retries(isolated_settings: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_MEMORIES_MODEL_RETRIES", "0")


def api_state(state: Any) -> tuple[str, str, str]:
    """The flow run's state as the Prefect API has it: type, name, message."""
    with get_client(sync_client=True) as client:
        stored = client.read_flow_run(state.state_details.flow_run_id).state
    return stored.type.value, stored.name, stored.message or ""


def sessions(tmp_path: Path, topics: list[str], *, archived: bool = False) -> Path:
    codex_home = tmp_path / "codex_home"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    for index, topic in enumerate(topics):
        write_rollout(
            codex_home, created_at=NOW - timedelta(hours=30, minutes=index), archived=archived,
            user_messages=[f"Remember: for {topic} always run make check first."],
        )
    return codex_home


def overrides(tmp_path: Path, codex_home: Path, base_url: str) -> SettingsOverrides:
    return SettingsOverrides(
        codex_home=str(codex_home), db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=str(tmp_path / "memories"),
        provider="openai", base_url=base_url, ignore_age_windows=True, max_rollouts_per_startup=8,
    )


def after_outage(server: Any) -> str:
    """What a run whose model requests failed says after its counts: the endpoint and the next step."""
    return (
        f": the model at {server.base_url} did not answer; fix it, then Retry this run "
        "(only the failed extractions run again, nothing answered is paid twice)"
    )


def failing_for(*words: str):
    def handler(request: RecordedRequest) -> ScriptedReply:
        if any(word in request.input_text for word in words):
            return ScriptedReply.http_error(500, "scripted outage")
        return default_handler(request)

    return handler


def test_a_phase1_run_whose_every_extraction_failed_ends_failed_with_the_counts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha", "beta"])
    with running_openai_server(lambda request: ScriptedReply.http_error(500, "down")) as server:
        state = phase1(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
    assert api_state(state) == ("FAILED", "Failed", f"every extraction failed (failed_model_request=2){after_outage(server)}")


def test_a_phase1_run_with_some_failures_ends_failed_named_partial(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha", "beta", "gamma"])
    with running_openai_server(failing_for("beta")) as server:
        state = phase1(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
    assert api_state(state) == (
        "FAILED", "Partial", f"partial: 1 of 3 extractions failed (failed_model_request=1, succeeded=2){after_outage(server)}"
    )


def test_a_failed_run_ends_with_its_verdict_in_one_line_and_no_traceback(tmp_path: Path, monkeypatch, caplog) -> None:
    """As a deployment's run ends: Prefect's engine raises the final state's data and logs it on
    the flow-run logger (`error_logger`)."""
    from prefect.flow_engine import run_flow

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha", "beta"])
    with running_openai_server(lambda request: ScriptedReply.http_error(500, "down")) as server:
        parameters = {"overrides": overrides(tmp_path, codex_home, server.base_url)}
        with caplog.at_level(logging.INFO, logger="prefect.flow_runs"), pytest.raises(RunNotDone) as raised:
            run_flow(phase1, parameters=parameters, error_logger=logging.getLogger("prefect.flow_runs"))
    verdict = f"every extraction failed (failed_model_request=2){after_outage(server)}"
    assert str(raised.value) == f"Failed: {verdict}"
    assert isinstance(raised.value.report, Phase1Report)
    ended = [record for record in caplog.records if "Engine execution" in record.getMessage() or "Run ended" in record.getMessage()]
    assert [(record.levelname, record.getMessage(), record.exc_info) for record in ended] == [
        ("ERROR", f"Run ended Failed: {verdict} (its report is this flow run's artifact)", None)
    ]
    assert not any("cannot be resolved into an exception" in record.getMessage() for record in caplog.records)


def test_the_run_report_is_an_artifact_of_the_flow_run_and_the_run_is_tagged(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha"])
    with running_openai_server() as server:
        state = phase1(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    run_id = state.state_details.flow_run_id
    # Filtered by the server: unfiltered, the first page of a suite's shared server may not hold it.
    this_run = ArtifactFilter(key=ArtifactFilterKey(any_=["memories-phase1"]), flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
    with get_client(sync_client=True) as client:
        reports = client.read_artifacts(artifact_filter=this_run)
    assert [(artifact.flow_run_id, artifact.task_run_id) for artifact in reports] == [(run_id, None)]
    # And the run carries the tags the UI filters by: the product, the phase, the provider.
    with get_client(sync_client=True) as client:
        assert set(client.read_flow_run(run_id).tags) >= {"codex-memories", "phase1", "provider:openai"}


def test_a_phase1_run_that_did_its_job_or_had_nothing_to_do_is_completed(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha"])
    with running_openai_server() as server, caplog.at_level(logging.INFO, logger="prefect.task_runs"):
        first = phase1(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
        again = phase1(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
    assert api_state(first) == ("COMPLETED", "Completed", "succeeded=1")
    assert api_state(again) == ("COMPLETED", "Completed", "skipped_no_candidates=1")
    # The extraction's task run says what came of it, not only "Finished in state Completed()".
    said = [record.getMessage() for record in caplog.records if record.name == "prefect.task_runs"]
    assert any(line.startswith("succeeded; ") and "transcript tokens sent (budget 150000); openai model" in line for line in said), said
    assert not any(line.startswith("Finished in state Completed(") for line in said), said


def test_a_failed_consolidation_ends_failed_with_its_outcome_and_reason(home: Home) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    with running_openai_server(lambda request: ScriptedReply.http_error(400, "bad request")) as server:
        state = phase2(
            overrides=SettingsOverrides(
                codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.root),
                provider="openai", base_url=server.base_url,
            ),
            force=True, return_state=True,
        )
    kind, name, message = api_state(state)
    assert (kind, name) == ("FAILED", "Failed") and message.startswith("failed_"), message


def test_a_backoff_after_a_failed_consolidation_says_why_and_until_when_and_force_or_other_settings_lift_it(home: Home) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    with running_openai_server(lambda request: ScriptedReply.http_error(400, "bad request")) as server:
        failing = SettingsOverrides(
            codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.root),
            provider="openai", base_url=server.base_url,
        )
        failed = phase2(overrides=failing, force=True, return_state=True)
        failure = api_state(failed)[2]
        held = phase2(overrides=failing, return_state=True)
        kind, name, message = api_state(held)
        assert (kind, name) == ("FAILED", "BackingOff")
        assert message.startswith("skipped_retry_unavailable: backing off after the last consolidation failed at ")
        assert f"({failure}) until " in message and "UTC" in message and "--force" in message
        assert "[settings " not in message
        # --force lifts the backoff: the run consolidates (and fails again, the endpoint is still down).
        forced = phase2(overrides=failing, force=True, return_state=True)
        assert api_state(forced)[:2] == ("FAILED", "Failed")
    # Another provider is other settings: the failure's backoff does not hold it back.
    other = phase2(overrides=_review_overrides(home).with_values(review="auto"), return_state=True)
    assert api_state(other) == ("COMPLETED", "Completed", "succeeded")


def test_a_proposal_waiting_for_review_is_awaiting_review_and_says_how_to_decide(consolidated_once: Home) -> None:
    state = phase2(overrides=_review_overrides(consolidated_once), force=True, return_state=True)
    kind, name, message = api_state(state)
    assert (kind, name) == ("COMPLETED", "AwaitingReview")
    assert message.startswith("proposed_awaiting_review: ") and "codex-memories review" in message
    pending = phase2(overrides=_review_overrides(consolidated_once), force=True, return_state=True)
    assert api_state(pending)[:2] == ("COMPLETED", "AwaitingReview")


def test_a_rejected_review_ends_cancelled_named_rejected(consolidated_once: Home, monkeypatch) -> None:
    thread, results = review_tests._paused_run(consolidated_once, monkeypatch)
    try:
        run_id = review_tests._wait_until_paused(consolidated_once)
        resume_flow_run(run_id, run_input={"decision": "reject", "comment": "not this one"})
    finally:
        thread.join(180)
    with get_client(sync_client=True) as client:
        stored = client.read_flow_run(run_id).state
    assert (stored.type.value, stored.name) == ("CANCELLED", "Rejected")
    assert stored.message == "skipped_review_rejected: rejected in review: not this one"


def test_a_backfill_whose_extractions_failed_ends_failed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    codex_home = sessions(tmp_path, ["alpha", "beta"], archived=True)
    with running_openai_server(failing_for("beta")) as server:
        state = backfill(overrides=overrides(tmp_path, codex_home, server.base_url), return_state=True)
    kind, name, message = api_state(state)
    assert (kind, name) == ("FAILED", "Partial")
    assert message.startswith(f"extractions: partial: 1 of 2 extractions failed (failed_model_request=1, succeeded=1){after_outage(server)}; phase 2: ")


def _review_overrides(home: Home) -> SettingsOverrides:
    return SettingsOverrides(
        codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.root), provider="heuristic", review="ask"
    )


# ---- the verdicts, pure ----------------------------------------------------------------------


def lines(**counts: int) -> Phase1Report:
    from codex_memories.reports.phase1 import ExtractionLine

    report = Phase1Report(claimed=sum(counts.values()))
    for outcome, count in counts.items():
        report.extractions += [ExtractionLine(f"{outcome}-{index}", Outcome(outcome)) for index in range(count)]
    return report


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (lines(succeeded=2, succeeded_no_output=1), ("completed", "Completed", "succeeded=2, succeeded_no_output=1")),
        (lines(failed_invalid_output=1, succeeded=1), ("failed", "Partial", "partial: 1 of 2 extractions failed (failed_invalid_output=1, succeeded=1)")),
        (lines(failed_rollout_unreadable=2), ("failed", "Failed", "every extraction failed (failed_rollout_unreadable=2)")),
        (lines(succeeded=1, skipped_rate_limited=3), ("completed", "Completed", "partial, stopped by the rate-limit guard (skipped_rate_limited=3, succeeded=1)")),
        (Phase1Report(gate=Outcome.skipped_generation_disabled), ("completed", "Completed", "skipped_generation_disabled=1")),
    ],
)
def test_phase1_verdicts(report: Phase1Report, expected: tuple[str, str, str]) -> None:
    verdict = phase1_verdict(report)
    assert (verdict.state, verdict.name, verdict.message) == expected


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (Outcome.succeeded, ("completed", "Completed")),
        (Outcome.succeeded_no_workspace_changes, ("completed", "Completed")),
        (Outcome.skipped_cooldown, ("completed", "Completed")),
        (Outcome.skipped_running, ("completed", "Completed")),
        (Outcome.skipped_retry_unavailable, ("failed", "BackingOff")),
        (Outcome.failed_agent, ("failed", "Failed")),
        (Outcome.failed_injection_gate, ("failed", "Failed")),
        (Outcome.proposed_awaiting_review, ("completed", "AwaitingReview")),
        (Outcome.skipped_review_pending, ("completed", "AwaitingReview")),
        (Outcome.skipped_review_rejected, ("cancelled", "Rejected")),
        (Outcome.skipped_review_timeout, ("cancelled", "Rejected")),
        (None, ("failed", "Failed")),
    ],
)
def test_phase2_verdicts(outcome: Outcome | None, expected: tuple[str, str]) -> None:
    verdict = phase2_verdict(Phase2Report(outcome=outcome))
    assert (verdict.state, verdict.name) == expected


def test_a_backfill_whose_phase2_failed_is_partial_when_extractions_succeeded() -> None:
    verdict = backfill_verdict(lines(succeeded=3), "failed_agent", "the model said no")
    assert (verdict.state, verdict.name) == ("failed", "Partial")
    assert verdict.message == "extractions: succeeded=3; phase 2: failed_agent: the model said no"
    assert backfill_verdict(lines(succeeded=3), "succeeded", None).state == "completed"
    gated = backfill_verdict(Phase1Report(gate=Outcome.skipped_generation_disabled), None, None)
    assert (gated.state, gated.message) == ("completed", "skipped_generation_disabled=1")
