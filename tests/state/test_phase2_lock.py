"""Spec 9.5: the global phase-2 lock (scenarios 34-40), plus `--force` and heartbeats."""

from __future__ import annotations

from codex_memories.state import GLOBAL_JOB_KEY, JobKind, MemoryStore, Phase2ClaimOutcome
from tests.state.support import LEASE, NOW, FakeClock, age_phase2_cooldown, execute_sql


def p2claim(store: MemoryStore, worker: str = "worker-a", **options):
    return store.try_claim_global_phase2_job(worker_id=worker, lease_seconds=LEASE, **options)


def global_job(store: MemoryStore):
    return store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)


def test_a_successful_consolidation_starts_a_cooldown_that_enqueueing_does_not_lift(store):
    store.enqueue_global_consolidation(100)
    lock = p2claim(store)
    assert lock.outcome is Phase2ClaimOutcome.claimed
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=100, selected=[]
    )

    assert p2claim(store).outcome is Phase2ClaimOutcome.skipped_cooldown
    store.enqueue_global_consolidation(101)
    assert p2claim(store).outcome is Phase2ClaimOutcome.skipped_cooldown
    age_phase2_cooldown(store, NOW)
    assert p2claim(store).outcome is Phase2ClaimOutcome.claimed


def test_force_skips_the_cooldown_but_never_a_live_lease_or_a_retry_backoff(store):
    store.enqueue_global_consolidation(100)
    lock = p2claim(store)
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=100, selected=[]
    )

    forced = p2claim(store, ignore_cooldown=True)
    assert forced.outcome is Phase2ClaimOutcome.claimed
    assert p2claim(store, "worker-b", ignore_cooldown=True).outcome is (
        Phase2ClaimOutcome.skipped_running
    )
    store.mark_global_phase2_job_failed(
        ownership_token=forced.ownership_token, reason="failed_agent", retry_delay_seconds=3600
    )
    assert p2claim(store, ignore_cooldown=True).outcome is (
        Phase2ClaimOutcome.skipped_retry_unavailable
    )


def test_an_exhausted_retry_budget_never_blocks_the_lock(store):
    store.enqueue_global_consolidation(100)
    for _ in range(3):
        lock = p2claim(store)
        assert lock.outcome is Phase2ClaimOutcome.claimed
        assert store.mark_global_phase2_job_failed(
            ownership_token=lock.ownership_token, reason="boom", retry_delay_seconds=0
        )

    assert global_job(store).retry_remaining == 0
    assert p2claim(store).outcome is Phase2ClaimOutcome.claimed


def test_only_one_runner_holds_the_lock(store):
    store.enqueue_global_consolidation(200)

    assert p2claim(store, "worker-a").outcome is Phase2ClaimOutcome.claimed
    assert p2claim(store, "worker-b").outcome is Phase2ClaimOutcome.skipped_running


def test_a_missing_row_is_created_by_the_first_claim(store):
    first = p2claim(store, "worker-a")
    assert (first.outcome, first.input_watermark) == (Phase2ClaimOutcome.claimed, 0)
    assert p2claim(store, "worker-b").outcome is Phase2ClaimOutcome.skipped_running

    assert store.mark_global_phase2_job_succeeded(
        ownership_token=first.ownership_token, completed_watermark=0, selected=[]
    )
    assert p2claim(store, "worker-b").outcome is Phase2ClaimOutcome.skipped_cooldown


def test_a_stale_lease_is_taken_over_and_the_old_owner_cannot_finish(store):
    store.enqueue_global_consolidation(300)
    a = p2claim(store, "worker-a")
    execute_sql(store, "UPDATE jobs SET lease_until = :t WHERE kind = 'memory_consolidate_global'",
                t=NOW - 1)

    b = p2claim(store, "worker-b")

    assert (b.outcome, b.input_watermark) == (Phase2ClaimOutcome.claimed, 300)
    assert b.ownership_token != a.ownership_token
    assert not store.mark_global_phase2_job_succeeded(
        ownership_token=a.ownership_token, completed_watermark=300, selected=[]
    )
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=b.ownership_token, completed_watermark=300, selected=[]
    )


def test_the_enqueued_watermark_is_strictly_monotonic(store):
    store.enqueue_global_consolidation(500)
    lock = p2claim(store)
    assert lock.input_watermark == 500
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=500, selected=[]
    )

    store.enqueue_global_consolidation(400)
    age_phase2_cooldown(store, NOW)
    again = p2claim(store)

    assert again.outcome is Phase2ClaimOutcome.claimed
    assert again.input_watermark == 501
    assert global_job(store).last_success_watermark == 500


def test_the_unowned_fallback_fails_a_running_row_that_lost_its_token(store):
    store.enqueue_global_consolidation(400)
    lock = p2claim(store)
    execute_sql(store, "UPDATE jobs SET ownership_token = NULL"
                " WHERE kind = 'memory_consolidate_global'")

    assert not store.mark_global_phase2_job_failed(
        ownership_token=lock.ownership_token, reason="lost", retry_delay_seconds=3600
    )
    assert store.mark_global_phase2_job_failed_if_unowned(
        ownership_token=lock.ownership_token, reason="lost", retry_delay_seconds=3600
    )
    assert p2claim(store).outcome is Phase2ClaimOutcome.skipped_retry_unavailable
    job = global_job(store)
    assert (job.status, job.last_error, job.retry_at) == ("error", "lost", NOW + 3600)


