"""The state DB's side of the memory folder's integrity (issue 36, items 4 and 5): which DB this
is, whether it has ever seen anything, and the threads a forget ledger names.

Why the identity lives in the `jobs` table: the folder records which state DB built it
(`memory_folder.identity`), so a run with a fresh or different DB (a typo in the path, a new
machine) is refused instead of re-extracting what was forgotten. The DB needs a stable id for
that, and a schema migration for one value is heavier than one row in the table that is already
our key/value place for machine state: a job row of its own kind (`STATE_IDENTITY_KIND`), never
claimed (no claim query selects that kind), never counted as memory data (`clear_memory_data`
deletes the two memory kinds only, so a reset keeps the identity, as it keeps the threads).

Query behaviour:
- `state_identity()`: the id, or None when no run has bound this DB to a folder yet.
- `ensure_state_identity()`: the id, made (a random uuid4 hex) in one write when missing;
  concurrent callers agree on one (insert-if-absent, then read back).
- `holds_any_memory_state()`: whether any thread or stage-1 output row exists: a DB that has
  never discovered a session is "fresh".
- `thread_origins()`: (id, cwd, git_origin_url, memory_mode) of every thread, for the ledger's
  tests by hash (the ledger holds no clear text to query by).
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, exists, insert, select

from codex_memories.state._base import StoreBase, jobs_table, outputs_table, threads_table

STATE_IDENTITY_KIND = "codex_memories_state_identity"
STATE_IDENTITY_STATUS = "done"


class IntegrityStore(StoreBase):
    def state_identity(self) -> str | None:
        def run(conn: Connection) -> str | None:
            return conn.execute(
                select(jobs_table.c.job_key).where(jobs_table.c.kind == STATE_IDENTITY_KIND).order_by(jobs_table.c.job_key).limit(1)
            ).scalar_one_or_none()

        return self._read(run)

    def ensure_state_identity(self) -> str:
        now = self._now()

        def run(conn: Connection) -> str:
            found = conn.execute(
                select(jobs_table.c.job_key).where(jobs_table.c.kind == STATE_IDENTITY_KIND).order_by(jobs_table.c.job_key).limit(1)
            ).scalar_one_or_none()
            if found is not None:
                return found
            identity = uuid.uuid4().hex
            conn.execute(
                insert(jobs_table).values(
                    kind=STATE_IDENTITY_KIND, job_key=identity, status=STATE_IDENTITY_STATUS,
                    retry_remaining=0, started_at=now, finished_at=now,
                )
            )
            return identity

        return self._write(run)

    def holds_any_memory_state(self) -> bool:
        def run(conn: Connection) -> bool:
            return bool(conn.execute(select(exists().select_from(threads_table))).scalar()) or bool(
                conn.execute(select(exists().select_from(outputs_table))).scalar()
            )

        return self._read(run)

    def thread_origins(self) -> list[tuple[str, str | None, str | None, str]]:
        def run(conn: Connection) -> list[tuple[str, str | None, str | None, str]]:
            rows = conn.execute(
                select(threads_table.c.id, threads_table.c.cwd, threads_table.c.git_origin_url, threads_table.c.memory_mode).order_by(
                    threads_table.c.id
                )
            )
            return [(row.id, row.cwd, row.git_origin_url, row.memory_mode) for row in rows]

        return self._read(run)
