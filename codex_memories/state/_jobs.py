"""The leased-job row mechanics both job machines share (stage 1 per thread, the one global
phase-2 job): a row taken under a fresh token and lease, a failure with backoff, token usage
added up, an optimistic claim retried while the row changes under it.

Inside one transaction of the caller; nothing here opens one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, case, func, select
from sqlalchemy.sql.elements import ColumnElement

from codex_memories.state._base import jobs_table
from codex_memories.state.records import GLOBAL_JOB_KEY, TOKEN_USAGE_FIELDS, JobKind, JobRecord, JobStatus

_T = TypeVar("_T")

DEFAULT_RETRY_REMAINING = 3
_MAX_OPTIMISTIC_ATTEMPTS = 5


def job_record(row: Row[Any]) -> JobRecord:
    return JobRecord.model_validate(dict(row._mapping))


def unchanged_job(job: Row[Any]) -> tuple[ColumnElement[bool], ...]:
    """Row conditions that hold only while the job is exactly as we read it."""
    token_condition = (
        jobs_table.c.ownership_token.is_(None)
        if job.ownership_token is None
        else jobs_table.c.ownership_token == job.ownership_token
    )
    return (jobs_table.c.status == job.status, token_condition)


def running_values(worker_id: str, token: str, now: int, lease_seconds: int) -> dict[str, Any]:
    """A job row taken by `worker_id` under a fresh ownership token and lease (both claims)."""
    return {
        "status": JobStatus.running.value,
        "worker_id": worker_id,
        "ownership_token": token,
        "started_at": now,
        "finished_at": None,
        "lease_until": now + lease_seconds,
        "retry_at": None,
        "last_error": None,
    }


def failure_values(now: int, reason: str, retry_delay_seconds: int) -> dict[str, Any]:
    return {
        "status": JobStatus.error.value,
        "finished_at": now,
        "lease_until": None,
        "retry_at": now + retry_delay_seconds,
        "retry_remaining": case(
            (jobs_table.c.retry_remaining > 0, jobs_table.c.retry_remaining - 1), else_=0
        ),
        "last_error": reason,
    }


def token_usage_additions(usage: dict[str, int] | None) -> dict[str, Any]:
    """Token counts are added to the job's totals, so every attempt's cost is kept."""
    if not usage:
        return {}
    unknown = sorted(set(usage) - set(TOKEN_USAGE_FIELDS))
    if unknown:
        raise ValueError(f"unknown token usage keys {unknown}; expected {list(TOKEN_USAGE_FIELDS)}")
    return {
        name: func.coalesce(jobs_table.c[name], 0) + int(count) for name, count in usage.items()
    }


def until_settled(attempt: Callable[[], _T | None], what: str) -> _T:
    """Repeat an optimistic claim attempt (None: the row changed under it) a bounded number of times."""
    for _attempt in range(_MAX_OPTIMISTIC_ATTEMPTS):
        result = attempt()
        if result is not None:
            return result
    raise RuntimeError(f"{what} kept changing while being claimed")


def count_live_stage1_jobs(conn: Connection, now: int) -> int:
    return conn.execute(
        select(func.count())
        .select_from(jobs_table)
        .where(
            jobs_table.c.kind == JobKind.stage1.value,
            jobs_table.c.status == JobStatus.running.value,
            jobs_table.c.lease_until > now,
        )
    ).scalar_one()


def global_job_row(conn: Connection) -> Row[Any] | None:
    return conn.execute(
        select(jobs_table).where(
            jobs_table.c.kind == JobKind.consolidate_global.value, jobs_table.c.job_key == GLOBAL_JOB_KEY
        )
    ).one_or_none()
