"""Spec 9.1: stage-1 claiming (scenarios 1, 2, 5-12; 3 and 4 are in test_concurrency.py)."""

from __future__ import annotations

from codex_memories.state import JobKind, MemoryMode, MemoryStore, Stage1ClaimOutcome
from tests.state.support import (
    DAY,
    HOUR,
    NOW,
    FakeClock,
    claim,
    claim_and_succeed,
    execute_sql,
    fixed_id,
    make_thread,
    scalar_sql,
)

T = fixed_id(1)


def startup_claim(store: MemoryStore, *, scan_limit: int, max_claimed: int, current: str | None = None,
                  max_age_days: int | None = 30, min_rollout_idle_hours: int | None = 12):
    return store.claim_stage1_jobs_for_startup(
        worker_id="startup-worker",
        current_thread_id=current,
        scan_limit=scan_limit,
        max_claimed=max_claimed,
        max_age_days=max_age_days,
        min_rollout_idle_hours=min_rollout_idle_hours,
        allowed_sources=["cli"],
    )


def test_a_thread_already_extracted_at_its_version_is_skipped_until_it_changes(store):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100, raw_memory="raw", rollout_summary="sum")

    assert claim(store, T, 100, worker="worker-b").outcome is Stage1ClaimOutcome.skipped_up_to_date
    assert claim(store, T, 101, worker="worker-b").outcome is Stage1ClaimOutcome.claimed


def test_a_fresh_lease_blocks_other_workers_and_a_stale_lease_is_stolen(store):
    first = claim(store, T, 100, worker="worker-a")
    assert first.outcome is Stage1ClaimOutcome.claimed

    assert claim(store, T, 100, worker="worker-b").outcome is Stage1ClaimOutcome.skipped_running

    execute_sql(store, "UPDATE jobs SET lease_until = 0 WHERE job_key = :key", key=T)
    stolen = claim(store, T, 100, worker="worker-b")
    assert stolen.outcome is Stage1ClaimOutcome.claimed
    assert stolen.ownership_token != first.ownership_token
    assert store.get_job(JobKind.stage1, T).worker_id == "worker-b"


def test_startup_claim_honours_age_idle_and_current_thread_filters(store):
    now_ms = NOW * 1000
    store.upsert_threads(
        [
            make_thread("current", updated_at_ms=now_ms),
            make_thread("fresh", updated_at_ms=now_ms - HOUR * 1000),
            make_thread("just-under-idle", updated_at_ms=now_ms - 12 * HOUR * 1000 + 60_000),
            make_thread("eligible", updated_at_ms=now_ms - 12 * HOUR * 1000 - 60_000),
            make_thread("old", updated_at_ms=now_ms - 31 * DAY * 1000),
        ]
    )

    claims = startup_claim(store, scan_limit=1, max_claimed=5, current="current")

    assert [c.thread_id for c in claims] == ["eligible"]
    assert claims[0].source_updated_at == (now_ms - 12 * HOUR * 1000 - 60_000) // 1000
    assert claims[0].rollout_path.endswith("rollout-eligible.jsonl")


