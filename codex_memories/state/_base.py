"""What every concern of `MemoryStore` shares: the tables, one write or read transaction with
its retry on a transient lock error, the clock, and rows turned into records.

The store's methods are grouped by concern in the modules beside this one (`threads`, `stage1`,
`phase2`, `projects`, `forgetting`, `usage_audit`); each holds a mixin built on `StoreBase`, and
`store.MemoryStore` composes them. Nothing here is for callers outside `codex_memories.state`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Row, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError

from codex_memories.state.db import READ_ONLY_OPTION, is_transient_lock_error, writer_queue
from codex_memories.state.models import (
    CitationHarvestRow,
    ForgetAuditRow,
    JobRow,
    Stage1ArrivedResultRow,
    Stage1OutputRow,
    TeamExportRow,
    ThreadRow,
)
from codex_memories.state.records import JobKind, MemoryMode, Stage1Output, ThreadRecord

_T = TypeVar("_T")

threads_table = ThreadRow.__table__
outputs_table = Stage1OutputRow.__table__
jobs_table = JobRow.__table__
audit_table = ForgetAuditRow.__table__
harvest_table = CitationHarvestRow.__table__
arrived_table = Stage1ArrivedResultRow.__table__
team_exports_table = TeamExportRow.__table__

# One advisory lock per job kind (PostgreSQL); taken in ascending key order.
_ADVISORY_LOCK_KEYS = {JobKind.stage1: 7_302_143_001, JobKind.consolidate_global: 7_302_143_002}
IN_LIST_CHUNK = 500
_MAX_TRANSIENT_RETRIES = 30
_OUTPUT_COLUMNS = tuple(column.name for column in outputs_table.columns)


class StoreBase:
    """The engine, the clock and the transaction helpers every concern's methods run through."""

    def __init__(self, engine: Engine, *, clock: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._read_engine = engine.execution_options(**{READ_ONLY_OPTION: True})
        self._writer_queue = writer_queue(engine)
        self._clock = clock
        self._dialect = engine.dialect.name

    def _now(self) -> int:
        return int(self._clock())

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _write(
        self, work: Callable[[Connection], _T], *, locks: Sequence[JobKind] = ()
    ) -> _T:
        """Run `work` in one write transaction, retried whole on a transient lock error."""
        lock_keys = sorted({_ADVISORY_LOCK_KEYS[kind] for kind in locks})
        for attempt in range(_MAX_TRANSIENT_RETRIES + 1):
            try:
                with self._writer_queue, self._engine.begin() as conn:
                    if self._dialect == "postgresql":
                        for key in lock_keys:
                            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
                    return work(conn)
            except DBAPIError as exc:
                if attempt >= _MAX_TRANSIENT_RETRIES or not is_transient_lock_error(exc):
                    raise
                time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
        raise AssertionError("unreachable: the retry loop returns or raises")

    def _read(self, work: Callable[[Connection], _T]) -> _T:
        for attempt in range(_MAX_TRANSIENT_RETRIES + 1):
            try:
                with self._read_engine.connect() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if attempt >= _MAX_TRANSIENT_RETRIES or not is_transient_lock_error(exc):
                    raise
                time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
        raise AssertionError("unreachable: the retry loop returns or raises")

    def _insert_for_upsert(self, table: Any) -> Any:
        if self._dialect == "postgresql":
            return postgresql.insert(table)
        if self._dialect == "sqlite":
            return sqlite.insert(table)
        raise NotImplementedError(
            f"the state store supports SQLite and PostgreSQL, not {self._dialect}"
        )


def chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def thread_record(row: Row[Any]) -> ThreadRecord:
    return ThreadRecord.model_validate(dict(row._mapping))


def output_record(row: Row[Any]) -> Stage1Output:
    return Stage1Output.model_validate(dict(row._mapping))


def hydrated_outputs(*, outer: bool) -> Any:
    columns = [outputs_table.c[name] for name in _OUTPUT_COLUMNS]
    joined = outputs_table.join(threads_table, threads_table.c.id == outputs_table.c.thread_id, isouter=outer)
    return select(
        *columns, threads_table.c.cwd, threads_table.c.rollout_path, threads_table.c.git_branch
    ).select_from(joined)


def is_selected_for_phase2(conn: Connection, thread_id: str) -> bool:
    selected = conn.execute(
        select(outputs_table.c.selected_for_phase2).where(outputs_table.c.thread_id == thread_id)
    ).scalar_one_or_none()
    return bool(selected)


def threads_per_memory_mode(conn: Connection) -> dict[str, int]:
    counts = {mode.value: 0 for mode in MemoryMode}
    for mode, count in conn.execute(
        select(threads_table.c.memory_mode, func.count()).group_by(threads_table.c.memory_mode)
    ):
        counts[mode] = count
    return counts
