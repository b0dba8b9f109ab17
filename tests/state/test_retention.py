"""Spec 9.4: retention prune (scenarios 32-33), forgetting route 1."""

from __future__ import annotations

from tests.state.support import (
    DAY,
    NOW,
    claim_and_succeed,
    execute_sql,
    make_thread,
    query_sql,
    scalar_sql,
)


def stage1_job_rows(store) -> int:
    return scalar_sql(store, "SELECT COUNT(*) FROM jobs WHERE kind = 'memory_stage1'")


def test_retention_prunes_only_stale_unselected_rows_and_keeps_their_jobs(store):
    rows = {
        "stale_unused": NOW - 60 * DAY,
        "stale_used": NOW - 50 * DAY,
        "stale_selected": NOW - 45 * DAY,
        "fresh_used": NOW - 10 * DAY,
    }
    store.upsert_threads([make_thread(t) for t in rows])
    for thread_id, version in rows.items():
        claim_and_succeed(store, thread_id, version)
    execute_sql(store, "UPDATE stage1_outputs SET usage_count = 3, last_usage = :t"
                " WHERE thread_id = 'stale_used'", t=NOW - 40 * DAY)
    execute_sql(store, "UPDATE stage1_outputs SET selected_for_phase2 = 1"
                " WHERE thread_id = 'stale_selected'")
    execute_sql(store, "UPDATE stage1_outputs SET usage_count = 8, last_usage = :t"
                " WHERE thread_id = 'fresh_used'", t=NOW - 2 * DAY)
    jobs_before = stage1_job_rows(store)

    pruned = store.prune_stage1_outputs_for_retention(max_unused_days=30, limit=100)

    assert pruned == ["stale_unused", "stale_used"]
    remaining = {row[0] for row in query_sql(store, "SELECT thread_id FROM stage1_outputs")}
    assert remaining == {"fresh_used", "stale_selected"}
    assert stage1_job_rows(store) == jobs_before


def test_retention_prunes_the_stalest_rows_first_up_to_the_batch_limit(store):
    rows = {"sixty": NOW - 60 * DAY, "fifty": NOW - 50 * DAY, "forty": NOW - 40 * DAY}
    store.upsert_threads([make_thread(t) for t in rows])
    for thread_id, version in rows.items():
        claim_and_succeed(store, thread_id, version)

    assert store.prune_stage1_outputs_for_retention(max_unused_days=30, limit=2) == [
        "sixty", "fifty",
    ]

    assert store.get_stage1_output("forty") is not None
    assert scalar_sql(store, "SELECT COUNT(*) FROM stage1_outputs") == 1


def test_a_pruned_thread_is_not_re_extracted(store):
    version = NOW - 60 * DAY
    store.upsert_threads([make_thread("old", updated_at_ms=version * 1000)])
    claim_and_succeed(store, "old", version)
    store.prune_stage1_outputs_for_retention(max_unused_days=30, limit=10)

    claims = store.claim_stage1_jobs_for_startup(
        worker_id="w", current_thread_id=None, scan_limit=10, max_claimed=10,
        max_age_days=None, min_rollout_idle_hours=None, allowed_sources=["cli"],
    )

    assert claims == []
