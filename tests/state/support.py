"""Test helpers for the state store: a controllable clock, thread factories, raw SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from codex_memories.state import MemoryStore, Stage1ClaimOutcome, ThreadRecord

HOME = "/home/tester/.codex"
NOW = 1_750_000_000
HOUR = 3600
DAY = 86_400
LEASE = 3600
COOLDOWN = 21_600


class FakeClock:
    """A clock the test moves by hand; MemoryStore calls it for every `now`."""

    def __init__(self, now: float = NOW) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def fixed_id(n: int) -> str:
    """The spec's fixed ids: `…0001` is `00000000-0000-4000-8000-000000000001`."""
    return f"00000000-0000-4000-8000-{n:012d}"


def make_thread(thread_id: str, *, updated_at_ms: int = NOW * 1000, **fields: Any) -> ThreadRecord:
    values: dict[str, Any] = {
        "id": thread_id,
        "rollout_path": f"{HOME}/rollout-{thread_id}.jsonl",
        "created_at_ms": updated_at_ms,
        "updated_at_ms": updated_at_ms,
        "source": "cli",
        "first_user_message": "please fix the build",
        "cwd": f"{HOME}/workspace",
    }
    values.update(fields)
    return ThreadRecord(**values)


def execute_sql(store: MemoryStore, sql: str, **params: Any) -> int:
    with store.engine.begin() as conn:
        return conn.execute(text(sql), params).rowcount


def query_sql(store: MemoryStore, sql: str, **params: Any) -> list[Any]:
    with store.engine.connect() as conn:
        return list(conn.execute(text(sql), params))


def scalar_sql(store: MemoryStore, sql: str, **params: Any) -> Any:
    with store.engine.connect() as conn:
        return conn.execute(text(sql), params).scalar_one()


def claim(store: MemoryStore, thread_id: str, watermark: int, *, worker: str = "worker-a",
          max_running_jobs: int = 64):
    return store.try_claim_stage1_job(
        thread_id=thread_id,
        worker_id=worker,
        source_updated_at=watermark,
        lease_seconds=LEASE,
        max_running_jobs=max_running_jobs,
    )


def claim_and_succeed(
    store: MemoryStore,
    thread_id: str,
    watermark: int,
    *,
    raw_memory: str = "raw",
    rollout_summary: str = "sum",
    rollout_slug: str | None = None,
) -> None:
    result = claim(store, thread_id, watermark)
    assert result.outcome is Stage1ClaimOutcome.claimed, result
    assert store.mark_stage1_job_succeeded(
        thread_id=thread_id,
        ownership_token=result.ownership_token,
        source_updated_at=watermark,
        raw_memory=raw_memory,
        rollout_summary=rollout_summary,
        rollout_slug=rollout_slug,
    )


def age_phase2_cooldown(store: MemoryStore, now: int) -> None:
    execute_sql(
        store,
        "UPDATE jobs SET finished_at = :finished WHERE kind = 'memory_consolidate_global'",
        finished=now - COOLDOWN - 1,
    )


def insert_output(
    store: MemoryStore,
    thread_id: str,
    *,
    source_updated_at: int,
    raw_memory: str = "raw memory",
    rollout_summary: str = "summary",
    generated_at: int | None = None,
    usage_count: int | None = None,
    last_usage: int | None = None,
    selected_for_phase2: int = 0,
) -> None:
    execute_sql(
        store,
        "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary,"
        " generated_at, usage_count, last_usage, selected_for_phase2)"
        " VALUES (:thread_id, :source_updated_at, :raw_memory, :rollout_summary, :generated_at,"
        " :usage_count, :last_usage, :selected_for_phase2)",
        thread_id=thread_id,
        source_updated_at=source_updated_at,
        raw_memory=raw_memory,
        rollout_summary=rollout_summary,
        generated_at=source_updated_at if generated_at is None else generated_at,
        usage_count=usage_count,
        last_usage=last_usage,
        selected_for_phase2=selected_for_phase2,
    )
