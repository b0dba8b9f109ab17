"""Forget audit, citation harvest offsets and the status summary."""

from __future__ import annotations

import pytest

from codex_memories.state import ForgetRoute, MemoryMode
from tests.state.support import LEASE, NOW, FakeClock, claim, claim_and_succeed, make_thread


def test_forget_audit_records_route_target_reason_and_what_was_removed(store, clock: FakeClock):
    store.record_forget_audit(
        route=ForgetRoute.retention_prune,
        target="stage1_outputs",
        reason="unused for 30 days",
        removed={"thread_ids": ["a", "b"]},
    )
    clock.advance(100)
    store.record_forget_audit(
        route=ForgetRoute.thread_deletion, target="thread:c", reason="rollout file vanished", removed=["c"]
    )

    records = store.list_forget_audit()
    assert [(r.route, r.target, r.removed, r.created_at) for r in records] == [
        ("retention_prune", "stage1_outputs", {"thread_ids": ["a", "b"]}, NOW),
        ("thread_deletion", "thread:c", ["c"], NOW + 100),
    ]
    assert records[0].id < records[1].id
    assert [r.target for r in store.list_forget_audit(since=NOW + 1)] == ["thread:c"]


def test_forget_audit_rejects_an_unknown_route(store):
    with pytest.raises(ValueError):
        store.record_forget_audit(route="vanished", target="x", reason="y", removed=[])  # type: ignore[arg-type]
    assert store.list_forget_audit() == []


def test_harvest_offsets_start_at_zero_and_remember_the_last_value(store):
    path = "/home/tester/.codex/sessions/rollout-x.jsonl"
    assert store.get_harvest_offset(path) == 0

    store.set_harvest_offset(path, 4096)
    assert store.get_harvest_offset(path) == 4096
    store.set_harvest_offset(path, 8192)
    assert store.get_harvest_offset(path) == 8192
    store.set_harvest_offset(path, 0)  # a rewritten file is scanned again
    assert store.get_harvest_offset(path) == 0

    with pytest.raises(ValueError):
        store.set_harvest_offset(path, -1)


def test_deleting_a_thread_forgets_its_harvest_offset(store):
    thread = make_thread("a")
    store.upsert_threads([thread])
    store.set_harvest_offset(thread.rollout_path, 100)

    store.delete_thread("a")

    assert store.get_harvest_offset(thread.rollout_path) == 0


def test_status_summary_counts_threads_jobs_outputs_and_the_phase2_job(store):
    store.upsert_threads(
        [
            make_thread("a"),
            make_thread("b", archived=True, archived_at_ms=1),
            make_thread("c", memory_mode=MemoryMode.polluted),
        ]
    )
    store.mark_threads_missing([make_thread("c").rollout_path])
    claim_and_succeed(store, "a", 100)
    claim(store, "b", 100)
    lock = store.try_claim_global_phase2_job(worker_id="w", lease_seconds=LEASE)
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token,
        completed_watermark=100,
        selected=store.list_stage1_outputs_for_global(5),
        usage={"input_tokens": 7, "total_tokens": 9},
    )

    summary = store.status_summary()

    assert summary.threads_by_memory_mode == {"enabled": 2, "disabled": 0, "polluted": 1}
    assert (summary.archived_threads, summary.missing_threads) == (1, 1)
    assert summary.jobs_by_kind_and_status == {
        "memory_stage1": {"done": 1, "running": 1},
        "memory_consolidate_global": {"done": 1},
    }
    assert (summary.stage1_outputs, summary.selected_for_phase2) == (1, 1)
    assert summary.last_phase2_job.status == "done"
    assert summary.last_phase2_job.last_success_watermark == 100
    assert summary.token_totals["input_tokens"] == 7
    assert summary.token_totals_by_kind["memory_consolidate_global"]["total_tokens"] == 9


def test_harvested_citations_count_once_when_two_harvesters_race(store) -> None:
    thread_id = "00000000-0000-4000-8000-000000000001"
    store.upsert_threads([make_thread(thread_id)])
    claim_and_succeed(store, thread_id, 100)
    first = store.record_harvested_citations(
        rollout_path="/r.jsonl", expected_offset=0, new_offset=100, thread_ids=[thread_id]
    )
    late = store.record_harvested_citations(
        rollout_path="/r.jsonl", expected_offset=0, new_offset=100, thread_ids=[thread_id]
    )
    assert (first, late) == (1, None)
    assert store.get_harvest_offset("/r.jsonl") == 100
    assert store.get_stage1_output(thread_id).usage_count == 1
    more = store.record_harvested_citations(
        rollout_path="/r.jsonl", expected_offset=100, new_offset=180, thread_ids=[thread_id, thread_id]
    )
    assert more == 2 and store.get_stage1_output(thread_id).usage_count == 3
