"""finalize_extraction: the three outcomes, with reasons redacted on every path out."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories.extract.extraction import ExtractionResult, finalize_extraction
from codex_memories.outcomes import Outcome
from codex_memories.state.records import ThreadRecord
from codex_memories.state.store import MemoryStore

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def claimed(tmp_path: Path):
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    store.upsert_threads([ThreadRecord(id="t1", rollout_path="/r.jsonl", created_at_ms=1, updated_at_ms=100_000, source="cli")])
    claim = store.try_claim_stage1_job(thread_id="t1", worker_id="w", source_updated_at=100, lease_seconds=60, max_running_jobs=8)
    yield store, claim.ownership_token
    store.close()


def result(token: str, outcome: Outcome, reason: str | None = None, **fields) -> ExtractionResult:
    return ExtractionResult(
        thread_id="t1", ownership_token=token, source_updated_at=100, rollout_path="/r.jsonl", outcome=outcome, reason=reason, **fields
    )


def test_a_failure_reason_is_redacted_in_the_db_and_in_what_is_returned(claimed) -> None:
    store, token = claimed
    outcome, reason = finalize_extraction(
        store, result(token, Outcome.failed_model_request, f"proxy said token={SECRET}"), failed_expectations=[], retry_delay_seconds=60
    )
    assert outcome is Outcome.failed_model_request
    assert SECRET not in reason and "[REDACTED_SECRET]" in reason
    job = store.get_job("memory_stage1", "t1")
    assert job.status == "error" and SECRET not in job.last_error
    assert job.last_error.startswith("failed_model_request: ")


def test_failed_expectations_turn_a_success_into_a_named_failure(claimed) -> None:
    store, token = claimed
    outcome, reason = finalize_extraction(
        store,
        result(token, Outcome.succeeded, raw_memory="raw", rollout_summary="sum"),
        failed_expectations=["slug_is_null_or_valid"],
        retry_delay_seconds=60,
    )
    assert outcome is Outcome.failed_quality_check and "slug_is_null_or_valid" in reason
    assert store.get_stage1_output("t1") is None


def test_a_stolen_lease_is_reported_and_changes_nothing(claimed) -> None:
    store, _token = claimed
    outcome, _reason = finalize_extraction(
        store, result("not-the-token", Outcome.succeeded, raw_memory="raw", rollout_summary="sum"), failed_expectations=[], retry_delay_seconds=60
    )
    assert outcome is Outcome.failed_lost_ownership
    assert store.get_stage1_output("t1") is None and store.get_job("memory_stage1", "t1").status == "running"


@pytest.mark.parametrize(
    ("had_output", "token_matches", "expected_audit"),
    [(True, True, [("empty_reextraction", "t1")]), (False, True, []), (True, False, [])],
    ids=["row-forgotten", "first-extraction", "lease-lost"],
)
def test_an_empty_re_extraction_audits_the_row_it_deleted_once(claimed, had_output, token_matches, expected_audit) -> None:
    store, token = claimed
    if had_output:
        assert store.mark_stage1_job_succeeded(
            thread_id="t1", ownership_token=token, source_updated_at=100, raw_memory="raw", rollout_summary="sum", rollout_slug="pnpm"
        )
        store.upsert_threads([ThreadRecord(id="t1", rollout_path="/r.jsonl", created_at_ms=1, updated_at_ms=200_000, source="cli")])
        token = store.try_claim_stage1_job(
            thread_id="t1", worker_id="w", source_updated_at=200, lease_seconds=60, max_running_jobs=8
        ).ownership_token
    used_token = token if token_matches else "not-the-token"

    finalize_extraction(store, result(used_token, Outcome.succeeded_no_output), failed_expectations=[], retry_delay_seconds=60)

    assert [(row.route, row.target) for row in store.list_forget_audit()] == expected_audit
    assert (store.get_stage1_output("t1") is not None) is (had_output and not token_matches)
    if expected_audit:
        [row] = store.list_forget_audit()
        assert row.removed == {"stage1_output_source_updated_at": 100, "rollout_slug": "pnpm"}
