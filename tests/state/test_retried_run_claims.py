"""A flow run retried from the Prefect UI takes back what its earlier attempt claimed.

Stage 1: `resume_stage1_claims` (the retried run's claims come back from Prefect's cache with the
earlier attempt's tokens). Phase 2: `try_claim_global_phase2_job(retried_flow_run=...)` is not
held back by the backoff or the lease that an earlier attempt of the same flow run left.
"""

from __future__ import annotations

from codex_memories.extract.extraction import ExtractionResult, finalize_extraction
from codex_memories.outcomes import Outcome
from codex_memories.state import JobKind, MemoryStore, Stage1ClaimOutcome
from codex_memories.state.records import JobStatus, Phase2ClaimOutcome, Stage1Claim
from tests.state.support import LEASE, FakeClock, claim, fixed_id, make_thread

T = fixed_id(1)
RUN = "6f1c0c7e-8d7e-4a43-9a0e-5c2b3f1a0d11"


def claimed(store: MemoryStore, thread_id: str = T, watermark: int = 100) -> Stage1Claim:
    store.upsert_threads([make_thread(thread_id)])
    result = claim(store, thread_id, watermark, worker=f"host:1:{RUN}")
    assert result.outcome is Stage1ClaimOutcome.claimed
    return Stage1Claim(
        thread_id=thread_id, ownership_token=result.ownership_token or "", source_updated_at=watermark,
        rollout_path=f"/tmp/rollout-{thread_id}.jsonl",
    )


def resume(store: MemoryStore, claims: list[Stage1Claim]):
    return store.resume_stage1_claims(claims, worker_id=f"host:2:{RUN}", lease_seconds=LEASE, max_running_jobs=8)


def succeeded(claim_: Stage1Claim) -> ExtractionResult:
    return ExtractionResult(
        thread_id=claim_.thread_id, ownership_token=claim_.ownership_token, source_updated_at=claim_.source_updated_at,
        rollout_path=claim_.rollout_path, outcome=Outcome.succeeded, raw_memory="raw", rollout_summary="summary",
    )


def finalize(store: MemoryStore, result: ExtractionResult):
    return finalize_extraction(store, result, failed_expectations=[], retry_delay_seconds=3600)


def test_a_claim_still_running_stands_and_its_lease_is_renewed_for_the_retry(store: MemoryStore, clock: FakeClock) -> None:
    first = claimed(store)
    clock.advance(LEASE + 10)  # the crashed attempt's lease ran out; nobody took the job

    [taken] = resume(store, [first])

    assert taken.claim == first
    job = store.get_job(JobKind.stage1, T)
    assert job.status == JobStatus.running and job.lease_until == clock.now + LEASE
    assert job.worker_id == f"host:2:{RUN}"


def test_a_claim_the_earlier_attempt_finalized_stands_and_finalizing_it_again_writes_nothing(store: MemoryStore) -> None:
    first = claimed(store)
    assert finalize(store, succeeded(first)) == (Outcome.succeeded, None)
    job_before = store.get_job(JobKind.stage1, T)

    [taken] = resume(store, [first])

    assert taken.claim == first
    assert finalize(store, succeeded(first)) == (Outcome.succeeded, None)  # not "lost ownership"
    assert store.get_job(JobKind.stage1, T) == job_before


def test_a_claim_the_earlier_attempt_failed_is_taken_again_under_a_new_token_despite_the_backoff(store: MemoryStore) -> None:
    first = claimed(store)
    failed = succeeded(first).model_copy(update={"outcome": Outcome.failed_model_request, "reason": "connection refused"})
    assert finalize(store, failed)[0] is Outcome.failed_model_request
    assert claim(store, T, 100, worker="scheduled-run").outcome is Stage1ClaimOutcome.skipped_retry_backoff

    [taken] = resume(store, [first])

    assert taken.outcome is Stage1ClaimOutcome.claimed and taken.claim is not None
    assert taken.claim.ownership_token != first.ownership_token
    assert taken.claim.model_copy(update={"ownership_token": first.ownership_token}) == first
    job = store.get_job(JobKind.stage1, T)
    assert (job.status, job.retry_at, job.last_error) == (JobStatus.running, None, None)
    # The new token finalizes: the work the failed attempt could not do is done once.
    assert finalize(store, succeeded(taken.claim)) == (Outcome.succeeded, None)
    assert store.get_stage1_output(T) is not None


def test_a_claim_another_worker_took_over_is_not_taken_back(store: MemoryStore, clock: FakeClock) -> None:
    first = claimed(store)
    clock.advance(LEASE + 10)
    assert claim(store, T, 100, worker="another-worker").outcome is Stage1ClaimOutcome.claimed

    [taken] = resume(store, [first])

    assert (taken.outcome, taken.claim) == (Stage1ClaimOutcome.skipped_running, None)
    assert store.get_job(JobKind.stage1, T).worker_id == "another-worker"


def test_a_claim_given_back_unsent_is_claimed_again_as_usual(store: MemoryStore) -> None:
    first = claimed(store)
    assert store.release_stage1_claims([(T, first.ownership_token)]) == 1

    [taken] = resume(store, [first])

    assert taken.outcome is Stage1ClaimOutcome.claimed and taken.claim is not None
    assert store.get_job(JobKind.stage1, T).ownership_token == taken.claim.ownership_token


def test_a_retried_phase2_run_is_not_held_back_by_its_earlier_attempts_backoff_or_lease(store: MemoryStore) -> None:
    def claim_phase2(worker: str, retried: str | None = None):
        return store.try_claim_global_phase2_job(
            worker_id=worker, lease_seconds=LEASE, ignore_cooldown=True, retried_flow_run=retried
        )

    first = claim_phase2(f"host:1:{RUN}")
    assert first.outcome is Phase2ClaimOutcome.claimed
    assert store.mark_global_phase2_job_failed(ownership_token=first.ownership_token, reason="failed_agent", retry_delay_seconds=3600)

    assert claim_phase2("host:9:another-run").outcome is Phase2ClaimOutcome.skipped_retry_unavailable
    assert claim_phase2("host:9:another-run", retried="another-run").outcome is Phase2ClaimOutcome.skipped_retry_unavailable
    retried = claim_phase2(f"host:2:{RUN}", retried=RUN)
    assert retried.outcome is Phase2ClaimOutcome.claimed

    # Its process dies holding the lease: the next attempt of the same run takes it over; no other run does.
    assert claim_phase2("host:9:another-run", retried="another-run").outcome is Phase2ClaimOutcome.skipped_running
    again = claim_phase2(f"host:3:{RUN}", retried=RUN)
    assert again.outcome is Phase2ClaimOutcome.claimed and again.ownership_token != retried.ownership_token
