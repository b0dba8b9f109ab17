"""Spec 9.2: stage-1 outcomes and phase-2 enqueueing (scenarios 13-18)."""

from __future__ import annotations

from codex_memories.state import (
    GLOBAL_JOB_KEY,
    JobKind,
    MemoryMode,
    Phase2ClaimOutcome,
    Stage1ClaimOutcome,
)
from tests.state.support import (
    LEASE,
    NOW,
    FakeClock,
    age_phase2_cooldown,
    claim,
    claim_and_succeed,
    execute_sql,
    fixed_id,
    make_thread,
    scalar_sql,
)

T = fixed_id(1)


def global_rows(store) -> int:
    return scalar_sql(store, "SELECT COUNT(*) FROM jobs WHERE kind = 'memory_consolidate_global'")


def p2claim(store, worker: str = "p2-worker"):
    return store.try_claim_global_phase2_job(worker_id=worker, lease_seconds=LEASE)


def test_an_empty_extraction_without_a_previous_output_marks_done_and_enqueues_nothing(store):
    result = claim(store, T, 100)

    assert store.mark_stage1_job_succeeded_no_output(
        thread_id=T, ownership_token=result.ownership_token
    )

    assert store.get_stage1_output(T) is None
    assert claim(store, T, 100).outcome is Stage1ClaimOutcome.skipped_up_to_date
    assert global_rows(store) == 0
    job = store.get_job(JobKind.stage1, T)
    assert (job.status, job.last_success_watermark, job.lease_until) == ("done", 100, None)


def test_an_empty_re_extraction_deletes_the_previous_output_and_enqueues_phase2(store, clock):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100, raw_memory="raw", rollout_summary="sum")
    first = p2claim(store)
    assert (first.outcome, first.input_watermark) == (Phase2ClaimOutcome.claimed, 100)
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=first.ownership_token, completed_watermark=100, selected=[]
    )

    again = claim(store, T, 101)
    assert store.mark_stage1_job_succeeded_no_output(
        thread_id=T, ownership_token=again.ownership_token
    )

    assert scalar_sql(store, "SELECT COUNT(*) FROM stage1_outputs") == 0
    age_phase2_cooldown(store, NOW)
    second = p2claim(store)
    assert (second.outcome, second.input_watermark) == (Phase2ClaimOutcome.claimed, 101)


def test_every_successful_extraction_enqueues_phase2_with_its_version(store):
    claim_and_succeed(store, fixed_id(1), 100)
    claim_and_succeed(store, fixed_id(2), 101)

    result = p2claim(store)

    assert (result.outcome, result.input_watermark) == (Phase2ClaimOutcome.claimed, 101)


def test_a_successful_extraction_keeps_usage_and_selection_of_the_row_it_refreshes(store):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100)
    store.record_stage1_output_usage([T, T])
    execute_sql(
        store,
        "UPDATE stage1_outputs SET selected_for_phase2 = 1,"
        " selected_for_phase2_source_updated_at = 100",
    )

    claim_and_succeed(store, T, 101, raw_memory="new raw", rollout_summary="new sum",
                      rollout_slug="new-slug")

    output = store.get_stage1_output(T)
    assert (output.source_updated_at, output.raw_memory, output.rollout_slug) == (
        101, "new raw", "new-slug",
    )
    assert (output.usage_count, output.last_usage) == (2, NOW)
    assert (output.selected_for_phase2, output.selected_for_phase2_source_updated_at) == (True, 100)


def test_deleting_a_selected_thread_removes_its_memory_and_enqueues_phase2(store, clock: FakeClock):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100)
    lock = p2claim(store)
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token,
        completed_watermark=100,
        selected=store.list_stage1_outputs_for_global(10),
    )
    clock.advance(60)
    before_delete = int(clock())

    assert store.delete_thread(T) == 1

    assert scalar_sql(store, "SELECT COUNT(*) FROM stage1_outputs WHERE thread_id = :t", t=T) == 0
    assert store.get_job(JobKind.stage1, T) is None
    job = store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    assert job.status == "pending"
    assert job.input_watermark >= before_delete
    assert store.list_stage1_outputs_for_global(10) == []
    assert store.get_thread(T) is None


