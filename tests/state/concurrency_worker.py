"""Worker processes for test_concurrency.py (a plain module so `spawn` can import it)."""

from __future__ import annotations

import time

from codex_memories.state import JobKind, MemoryStore


def open_store(url: str, start_at: float) -> int:
    """Open (and so migrate) the store at the same moment as the other workers."""
    _sleep_until(start_at)
    store = MemoryStore.open(url)
    try:
        return store.status_summary().stage1_outputs
    finally:
        store.close()


def claim_until_done(
    url: str, worker_id: str, total: int, start_at: float, deadline_seconds: float
) -> list[str]:
    """Claim and finish stage-1 jobs until all `total` threads are done; return what we claimed."""
    store = MemoryStore.open(url)
    claimed: list[str] = []
    try:
        _sleep_until(start_at)
        deadline = time.monotonic() + deadline_seconds
        while True:
            claims = store.claim_stage1_jobs_for_startup(
                worker_id=worker_id,
                current_thread_id=None,
                scan_limit=5000,
                max_claimed=64,
                max_age_days=None,
                min_rollout_idle_hours=None,
                allowed_sources=["cli"],
            )
            for claim in claims:
                claimed.append(claim.thread_id)
                finished = store.mark_stage1_job_succeeded(
                    thread_id=claim.thread_id,
                    ownership_token=claim.ownership_token,
                    source_updated_at=claim.source_updated_at,
                    raw_memory=f"raw {claim.thread_id}",
                    rollout_summary=f"summary by {worker_id}",
                    rollout_slug=None,
                )
                if not finished:
                    raise RuntimeError(f"{worker_id} lost ownership of {claim.thread_id}")
            if claims:
                continue
            jobs = store.status_summary().jobs_by_kind_and_status
            if jobs.get(JobKind.stage1.value, {}).get("done", 0) >= total:
                return claimed
            if time.monotonic() > deadline:
                raise TimeoutError(f"{worker_id}: work left after {deadline_seconds}s: {jobs}")
            time.sleep(0.05)
    finally:
        store.close()


def _sleep_until(start_at: float) -> None:
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