def test_scan_limit_is_applied_before_the_up_to_date_probe(store):
    now_ms = NOW * 1000
    up_to_date_ms = now_ms - 13 * HOUR * 1000
    store.upsert_threads(
        [
            make_thread("up-to-date", updated_at_ms=up_to_date_ms),
            make_thread("stale", updated_at_ms=now_ms - 14 * HOUR * 1000),
        ]
    )
    claim_and_succeed(store, "up-to-date", up_to_date_ms // 1000)

    assert startup_claim(store, scan_limit=1, max_claimed=1) == []
    claims = startup_claim(store, scan_limit=2, max_claimed=1)
    assert [c.thread_id for c in claims] == ["stale"]


def test_disabled_threads_are_never_claimed(store):
    updated = NOW * 1000 - 13 * HOUR * 1000
    store.upsert_threads(
        [
            make_thread("enabled", updated_at_ms=updated),
            make_thread("disabled", updated_at_ms=updated, memory_mode=MemoryMode.disabled),
        ]
    )

    claims = startup_claim(store, scan_limit=10, max_claimed=10)

    assert [c.thread_id for c in claims] == ["enabled"]


def test_the_global_running_cap_counts_live_jobs_of_every_worker(store):
    threads = [
        make_thread(f"thread-{i:03d}", updated_at_ms=NOW * 1000 - 13 * HOUR * 1000 - i * 1000)
        for i in range(80)
    ]
    store.upsert_threads(threads)
    for thread in threads[:10]:
        assert claim(store, thread.id, thread.updated_at_ms // 1000, worker="other").outcome is (
            Stage1ClaimOutcome.claimed
        )

    claims = startup_claim(store, scan_limit=200, max_claimed=64)

    assert len(claims) == 54
    live_running = scalar_sql(
        store,
        "SELECT COUNT(*) FROM jobs WHERE kind = 'memory_stage1' AND status = 'running'"
        " AND lease_until > :now",
        now=NOW,
    )
    assert live_running == 64
    assert startup_claim(store, scan_limit=200, max_claimed=64) == []


def test_two_startups_claim_two_full_batches_of_the_newest_threads(store):
    threads = [
        make_thread(f"thread-{i:03d}", updated_at_ms=NOW * 1000 - 13 * HOUR * 1000 - i * 1000)
        for i in range(200)
    ]
    store.upsert_threads(threads)

    first = startup_claim(store, scan_limit=5000, max_claimed=64)
    assert [c.thread_id for c in first] == [t.id for t in threads[:64]]
    for c in first:
        assert store.mark_stage1_job_succeeded(
            thread_id=c.thread_id,
            ownership_token=c.ownership_token,
            source_updated_at=c.source_updated_at,
            raw_memory="raw",
            rollout_summary="sum",
            rollout_slug=None,
        )

    second = startup_claim(store, scan_limit=5000, max_claimed=64)
    assert [c.thread_id for c in second] == [t.id for t in threads[64:128]]


def test_retry_exhaustion_does_not_block_newer_input(store):
    for _ in range(3):
        result = claim(store, T, 100)
        assert result.outcome is Stage1ClaimOutcome.claimed
        assert store.mark_stage1_job_failed(
            thread_id=T, ownership_token=result.ownership_token, reason="boom", retry_delay_seconds=0
        )

    assert claim(store, T, 100).outcome is Stage1ClaimOutcome.skipped_retry_exhausted
    assert claim(store, T, 101).outcome is Stage1ClaimOutcome.claimed
    job = store.get_job(JobKind.stage1, T)
    assert (job.retry_remaining, job.input_watermark) == (3, 101)


def test_a_failed_job_backs_off_unless_the_watermark_advances(store, clock: FakeClock):
    result = claim(store, T, 100)
    assert store.mark_stage1_job_failed(
        thread_id=T, ownership_token=result.ownership_token, reason="x", retry_delay_seconds=3600
    )
    job = store.get_job(JobKind.stage1, T)
    assert (job.status, job.retry_at, job.retry_remaining, job.last_error) == (
        "error", NOW + 3600, 2, "x",
    )

    assert claim(store, T, 100).outcome is Stage1ClaimOutcome.skipped_retry_backoff
    assert claim(store, T, 101).outcome is Stage1ClaimOutcome.claimed


def test_a_failed_job_is_claimable_again_once_its_backoff_elapsed(store, clock: FakeClock):
    result = claim(store, T, 100)
    store.mark_stage1_job_failed(
        thread_id=T, ownership_token=result.ownership_token, reason="x", retry_delay_seconds=3600
    )
    clock.advance(3600)

    again = claim(store, T, 100)

    assert again.outcome is Stage1ClaimOutcome.claimed
    assert store.get_job(JobKind.stage1, T).retry_remaining == 2


def test_a_stale_token_cannot_finalize_after_its_lease_was_stolen(store):
    store.upsert_threads([make_thread(T)])
    old = claim(store, T, 100, worker="worker-a")
    execute_sql(store, "UPDATE jobs SET lease_until = 0 WHERE job_key = :key", key=T)
    new = claim(store, T, 100, worker="worker-b")
    assert new.outcome is Stage1ClaimOutcome.claimed
    before = store.get_job(JobKind.stage1, T)

    assert not store.mark_stage1_job_succeeded(
        thread_id=T,
        ownership_token=old.ownership_token,
        source_updated_at=100,
        raw_memory="raw",
        rollout_summary="sum",
        rollout_slug=None,
    )
    assert not store.mark_stage1_job_succeeded_no_output(
        thread_id=T, ownership_token=old.ownership_token
    )
    assert not store.mark_stage1_job_failed(
        thread_id=T, ownership_token=old.ownership_token, reason="late", retry_delay_seconds=0
    )

    assert store.get_job(JobKind.stage1, T) == before
    assert store.get_stage1_output(T) is None
    assert store.get_job(JobKind.consolidate_global, "global") is None


def test_startup_claim_returns_nothing_for_a_zero_scan_limit_or_batch(store):
    store.upsert_threads([make_thread(T, updated_at_ms=NOW * 1000 - 13 * HOUR * 1000)])

    assert startup_claim(store, scan_limit=0, max_claimed=5) == []
    assert startup_claim(store, scan_limit=5, max_claimed=0) == []


def test_startup_claim_skips_archived_missing_and_foreign_source_threads_unless_asked(store):
    updated = NOW * 1000 - 13 * HOUR * 1000
    store.upsert_threads(
        [
            make_thread("archived", updated_at_ms=updated, archived=True, archived_at_ms=updated),
            make_thread("exec", updated_at_ms=updated, source="exec"),
            make_thread("no-message", updated_at_ms=updated, first_user_message=""),
            make_thread("missing", updated_at_ms=updated),
        ]
    )
    store.mark_threads_missing([make_thread("missing").rollout_path])

    assert startup_claim(store, scan_limit=10, max_claimed=10) == []
    backfill = store.claim_stage1_jobs_for_startup(
        worker_id="backfill",
        current_thread_id=None,
        scan_limit=10,
        max_claimed=10,
        max_age_days=None,
        min_rollout_idle_hours=None,
        allowed_sources=["cli"],
        include_archived=True,
    )
    assert [c.thread_id for c in backfill] == ["archived"]


def test_released_claims_are_not_failures_and_the_next_run_claims_them_again(store):
    """The rate-limit guard gives back claims it never sent: no error, no backoff, no retry spent."""
    store.upsert_threads([make_thread(T)])
    first = claim(store, T, 100)
    assert first.outcome is Stage1ClaimOutcome.claimed
    retry_before = scalar_sql(store, "SELECT retry_remaining FROM jobs WHERE job_key = :k", k=T)

    assert store.release_stage1_claims([(T, first.ownership_token), (T, "not-the-owner")]) == 1
    row = store.get_job(JobKind.stage1, T)
    assert (row.status, row.ownership_token, row.lease_until, row.retry_at, row.last_error) == ("pending", None, None, None, None)
    assert row.retry_remaining == retry_before

    again = claim(store, T, 100, worker="next-run")
    assert again.outcome is Stage1ClaimOutcome.claimed
    assert store.release_stage1_claims([(T, first.ownership_token)]) == 0  # the old token owns nothing now


def test_a_released_phase2_lease_is_claimable_at_once(store):
    claimed = store.try_claim_global_phase2_job(worker_id="w1", lease_seconds=3600)
    assert store.release_global_phase2_job(ownership_token=claimed.ownership_token)
    assert not store.release_global_phase2_job(ownership_token=claimed.ownership_token)
    again = store.try_claim_global_phase2_job(worker_id="w2", lease_seconds=3600)
    assert again.outcome.value == "claimed"


def test_the_scan_limit_counts_across_keyset_pages_and_ties_on_update_time(store, monkeypatch):
    """The claim reads the newest-first window in growing pages; the threads it reaches, and the
    bound, are exactly those of one `LIMIT scan_limit` query, ties on `updated_at_ms` included."""
    import codex_memories.state.stage1 as stage1_module

    monkeypatch.setattr(stage1_module, "_CLAIM_FIRST_PAGE", 2)
    base_ms = NOW * 1000 - 13 * HOUR * 1000
    # 9 up-to-date threads, newest first, three of them sharing one update time (ordered by id
    # descending among themselves), then the one stale thread.
    up_to_date = [(f"t{n}", base_ms - (n // 3) * 1000) for n in range(9)]
    store.upsert_threads([make_thread(thread_id, updated_at_ms=ms) for thread_id, ms in up_to_date])
    for thread_id, ms in up_to_date:
        claim_and_succeed(store, thread_id, ms // 1000)
    store.upsert_threads([make_thread("stale", updated_at_ms=base_ms - 10_000)])

    assert startup_claim(store, scan_limit=9, max_claimed=1) == []  # the bound falls just before it
    assert [c.thread_id for c in startup_claim(store, scan_limit=10, max_claimed=1)] == ["stale"]