def test_a_heartbeat_extends_the_lease_only_for_the_owner(store, clock: FakeClock):
    lock = p2claim(store)
    clock.advance(100)

    assert store.heartbeat_global_phase2_job(ownership_token=lock.ownership_token, lease_seconds=LEASE)
    assert global_job(store).lease_until == NOW + 100 + LEASE
    assert not store.heartbeat_global_phase2_job(ownership_token="not-mine", lease_seconds=LEASE)


def test_enqueueing_keeps_a_running_job_running_and_refills_the_retry_budget(store):
    store.enqueue_global_consolidation(10)
    for _ in range(3):
        lock = p2claim(store)
        store.mark_global_phase2_job_failed(
            ownership_token=lock.ownership_token, reason="boom", retry_delay_seconds=0
        )
    running = p2claim(store)

    store.enqueue_global_consolidation(20)

    job = global_job(store)
    assert (job.status, job.retry_remaining, job.input_watermark) == ("running", 3, 20)
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=running.ownership_token, completed_watermark=20, selected=[]
    )


# ---- no consolidation, and no cooldown, over work it could not see (issue 11 item 5) -------


def start_extraction(store: MemoryStore, thread_id: str, source_updated_at: int = 100) -> str:
    from tests.state.support import make_thread

    store.upsert_threads([make_thread(thread_id)])
    claim = store.try_claim_stage1_job(
        thread_id=thread_id, worker_id="run-1", source_updated_at=source_updated_at,
        lease_seconds=LEASE, max_running_jobs=64,
    )
    return claim.ownership_token


def deferring(store: MemoryStore, worker: str = "worker-a", **options):
    return p2claim(store, worker, defer_to_stage1_in_flight=True, **options)


def test_phase2_is_not_claimed_while_an_extraction_runs_under_a_live_lease(store, clock: FakeClock):
    token = start_extraction(store, "thread-a")
    assert deferring(store).outcome is Phase2ClaimOutcome.skipped_stage1_in_flight
    assert global_job(store) is None  # nothing written: the skip leaves the job as it was
    assert deferring(store, ignore_cooldown=True).outcome is Phase2ClaimOutcome.skipped_stage1_in_flight

    store.mark_stage1_job_succeeded(
        thread_id="thread-a", ownership_token=token, source_updated_at=100,
        raw_memory="raw", rollout_summary="summary", rollout_slug=None,
    )
    assert global_job(store).status == "pending"  # dirty, waiting for a consolidation
    assert deferring(store).outcome is Phase2ClaimOutcome.claimed


def test_an_expired_stage1_lease_does_not_hold_phase2_back(store, clock: FakeClock):
    start_extraction(store, "thread-a")
    clock.advance(LEASE + 1)
    assert deferring(store).outcome is Phase2ClaimOutcome.claimed


def test_the_spec_claim_does_not_look_at_stage1_jobs(store):
    start_extraction(store, "thread-a")
    assert p2claim(store).outcome is Phase2ClaimOutcome.claimed


def test_a_consolidation_that_missed_an_output_stays_dirty_and_starts_no_cooldown(store):
    store.enqueue_global_consolidation(100)
    lock = p2claim(store)
    store.enqueue_global_consolidation(150)  # a stage-1 output arrives while it consolidates
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=100, selected=[],
        claimed_input_watermark=lock.input_watermark,
    )
    job = global_job(store)
    assert (job.status, job.finished_at, job.last_error, job.lease_until) == ("pending", None, None, None)
    assert job.last_success_watermark == 100

    again = p2claim(store)
    assert again.outcome is Phase2ClaimOutcome.claimed and again.input_watermark == 150
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=again.ownership_token, completed_watermark=150, selected=[],
        claimed_input_watermark=again.input_watermark,
    )
    assert global_job(store).status == "done"
    assert p2claim(store).outcome is Phase2ClaimOutcome.skipped_cooldown  # this one saw everything


def test_waiting_for_extractions_in_flight_is_bounded(store, clock: FakeClock):
    from codex_memories.consolidate.steps import claim_global_lock

    token = start_extraction(store, "thread-a")
    waited: list[float] = []
    ticks = iter(range(1000))

    def fake_sleep(seconds: float) -> None:
        waited.append(seconds)
        if len(waited) == 3:  # the other run's extraction finishes during the wait
            store.mark_stage1_job_succeeded(
                thread_id="thread-a", ownership_token=token, source_updated_at=100,
                raw_memory="raw", rollout_summary="summary", rollout_slug=None,
            )

    claimed = claim_global_lock(
        store, worker_id="run-2", lease_seconds=LEASE, cooldown_seconds=3600, force=False,
        stage1_wait_seconds=30, sleep=fake_sleep, clock=lambda: float(next(ticks)),
    )
    assert claimed.outcome is Phase2ClaimOutcome.claimed and len(waited) == 3

    start_extraction(store, "thread-b", source_updated_at=200)
    store.mark_global_phase2_job_failed(ownership_token=claimed.ownership_token, reason="x", retry_delay_seconds=0)
    gave_up = claim_global_lock(
        store, worker_id="run-2", lease_seconds=LEASE, cooldown_seconds=3600, force=False,
        stage1_wait_seconds=5, sleep=lambda seconds: None, clock=lambda: float(next(ticks)),
    )
    assert gave_up.outcome is Phase2ClaimOutcome.skipped_stage1_in_flight
