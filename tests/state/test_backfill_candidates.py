"""Backfill candidates: archived threads in, no windows, since/until and thread-id filters,
source and memory-mode rules kept, done threads left out (so a re-run is a no-op)."""

from __future__ import annotations

from codex_memories.state import MemoryMode, MemoryStore
from tests.state.support import DAY, NOW, claim, claim_and_succeed, make_thread

NOW_MS = NOW * 1000


def candidates(store: MemoryStore, **filters) -> list[str]:
    return [thread.id for thread in store.list_stage1_backfill_candidates(allowed_sources=["cli", "vscode"], **filters)]


def test_archived_old_and_fresh_threads_are_all_candidates_oldest_first(store):
    store.upsert_threads(
        [
            make_thread("fresh", updated_at_ms=NOW_MS - 1000),
            make_thread("archived-old", updated_at_ms=NOW_MS - 400 * DAY * 1000, archived=True),
            make_thread("live-old", updated_at_ms=NOW_MS - 100 * DAY * 1000),
        ]
    )

    assert candidates(store) == ["archived-old", "live-old", "fresh"]


def test_source_memory_mode_missing_and_empty_threads_stay_excluded(store):
    store.upsert_threads(
        [
            make_thread("ok", archived=True),
            make_thread("exec", source="exec", archived=True),
            make_thread("subagent", source="subagent", archived=True),
            make_thread("disabled", memory_mode=MemoryMode.disabled, archived=True),
            make_thread("polluted", memory_mode=MemoryMode.polluted, archived=True),
            make_thread("no-user-message", first_user_message=None, archived=True),
        ]
    )
    store.upsert_threads([make_thread("gone", archived=True)])
    store.mark_threads_missing([make_thread("gone").rollout_path])

    assert candidates(store) == ["ok"]


def test_since_is_inclusive_until_is_exclusive_and_ids_restrict(store):
    store.upsert_threads([make_thread(f"t{day}", updated_at_ms=NOW_MS - day * DAY * 1000) for day in range(5)])
    since, until = NOW_MS - 3 * DAY * 1000, NOW_MS - 1 * DAY * 1000

    assert candidates(store, since_ms=since, until_ms=until) == ["t3", "t2"]
    assert candidates(store, thread_ids=["t0", "t4", "unknown"]) == ["t4", "t0"]
    assert candidates(store, thread_ids=[]) == []


def test_threads_extracted_at_their_version_are_left_out_until_they_change(store):
    store.upsert_threads([make_thread("done", updated_at_ms=NOW_MS), make_thread("todo", updated_at_ms=NOW_MS)])
    claim_and_succeed(store, "done", NOW)

    assert candidates(store) == ["todo"]

    store.upsert_threads([make_thread("done", updated_at_ms=NOW_MS + 5000)])
    assert candidates(store) == ["todo", "done"]


def test_a_running_or_backing_off_job_stays_a_candidate_and_its_claim_says_why(store):
    store.upsert_threads([make_thread("busy")])
    assert claim(store, "busy", NOW).outcome.value == "claimed"

    assert candidates(store) == ["busy"]
    assert claim(store, "busy", NOW, worker="backfill").outcome.value == "skipped_running"


def test_thousands_of_thread_ids_are_queried_in_chunks(store):
    store.upsert_threads([make_thread(f"t{n:05d}") for n in range(1200)])

    found = candidates(store, thread_ids=[f"t{n:05d}" for n in range(0, 1200, 2)])

    assert len(found) == 600
