"""`MemoryStore`: every read and write of the state DB, named by intent.

Contract:
- Inputs are plain values and records from `records.py`; outputs are records, never ORM rows.
- Each public method is one transaction. Claims and finalizers are safe across processes:
  SQLite write transactions start with `BEGIN IMMEDIATE` (see `db.py`) and so run one at a time;
  on PostgreSQL the transactions that decide on a job kind first take
  `pg_advisory_xact_lock(<key of that kind>)` (locks are always taken in the same order, before
  any row is written, so they cannot deadlock), and every ownership check is a row condition of
  the UPDATE itself. A transaction that hits "database is locked" or a PostgreSQL deadlock /
  serialization failure is rolled back and run again.
- Time comes from the injected `clock` (Unix seconds as a float): memory tables store whole
  seconds, `threads` milliseconds (spec 2.1).
- Semantics follow the spec: claiming 1.4, outcomes 1.10, stage-1 machine 2.3, phase-2 lock 2.4,
  other operations 2.5, phase-2 input selection 3 step 4. Where we go further (token usage per
  job, forget audit, citation harvest offsets, missing rollout files) the method says so.

The methods live by concern in the modules beside this one, one mixin each: `threads`
(discovery), `stage1` (claims, outcomes, outputs, backfill candidates, and `get_job` for either
job kind), `phase2` (the global job and its input selection), `projects` (projects and team
exports), `forgetting` (the forget routes' DB side), `usage_audit` (citations, the forget audit,
the status summary), `integrity` (the DB's identity for the memory folder, issue 36); `_base` holds the transaction helpers they share and `_jobs` the job-row
mechanics of both job machines. This module composes them and opens and closes the DB.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from codex_memories.state.db import create_engine_for_url, create_read_only_engine, sqlite_database_file
from codex_memories.state.forgetting import ForgettingStore
from codex_memories.state.integrity import IntegrityStore
from codex_memories.state.migrations import current_revision, head_revision, is_known_revision, upgrade_to_head
from codex_memories.state.phase2 import Phase2Store
from codex_memories.state.projects import ProjectsStore
from codex_memories.state.stage1 import Stage1Store
from codex_memories.state.threads import ThreadsStore
from codex_memories.state.usage_audit import UsageAuditStore


class StateDbNotCurrent(Exception):
    """A state DB at another schema revision than this version's, met by a read-only open."""

    def __init__(self, revision: str, head: str | None, *, older: bool) -> None:
        consequence = "the next run upgrades it" if older else "a newer version of codex-memories wrote it"
        super().__init__(f"its schema is at revision {revision}, this version's is {head}: {consequence}")
        self.revision = revision
        self.older = older


class MemoryStore(ThreadsStore, Stage1Store, Phase2Store, ProjectsStore, ForgettingStore, UsageAuditStore, IntegrityStore):
    """The state DB behind intent-named methods. Build it with `MemoryStore.open(url)`."""

    @classmethod
    def open(cls, url: str, *, clock: Callable[[], float] = time.time) -> MemoryStore:
        """Connect and migrate to the newest schema revision (a no-op when already there)."""
        engine = create_engine_for_url(url)
        try:
            upgrade_to_head(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, clock=clock)

    @classmethod
    def open_read_only(cls, url: str, *, clock: Callable[[], float] = time.time) -> MemoryStore | None:
        """Query behaviour (for the commands that only look: nothing is created, migrated or
        written, not even a folder):
        - None when there is no state DB yet: a SQLite file that does not exist (or in-memory
          SQLite), a database without our schema (no run has used it);
        - `StateDbNotCurrent` when the schema is at another revision than this version's (the
          next command that writes migrates it);
        - else a store whose reads work and whose writes fail (`create_read_only_engine`).
        """
        if make_url(url).get_backend_name() == "sqlite":
            file = sqlite_database_file(url)
            if file is None or not file.is_file():
                return None
        engine = create_read_only_engine(url)
        try:
            revision = current_revision(engine)
            if revision is None:
                engine.dispose()
                return None
            if revision != head_revision():
                raise StateDbNotCurrent(revision, head_revision(), older=is_known_revision(revision))
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, clock=clock)

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        """The underlying engine, for diagnostics and tests; callers use the methods."""
        return self._engine
