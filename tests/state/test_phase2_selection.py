"""Spec 9.3: listing and phase-2 input selection (scenarios 19-31)."""

from __future__ import annotations

from codex_memories.state import MemoryMode, MemoryStore, Phase2ClaimOutcome
from tests.state.support import (
    DAY,
    HOME,
    HOUR,
    LEASE,
    NOW,
    age_phase2_cooldown,
    claim_and_succeed,
    execute_sql,
    fixed_id,
    insert_output,
    make_thread,
    query_sql,
)

A, B, C, D = (fixed_id(n) for n in range(1, 5))


def p2claim(store: MemoryStore):
    return store.try_claim_global_phase2_job(worker_id="p2-worker", lease_seconds=LEASE)


def p2claim_and_succeed(store: MemoryStore, watermark: int, selected) -> None:
    lock = p2claim(store)
    assert lock.outcome is Phase2ClaimOutcome.claimed, lock
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=watermark, selected=selected
    )


def selection_flags(store: MemoryStore, thread_id: str):
    return tuple(
        query_sql(
            store,
            "SELECT selected_for_phase2, selected_for_phase2_source_updated_at"
            " FROM stage1_outputs WHERE thread_id = :t",
            t=thread_id,
        )[0]
    )


def test_listing_orders_newest_first_and_hydrates_thread_metadata(store):
    store.upsert_threads(
        [
            make_thread(A, cwd=f"{HOME}/workspace-a"),
            make_thread(B, cwd=f"{HOME}/workspace-b", git_branch="feature/stage1-b"),
        ]
    )
    claim_and_succeed(store, A, 100, raw_memory="raw a", rollout_summary="summary a")
    claim_and_succeed(store, B, 101, raw_memory="raw b", rollout_summary="summary b",
                      rollout_slug="rollout-b")

    listed = store.list_stage1_outputs_for_global(10)

    assert [o.thread_id for o in listed] == [B, A]
    b, a = listed
    assert (b.rollout_summary, b.rollout_slug, b.cwd, b.git_branch) == (
        "summary b", "rollout-b", f"{HOME}/workspace-b", "feature/stage1-b",
    )
    assert b.rollout_path == f"{HOME}/rollout-{B}.jsonl"
    assert (a.rollout_slug, a.git_branch) == (None, None)


def test_listing_skips_outputs_with_empty_payloads(store):
    store.upsert_threads([make_thread(A), make_thread(B), make_thread(C)])
    insert_output(store, A, source_updated_at=100, raw_memory="raw memory", rollout_summary="summary")
    insert_output(store, B, source_updated_at=101, raw_memory="", rollout_summary="")
    insert_output(store, C, source_updated_at=102, raw_memory=" \n", rollout_summary="\t ")

    assert [o.thread_id for o in store.list_stage1_outputs_for_global(1)] == [A]


def test_listing_skips_polluted_threads(store):
    store.upsert_threads([make_thread(A), make_thread(B)])
    claim_and_succeed(store, A, 100)
    claim_and_succeed(store, B, 101)
    store.mark_thread_memory_mode_polluted(B)

    assert [o.thread_id for o in store.list_stage1_outputs_for_global(10)] == [A]


def test_selection_returns_the_current_top_n_sorted_by_thread_id(store):
    store.upsert_threads([make_thread(A), make_thread(B), make_thread(C)])
    claim_and_succeed(store, A, 100, rollout_slug="rollout-a")
    claim_and_succeed(store, B, 101, rollout_slug="rollout-b")
    claim_and_succeed(store, C, 102, rollout_slug="rollout-c")
    lock = p2claim(store)
    assert lock.input_watermark == 102
    a_and_c = [o for o in store.list_stage1_outputs_for_global(10) if o.thread_id in (A, C)]
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=102, selected=a_and_c
    )

    selection = store.get_phase2_input_refs(n=2, max_unused_days=36500)

    assert [o.thread_id for o in selection] == [B, C]
    assert selection[1].rollout_path == f"{HOME}/rollout-{C}.jsonl"
    assert selection[1].rollout_slug == "rollout-c"


def test_polluted_rows_leave_the_selection(store):
    store.upsert_threads([make_thread(A), make_thread(B)])
    claim_and_succeed(store, A, 100)
    claim_and_succeed(store, B, 101)
    p2claim_and_succeed(store, 101, store.list_stage1_outputs_for_global(10))

    store.mark_thread_memory_mode_polluted(B)

    assert [o.thread_id for o in store.get_phase2_input_refs(n=2, max_unused_days=36500)] == [A]


def test_a_refreshed_row_is_selected_at_its_new_version_while_its_flag_keeps_the_old_snapshot(store):
    store.upsert_threads([make_thread(A)])
    claim_and_succeed(store, A, 100)
    p2claim_and_succeed(store, 100, store.list_stage1_outputs_for_global(10))

    claim_and_succeed(store, A, 101)

    selection = store.get_phase2_input_refs(n=1, max_unused_days=36500)
    assert [(o.thread_id, o.source_updated_at) for o in selection] == [(A, 101)]
    assert selection_flags(store, A) == (1, 100)


