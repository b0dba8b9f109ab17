"""Claims under real concurrency: threads and processes with their own store instances.

Spec 9.1 scenarios 3 and 4, plus many processes draining a backlog and migrating a fresh DB.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from codex_memories.state import MemoryStore, Stage1ClaimOutcome
from tests.state import concurrency_worker
from tests.state.support import HOUR, LEASE, make_thread, scalar_sql
from tests.support.rollout_factory import write_rollout

ROUNDS = 10


def race(stores: list[MemoryStore], claims) -> list[Stage1ClaimOutcome]:
    """Run one claim per store at the same instant, each on its own thread."""
    barrier = threading.Barrier(len(stores))
    outcomes: list[Stage1ClaimOutcome | BaseException] = [None] * len(stores)  # type: ignore[list-item]

    def run(index: int) -> None:
        barrier.wait()
        try:
            outcomes[index] = claims[index](stores[index]).outcome
        except BaseException as exc:  # surfaced by the assertion below
            outcomes[index] = exc

    workers = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert not errors, errors
    return outcomes  # type: ignore[return-value]


def test_concurrent_claims_of_the_same_thread_yield_exactly_one_owner(db_url):
    stores = [MemoryStore.open(db_url), MemoryStore.open(db_url)]
    try:
        for round_number in range(ROUNDS):
            thread_id = f"same-{round_number}"

            def claim_it(store: MemoryStore, worker: str):
                return store.try_claim_stage1_job(
                    thread_id=thread_id, worker_id=worker, source_updated_at=100,
                    lease_seconds=LEASE, max_running_jobs=64,
                )

            outcomes = race(stores, [lambda s: claim_it(s, "a"), lambda s: claim_it(s, "b")])

            assert sorted(outcomes) == sorted(
                [Stage1ClaimOutcome.claimed, Stage1ClaimOutcome.skipped_running]
            )
    finally:
        for store in stores:
            store.close()


def test_concurrent_claims_of_different_threads_respect_a_cap_of_one(db_url):
    stores = [MemoryStore.open(db_url), MemoryStore.open(db_url)]
    try:
        for round_number in range(ROUNDS):
            ids = [f"a-{round_number}", f"b-{round_number}"]

            def claim_it(store: MemoryStore, thread_id: str):
                return store.try_claim_stage1_job(
                    thread_id=thread_id, worker_id=thread_id, source_updated_at=100,
                    lease_seconds=LEASE, max_running_jobs=1,
                )

            outcomes = race(stores, [lambda s: claim_it(s, ids[0]), lambda s: claim_it(s, ids[1])])

            assert sorted(outcomes) == sorted(
                [Stage1ClaimOutcome.claimed, Stage1ClaimOutcome.skipped_running]
            )
            winner = ids[outcomes.index(Stage1ClaimOutcome.claimed)]
            job = stores[0].get_job("memory_stage1", winner)
            assert stores[0].mark_stage1_job_succeeded_no_output(
                thread_id=winner, ownership_token=job.ownership_token
            )
    finally:
        for store in stores:
            store.close()


def test_eight_processes_drain_500_threads_claiming_each_exactly_once(db_url):
    total = 500
    now_ms = int(time.time() * 1000)
    with MemoryStore.open(db_url) as store:
        store.upsert_threads(
            [
                make_thread(f"thread-{i:04d}", updated_at_ms=now_ms - 13 * HOUR * 1000 - i * 1000)
                for i in range(total)
            ]
        )
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0
    # The deadlines catch a deadlock or a lost row (work that never ends), not slowness: on a
    # loaded 2-core machine 8 processes on PostgreSQL were seen to need more than 45 s.
    with context.Pool(8) as pool:
        pending = pool.starmap_async(
            concurrency_worker.claim_until_done,
            [(db_url, f"worker-{n}", total, start_at, 150.0) for n in range(8)],
        )
        per_worker = pending.get(timeout=240)

    claimed = Counter(thread_id for claims in per_worker for thread_id in claims)
    assert len(claimed) == total
    assert set(claimed.values()) == {1}
    with MemoryStore.open(db_url) as store:
        assert scalar_sql(store, "SELECT COUNT(*) FROM stage1_outputs") == total
        assert scalar_sql(
            store, "SELECT COUNT(*) FROM jobs WHERE kind = 'memory_stage1' AND status = 'done'"
        ) == total


def test_processes_opening_a_fresh_database_together_migrate_it_once(db_url):
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0
    with context.Pool(4) as pool:
        results = pool.starmap_async(
            concurrency_worker.open_store, [(db_url, start_at)] * 4
        ).get(timeout=60)

    assert results == [0] * 4
    with MemoryStore.open(db_url) as store:
        assert scalar_sql(store, "SELECT COUNT(*) FROM codex_memories_alembic_version") == 1


@pytest.mark.flow
def test_two_runs_started_together_bring_every_extracted_session_into_the_folder(db_url, tmp_path):
    """Issue 11 item 5: the second run's phase 2 used to start while the first run was still
    extracting, consolidate none of its sessions, and its cooldown then kept the first run's
    phase 2 out: 0 of 40 sessions reached the folder for 6 hours."""
    sessions = 40
    codex_home = tmp_path / "codex_home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    now = datetime.now(UTC)
    thread_ids = []
    for number in range(sessions):
        path = write_rollout(
            codex_home,
            created_at=now - timedelta(hours=20 + number),
            cwd=f"/home/dana/src/project-{number}",
            user_messages=[f"Always run make check-{number} before pushing."],
            tool_calls=[(f"make check-{number}", "ok", 0)],
        )
        thread_ids.append(path.stem.split("-", 6)[-1])
    memory_root = tmp_path / "memories"
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 5.0
    arguments = [
        (str(codex_home), db_url, str(memory_root), str(tmp_path / f"prefect-{n}"), 0.4, str(tmp_path / f"extracted-{n}.log"), start_at)
        for n in range(2)
    ]
    with context.Pool(2) as pool:
        exit_codes = pool.starmap_async(concurrency_worker.run_pipeline, arguments).get(timeout=280)

    assert exit_codes == [0, 0]
    extracted = Counter(
        line
        for n in range(2)
        if (tmp_path / f"extracted-{n}.log").exists()
        for line in (tmp_path / f"extracted-{n}.log").read_text(encoding="utf-8").split()
    )
    assert sorted(extracted) == sorted(thread_ids) and set(extracted.values()) == {1}  # each exactly once
    raw_memories = (memory_root / "raw_memories.md").read_text(encoding="utf-8")
    handbook = (memory_root / "MEMORY.md").read_text(encoding="utf-8")
    missing = [thread_id for thread_id in thread_ids if thread_id not in raw_memories or thread_id not in handbook]
    assert missing == [], f"{len(missing)} of {sessions} extracted sessions never reached the folder"
    assert len(list((memory_root / "rollout_summaries").glob("*.md"))) == sessions