def test_deleting_thread_memory_keeps_the_thread_row(store):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100)

    assert store.delete_thread_memory(T)

    assert store.get_stage1_output(T) is None
    assert store.get_job(JobKind.stage1, T) is None
    assert store.get_thread(T) is not None
    assert not store.delete_thread_memory(T)


def test_polluting_a_selected_thread_enqueues_phase2(store, clock: FakeClock):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100)
    lock = p2claim(store)
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token,
        completed_watermark=100,
        selected=store.list_stage1_outputs_for_global(10),
    )

    assert store.mark_thread_memory_mode_polluted(T)

    assert store.get_thread(T).memory_mode is MemoryMode.polluted
    assert store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY).status == "pending"
    age_phase2_cooldown(store, NOW)
    assert p2claim(store).outcome is Phase2ClaimOutcome.claimed


def test_polluting_an_already_polluted_selected_thread_returns_false_but_still_enqueues(store):
    store.upsert_threads([make_thread(T)])
    claim_and_succeed(store, T, 100)
    lock = p2claim(store)
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token,
        completed_watermark=100,
        selected=store.list_stage1_outputs_for_global(10),
    )
    execute_sql(store, "UPDATE threads SET memory_mode = 'polluted' WHERE id = :t", t=T)

    assert not store.mark_thread_memory_mode_polluted(T)

    assert store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY).status == "pending"
    age_phase2_cooldown(store, NOW)
    assert p2claim(store).outcome is Phase2ClaimOutcome.claimed


def test_clearing_memory_data_deletes_outputs_and_jobs_but_keeps_thread_modes(store):
    store.upsert_threads(
        [make_thread(fixed_id(1)), make_thread(fixed_id(2), memory_mode=MemoryMode.disabled)]
    )
    claim_and_succeed(store, fixed_id(1), 100)
    claim(store, fixed_id(3), 100)
    p2claim(store)

    counts = store.clear_memory_data()

    assert counts == {"stage1_outputs": 1, "memory_stage1": 2, "memory_consolidate_global": 1}
    assert scalar_sql(store, "SELECT COUNT(*) FROM stage1_outputs") == 0
    assert scalar_sql(store, "SELECT COUNT(*) FROM jobs") == 0
    assert store.get_thread(fixed_id(1)).memory_mode is MemoryMode.enabled
    assert store.get_thread(fixed_id(2)).memory_mode is MemoryMode.disabled


def test_finalizers_add_token_usage_to_the_job_totals(store):
    first = claim(store, T, 100)
    store.mark_stage1_job_failed(
        thread_id=T,
        ownership_token=first.ownership_token,
        reason="failed_model_request",
        retry_delay_seconds=0,
        usage={"input_tokens": 10, "total_tokens": 12},
    )
    second = claim(store, T, 100)
    store.mark_stage1_job_succeeded(
        thread_id=T,
        ownership_token=second.ownership_token,
        source_updated_at=100,
        raw_memory="raw",
        rollout_summary="sum",
        rollout_slug=None,
        usage={"input_tokens": 5, "cached_input_tokens": 1, "output_tokens": 2,
               "reasoning_output_tokens": 3, "total_tokens": 7},
    )

    job = store.get_job(JobKind.stage1, T)
    assert (job.input_tokens, job.cached_input_tokens, job.output_tokens) == (15, 1, 2)
    assert (job.reasoning_output_tokens, job.total_tokens) == (3, 19)
    summary = store.status_summary()
    assert summary.token_totals["total_tokens"] == 19
    assert summary.token_totals_by_kind["memory_stage1"]["input_tokens"] == 15


def test_unknown_token_usage_keys_are_rejected_before_anything_is_written(store):
    result = claim(store, T, 100)

    try:
        store.mark_stage1_job_succeeded_no_output(
            thread_id=T, ownership_token=result.ownership_token, usage={"tokens": 1}
        )
    except ValueError as exc:
        assert "tokens" in str(exc)
    else:
        raise AssertionError("unknown usage key accepted")
    assert store.get_job(JobKind.stage1, T).status == "running"