def test_ranking_uses_current_data_not_the_previous_selection(store):
    store.upsert_threads([make_thread(t) for t in (A, B, C, D)])
    claim_and_succeed(store, A, 100)
    claim_and_succeed(store, B, 101)
    claim_and_succeed(store, C, 99)
    claim_and_succeed(store, D, 98)
    top_two = store.list_stage1_outputs_for_global(2)
    assert [o.thread_id for o in top_two] == [B, A]
    p2claim_and_succeed(store, 101, top_two)

    claim_and_succeed(store, A, 102)
    claim_and_succeed(store, C, 103)
    claim_and_succeed(store, D, 104)

    assert [o.thread_id for o in store.get_phase2_input_refs(n=2, max_unused_days=36500)] == [
        C, D,
    ]


def test_the_selection_snapshot_advances_on_the_next_success(store):
    store.upsert_threads([make_thread(A)])
    claim_and_succeed(store, A, 100)
    p2claim_and_succeed(store, 100, store.list_stage1_outputs_for_global(1))
    claim_and_succeed(store, A, 101)
    age_phase2_cooldown(store, NOW)

    listed = store.list_stage1_outputs_for_global(1)
    assert listed[0].source_updated_at == 101
    p2claim_and_succeed(store, 101, listed)

    assert selection_flags(store, A) == (1, 101)


def test_only_exact_snapshots_are_marked_selected(store):
    store.upsert_threads([make_thread(A)])
    claim_and_succeed(store, A, 100)
    lock = p2claim(store)
    stale_selection = store.list_stage1_outputs_for_global(1)
    assert stale_selection[0].source_updated_at == 100

    claim_and_succeed(store, A, 101)
    assert store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token, completed_watermark=100, selected=stale_selection
    )

    assert selection_flags(store, A) == (0, None)
    selection = store.get_phase2_input_refs(n=1, max_unused_days=36500)
    assert [(o.thread_id, o.source_updated_at) for o in selection] == [(A, 101)]


def test_selection_ranks_by_usage_first_then_by_recency_of_use(store):
    store.upsert_threads([make_thread(t) for t in (A, B, C)])
    insert_output(store, A, source_updated_at=NOW - 3 * DAY, usage_count=5, last_usage=NOW - 10 * DAY)
    insert_output(store, B, source_updated_at=NOW - 2 * DAY, usage_count=5, last_usage=NOW - DAY)
    insert_output(store, C, source_updated_at=NOW - DAY, usage_count=1, last_usage=NOW - HOUR)

    assert [o.thread_id for o in store.get_phase2_input_refs(n=1, max_unused_days=30)] == [B]


def test_selection_drops_stale_used_memories_and_keeps_fresh_unused_ones(store):
    store.upsert_threads([make_thread(t) for t in (A, B, C)])
    insert_output(store, A, source_updated_at=NOW - 40 * DAY, usage_count=9, last_usage=NOW - 31 * DAY)
    insert_output(store, B, source_updated_at=NOW - 2 * DAY)
    insert_output(store, C, source_updated_at=NOW - 50 * DAY, usage_count=1, last_usage=NOW - DAY)

    assert [o.thread_id for o in store.get_phase2_input_refs(n=3, max_unused_days=30)] == [B, C]


def test_thread_recency_beats_generation_recency(store):
    store.upsert_threads([make_thread(A), make_thread(B)])
    insert_output(store, A, source_updated_at=100, generated_at=300)
    insert_output(store, B, source_updated_at=200, generated_at=150)

    selection = store.get_phase2_input_refs(n=1, max_unused_days=36500)

    assert [(o.thread_id, o.source_updated_at) for o in selection] == [(B, 200)]


def test_selection_skips_disabled_and_unknown_threads_without_counting_them(store):
    store.upsert_threads([make_thread(A), make_thread(B, memory_mode=MemoryMode.disabled)])
    insert_output(store, A, source_updated_at=100)
    insert_output(store, B, source_updated_at=300)
    insert_output(store, C, source_updated_at=200)  # no thread row

    assert [o.thread_id for o in store.get_phase2_input_refs(n=1, max_unused_days=36500)] == [A]


def test_selection_pages_through_more_candidates_than_one_page(store):
    threads = [make_thread(f"t-{i:04d}") for i in range(1100)]
    store.upsert_threads(threads)
    for i, thread in enumerate(threads):
        insert_output(store, thread.id, source_updated_at=10_000 - i)
    # The 600 top-ranked threads are disabled: the selection must read past two pages of 512.
    execute_sql(
        store,
        "UPDATE threads SET memory_mode = 'disabled' WHERE id < :boundary",
        boundary="t-0600",
    )

    selection = store.get_phase2_input_refs(n=520, max_unused_days=36500)

    assert [o.thread_id for o in selection] == [f"t-{i:04d}" for i in range(600, 1100)]


def test_usage_recording_counts_duplicates_and_ignores_unknown_ids(store):
    store.upsert_threads([make_thread(A), make_thread(B)])
    claim_and_succeed(store, A, 100)
    claim_and_succeed(store, B, 101)

    assert store.record_stage1_output_usage([A, A, B, "missing"]) == 3

    a, b = store.get_stage1_output(A), store.get_stage1_output(B)
    assert (a.usage_count, b.usage_count) == (2, 1)
    assert a.last_usage == b.last_usage == NOW
