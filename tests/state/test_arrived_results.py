"""Answers that arrived before their job was finalized (`stage1_arrived_results`): kept through a
crash, consumed by finalizing, forgotten with the thread's memory."""

from __future__ import annotations

from codex_memories.extract.extraction import ExtractionResult, arrived_result_json, reuse_arrived_result
from codex_memories.outcomes import Outcome
from codex_memories.state.records import Stage1Claim
from tests.state.support import claim, fixed_id, make_thread, scalar_sql

T = fixed_id(1)
U = fixed_id(2)


def arrive(store, thread_id: str, source_updated_at: int = 100, prompt: str = "p1") -> ExtractionResult:
    result = ExtractionResult(
        thread_id=thread_id, ownership_token="paid-by-a-dead-run", source_updated_at=source_updated_at,
        rollout_path=f"/r/{thread_id}.jsonl", outcome=Outcome.succeeded, raw_memory="remember pnpm",
        rollout_summary="pnpm", provider="openai", model="m", prompt_sha256=prompt,
        usage={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35},
    )
    store.record_arrived_stage1_result(
        thread_id=thread_id, source_updated_at=source_updated_at, provider="openai", model="m",
        prompt_sha256=prompt, result_json=arrived_result_json(result),
    )
    return result


def arrived_rows(store) -> int:
    return scalar_sql(store, "SELECT COUNT(*) FROM stage1_arrived_results")


def test_an_arrived_answer_is_reused_by_the_next_owner_with_its_outcome_and_usage(store):
    paid = arrive(store, T)
    found = store.get_arrived_stage1_results([T, U])
    assert set(found) == {T}
    next_claim = Stage1Claim(thread_id=T, ownership_token="new-owner", source_updated_at=100, rollout_path="/r/moved.jsonl")
    reused = reuse_arrived_result(next_claim, found[T], provider="openai", model="m", prompt_sha256="p1")
    assert reused is not None and reused.reused_arrived_result
    assert (reused.ownership_token, reused.rollout_path) == ("new-owner", "/r/moved.jsonl")
    assert (reused.outcome, reused.raw_memory, reused.usage) == (paid.outcome, paid.raw_memory, paid.usage)


def test_an_answer_to_another_request_is_not_reused(store):
    arrive(store, T)
    arrived = store.get_arrived_stage1_results([T])[T]
    claim_of = Stage1Claim(thread_id=T, ownership_token="o", source_updated_at=100, rollout_path="/r")
    assert reuse_arrived_result(claim_of, arrived, provider="openai", model="m", prompt_sha256="changed") is None
    assert reuse_arrived_result(claim_of, arrived, provider="openai", model="other", prompt_sha256="p1") is None
    newer = claim_of.model_copy(update={"source_updated_at": 101})
    assert reuse_arrived_result(newer, arrived, provider="openai", model="m", prompt_sha256="p1") is None


def test_a_newer_answer_replaces_the_older_one(store):
    arrive(store, T, source_updated_at=100)
    arrive(store, T, source_updated_at=200, prompt="p2")
    row = store.get_arrived_stage1_results([T])[T]
    assert (row.source_updated_at, row.prompt_sha256) == (200, "p2")
    assert arrived_rows(store) == 1


def test_finalizing_the_job_consumes_the_answer_but_a_lost_lease_does_not(store):
    store.upsert_threads([make_thread(T), make_thread(U)])
    mine = claim(store, T, 100)
    theirs = claim(store, U, 100)
    arrive(store, T)
    arrive(store, U)
    assert not store.mark_stage1_job_succeeded(
        thread_id=U, ownership_token="not-the-owner", source_updated_at=100, raw_memory="m", rollout_summary="s", rollout_slug=None
    )
    assert set(store.get_arrived_stage1_results([T, U])) == {T, U}
    assert store.mark_stage1_job_succeeded(
        thread_id=T, ownership_token=mine.ownership_token, source_updated_at=100, raw_memory="m", rollout_summary="s", rollout_slug=None
    )
    assert store.mark_stage1_job_failed(thread_id=U, ownership_token=theirs.ownership_token, reason="quality", retry_delay_seconds=60)
    assert arrived_rows(store) == 0


def test_forgetting_a_thread_or_resetting_forgets_its_unfinalized_answer(store):
    store.upsert_threads([make_thread(T), make_thread(U)])
    arrive(store, T)
    arrive(store, U)
    store.delete_thread(T)
    assert set(store.get_arrived_stage1_results([T, U])) == {U}
    store.clear_memory_data()
    assert arrived_rows(store) == 0
