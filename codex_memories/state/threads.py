"""Threads and discovery: the `threads` rows discovery writes from the rollout files it sees,
the files gone missing, and each thread's memory mode.

Part of `MemoryStore` (see `store.py` for the transaction and clock contract).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, case, or_, select, update

from codex_memories.state._base import (
    IN_LIST_CHUNK,
    StoreBase,
    chunks,
    is_selected_for_phase2,
    thread_record,
    threads_per_memory_mode,
    threads_table,
)
from codex_memories.state.phase2 import enqueue_global_job
from codex_memories.state.records import JobKind, MemoryMode, ThreadRecord

_STICKY_MEMORY_MODES = (MemoryMode.disabled.value, MemoryMode.polluted.value)
_THREAD_COLUMNS = tuple(column.name for column in threads_table.columns)


class ThreadsStore(StoreBase):
    """Discovery's side of the store."""

    def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """Query behaviour:
        - one `threads` row by id, missing or not; None when unknown.
        """

        def run(conn: Connection) -> ThreadRecord | None:
            row = conn.execute(select(threads_table).where(threads_table.c.id == thread_id)).one_or_none()
            return None if row is None else thread_record(row)

        return self._read(run)

    def get_threads(self, thread_ids: Iterable[str]) -> dict[str, ThreadRecord]:
        """Query behaviour:
        - the `threads` rows of these ids, by id (one query per chunk of ids); unknown ids are
          left out.
        """
        ids = sorted(set(thread_ids))

        def run(conn: Connection) -> dict[str, ThreadRecord]:
            found: dict[str, ThreadRecord] = {}
            for chunk in chunks(ids, IN_LIST_CHUNK):
                for row in conn.execute(select(threads_table).where(threads_table.c.id.in_(chunk))):
                    found[row.id] = thread_record(row)
            return found

        return self._read(run)

    def get_rollout_file_states(self) -> dict[str, tuple[int, int]]:
        """Query behaviour:
        - every known rollout path → (size, mtime_ns) as last seen by discovery, so unchanged
          files are not read again.
        """

        def run(conn: Connection) -> dict[str, tuple[int, int]]:
            rows = conn.execute(
                select(
                    threads_table.c.rollout_path, threads_table.c.rollout_size, threads_table.c.rollout_mtime_ns
                )
            )
            return {row.rollout_path: (row.rollout_size, row.rollout_mtime_ns) for row in rows}

        return self._read(run)

    def upsert_threads(self, threads: list[ThreadRecord]) -> int:
        """Query behaviour:
        - insert each thread, or update every column of the existing row with the same id;
        - `memory_mode` never goes back from `disabled`/`polluted` on update (only
          `set_thread_memory_mode` may re-enable a thread); an enabled thread takes the incoming
          mode;
        - `missing_since_ms` is cleared: the file was just seen;
        - duplicates in one batch: the last one wins. Returns the number of threads written.
        """
        if not threads:
            return 0
        latest_by_id = {thread.id: thread for thread in threads}
        rows = [
            _thread_values(latest_by_id[thread_id]) | {"missing_since_ms": None}
            for thread_id in sorted(latest_by_id)  # one row-lock order for every writer
        ]

        def run(conn: Connection) -> int:
            statement = self._insert_for_upsert(threads_table)
            excluded = statement.excluded
            assignments: dict[str, Any] = {
                name: excluded[name]
                for name in _THREAD_COLUMNS
                if name not in ("id", "memory_mode", "missing_since_ms")
            }
            assignments["memory_mode"] = case(
                (
                    # Plain equalities: an IN list cannot be expanded inside executemany.
                    or_(*(threads_table.c.memory_mode == mode for mode in _STICKY_MEMORY_MODES)),
                    threads_table.c.memory_mode,
                ),
                else_=excluded.memory_mode,
            )
            assignments["missing_since_ms"] = None
            upsert = statement.on_conflict_do_update(
                index_elements=[threads_table.c.id], set_=assignments
            )
            for chunk in chunks(rows, IN_LIST_CHUNK):
                conn.execute(upsert, chunk)
            return len(rows)

        return self._write(run)

    def mark_threads_missing(self, rollout_paths: list[str]) -> list[str]:
        """Query behaviour:
        - sets `missing_since_ms = now` on threads whose `rollout_path` is listed and that were
          not already marked missing;
        - returns the ids newly marked (sorted); already-missing threads keep their first
          `missing_since_ms` and are not returned again.
        """
        if not rollout_paths:
            return []
        now_ms = self._now_ms()
        paths = sorted(set(rollout_paths))

        def run(conn: Connection) -> list[str]:
            marked: list[str] = []
            for chunk in chunks(paths, IN_LIST_CHUNK):
                result = conn.execute(
                    update(threads_table)
                    .where(
                        threads_table.c.rollout_path.in_(chunk),
                        threads_table.c.missing_since_ms.is_(None),
                    )
                    .values(missing_since_ms=now_ms)
                    .returning(threads_table.c.id)
                )
                marked.extend(result.scalars())
            return sorted(marked)

        return self._write(run)

    def list_missing_threads(self) -> list[ThreadRecord]:
        """Query behaviour:
        - threads with `missing_since_ms` set, longest missing first (then by id).
        """

        def run(conn: Connection) -> list[ThreadRecord]:
            rows = conn.execute(
                select(threads_table)
                .where(threads_table.c.missing_since_ms.is_not(None))
                .order_by(threads_table.c.missing_since_ms.asc(), threads_table.c.id.asc())
            )
            return [thread_record(row) for row in rows]

        return self._read(run)

    def set_thread_memory_mode(self, thread_id: str, mode: MemoryMode | str) -> bool:
        """Query behaviour:
        - `UPDATE threads SET memory_mode = mode WHERE id = ? AND memory_mode != mode`;
        - any mode may be set, including back to `enabled` (an explicit user decision);
        - beyond the spec: when a thread leaves `enabled` and its output is selected for phase 2,
          phase 2 is enqueued with watermark now, as `mark_thread_memory_mode_polluted` does;
        - returns whether the row changed.
        """
        target = MemoryMode(mode)
        now = self._now()

        def run(conn: Connection) -> bool:
            changed = conn.execute(
                update(threads_table)
                .where(threads_table.c.id == thread_id, threads_table.c.memory_mode != target.value)
                .values(memory_mode=target.value)
            ).rowcount
            if changed and target is not MemoryMode.enabled and is_selected_for_phase2(conn, thread_id):
                enqueue_global_job(conn, now)
            return bool(changed)

        return self._write(run, locks=(JobKind.consolidate_global,))

    def latest_git_origin_by_cwd(self) -> dict[str, str | None]:
        """Query behaviour:
        - for each non-empty `cwd` in `threads` (archived and missing rollouts included: the
          record is what the session said), the `git_origin_url` of its most recently updated
          thread (ties: the larger id), None when that thread recorded none; one pass over
          `threads` ordered by (`cwd`, `updated_at_ms`, `id`).
        """

        def run(conn: Connection) -> dict[str, str | None]:
            rows = conn.execute(
                select(threads_table.c.cwd, threads_table.c.git_origin_url)
                .where(threads_table.c.cwd.is_not(None), threads_table.c.cwd != "")
                .order_by(threads_table.c.cwd, threads_table.c.updated_at_ms, threads_table.c.id)
            )
            return {row.cwd: row.git_origin_url for row in rows}  # the last row of each cwd wins

        return self._read(run)

    def count_threads_by_memory_mode(self) -> dict[str, int]:
        """Query behaviour:
        - `SELECT memory_mode, COUNT(*) FROM threads GROUP BY memory_mode`; every known mode is
          present, with 0 when no thread has it.
        """
        return self._read(threads_per_memory_mode)


def _thread_values(thread: ThreadRecord) -> dict[str, Any]:
    values = thread.model_dump()
    values["memory_mode"] = MemoryMode(thread.memory_mode).value
    return {name: values[name] for name in _THREAD_COLUMNS}
