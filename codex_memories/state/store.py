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
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    Row,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import ColumnElement

from codex_memories.scopes import project_key
from codex_memories.state.db import (
    READ_ONLY_OPTION,
    create_engine_for_url,
    create_read_only_engine,
    is_transient_lock_error,
    sqlite_database_file,
    writer_queue,
)
from codex_memories.state.migrations import current_revision, head_revision, is_known_revision, upgrade_to_head
from codex_memories.state.models import (
    CitationHarvestRow,
    ForgetAuditRow,
    JobRow,
    Stage1ArrivedResultRow,
    Stage1OutputRow,
    TeamExportRow,
    ThreadRow,
)
from codex_memories.state.records import (
    GLOBAL_JOB_KEY,
    TOKEN_USAGE_FIELDS,
    ForgetAuditRecord,
    ForgetRoute,
    JobKind,
    JobRecord,
    JobStatus,
    MemoryMode,
    OutputIdentity,
    Phase2ClaimOutcome,
    Phase2ClaimResult,
    Phase2InputsState,
    Stage1ArrivedResult,
    Stage1Claim,
    Stage1ClaimOutcome,
    Stage1ClaimResult,
    Stage1ClaimResume,
    Stage1Output,
    Stage1OutputRef,
    StatusSummary,
    ThreadRecord,
)

DEFAULT_RETRY_REMAINING = 3
PHASE2_SUCCESS_COOLDOWN_SECONDS = 21_600
PHASE2_INPUT_SELECTION_PAGE_SIZE = 512

_T = TypeVar("_T")

_threads = ThreadRow.__table__
_outputs = Stage1OutputRow.__table__
_jobs = JobRow.__table__
_audit = ForgetAuditRow.__table__
_harvest = CitationHarvestRow.__table__
_arrived = Stage1ArrivedResultRow.__table__
_team_exports = TeamExportRow.__table__

# One advisory lock per job kind (PostgreSQL); taken in ascending key order.
_ADVISORY_LOCK_KEYS = {JobKind.stage1: 7_302_143_001, JobKind.consolidate_global: 7_302_143_002}
_IN_LIST_CHUNK = 500
_MAX_TRANSIENT_RETRIES = 30
_MAX_OPTIMISTIC_ATTEMPTS = 5
# What counts as an empty phase-1 payload: Rust's `trim()` strips all of these.
_BLANK_CHARACTERS = " \t\n\r"
_STICKY_MEMORY_MODES = (MemoryMode.disabled.value, MemoryMode.polluted.value)
_THREAD_COLUMNS = tuple(column.name for column in _threads.columns)
_OUTPUT_COLUMNS = tuple(column.name for column in _outputs.columns)
_SECONDS_PER_DAY = 86_400


class StateDbNotCurrent(Exception):
    """A state DB at another schema revision than this version's, met by a read-only open."""

    def __init__(self, revision: str, head: str | None, *, older: bool) -> None:
        consequence = "the next run upgrades it" if older else "a newer version of codex-memories wrote it"
        super().__init__(f"its schema is at revision {revision}, this version's is {head}: {consequence}")
        self.revision = revision
        self.older = older


class MemoryStore:
    """The state DB behind intent-named methods. Build it with `MemoryStore.open(url)`."""

    def __init__(self, engine: Engine, *, clock: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._read_engine = engine.execution_options(**{READ_ONLY_OPTION: True})
        self._writer_queue = writer_queue(engine)
        self._clock = clock
        self._dialect = engine.dialect.name

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

    # ------------------------------------------------------------------ discovery

    def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """Query behaviour:
        - one `threads` row by id, missing or not; None when unknown.
        """

        def run(conn: Connection) -> ThreadRecord | None:
            row = conn.execute(select(_threads).where(_threads.c.id == thread_id)).one_or_none()
            return None if row is None else _thread_record(row)

        return self._read(run)

    def get_threads(self, thread_ids: Iterable[str]) -> dict[str, ThreadRecord]:
        """Query behaviour:
        - the `threads` rows of these ids, by id (one query per chunk of ids); unknown ids are
          left out.
        """
        ids = sorted(set(thread_ids))

        def run(conn: Connection) -> dict[str, ThreadRecord]:
            found: dict[str, ThreadRecord] = {}
            for chunk in _chunks(ids, _IN_LIST_CHUNK):
                for row in conn.execute(select(_threads).where(_threads.c.id.in_(chunk))):
                    found[row.id] = _thread_record(row)
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
                    _threads.c.rollout_path, _threads.c.rollout_size, _threads.c.rollout_mtime_ns
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
            statement = self._insert_for_upsert(_threads)
            excluded = statement.excluded
            assignments: dict[str, Any] = {
                name: excluded[name]
                for name in _THREAD_COLUMNS
                if name not in ("id", "memory_mode", "missing_since_ms")
            }
            assignments["memory_mode"] = case(
                (
                    # Plain equalities: an IN list cannot be expanded inside executemany.
                    or_(*(_threads.c.memory_mode == mode for mode in _STICKY_MEMORY_MODES)),
                    _threads.c.memory_mode,
                ),
                else_=excluded.memory_mode,
            )
            assignments["missing_since_ms"] = None
            upsert = statement.on_conflict_do_update(
                index_elements=[_threads.c.id], set_=assignments
            )
            for chunk in _chunks(rows, _IN_LIST_CHUNK):
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
            for chunk in _chunks(paths, _IN_LIST_CHUNK):
                result = conn.execute(
                    update(_threads)
                    .where(
                        _threads.c.rollout_path.in_(chunk),
                        _threads.c.missing_since_ms.is_(None),
                    )
                    .values(missing_since_ms=now_ms)
                    .returning(_threads.c.id)
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
                select(_threads)
                .where(_threads.c.missing_since_ms.is_not(None))
                .order_by(_threads.c.missing_since_ms.asc(), _threads.c.id.asc())
            )
            return [_thread_record(row) for row in rows]

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
                update(_threads)
                .where(_threads.c.id == thread_id, _threads.c.memory_mode != target.value)
                .values(memory_mode=target.value)
            ).rowcount
            if changed and target is not MemoryMode.enabled and _is_selected(conn, thread_id):
                self._enqueue_global(conn, now)
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
                select(_threads.c.cwd, _threads.c.git_origin_url)
                .where(_threads.c.cwd.is_not(None), _threads.c.cwd != "")
                .order_by(_threads.c.cwd, _threads.c.updated_at_ms, _threads.c.id)
            )
            return {row.cwd: row.git_origin_url for row in rows}  # the last row of each cwd wins

        return self._read(run)

    def count_threads_by_memory_mode(self) -> dict[str, int]:
        """Query behaviour:
        - `SELECT memory_mode, COUNT(*) FROM threads GROUP BY memory_mode`; every known mode is
          present, with 0 when no thread has it.
        """
        return self._read(_count_threads_by_memory_mode)

    # ------------------------------------------------------------------ stage 1

    def claim_stage1_jobs_for_startup(
        self,
        *,
        worker_id: str,
        current_thread_id: str | None,
        scan_limit: int,
        max_claimed: int,
        max_age_days: int | None,
        min_rollout_idle_hours: int | None,
        allowed_sources: list[str],
        lease_seconds: int = 3600,
        include_archived: bool = False,
    ) -> list[Stage1Claim]:
        """Query behaviour (spec 1.4):
        - nothing when `scan_limit` or `max_claimed` is 0 or no source is allowed;
        - step A, one query on `threads`: not archived (unless `include_archived`, for backfill),
          non-empty `first_user_message`, `source IN allowed_sources`, `memory_mode='enabled'`,
          rollout file not missing, `id != current_thread_id`,
          `updated_at_ms >= now - max_age_days` and `updated_at_ms <= now - idle hours` (each
          filter skipped when its argument is None), `ORDER BY updated_at_ms DESC, id DESC
          LIMIT scan_limit` — the scan bound applies before any up-to-date probe;
        - step B, newest first until `max_claimed` claims: `source_updated_at =
          updated_at_ms // 1000`; skip rows whose output or `last_success_watermark` is already
          at least that; otherwise `try_claim_stage1_job(..., max_running_jobs=max_claimed)` and
          keep only `claimed` results;
        - shortcuts read without the write lock: rows running under a live lease are passed
          over (`try_claim_stage1_job` would answer `skipped_running`), and after a refused
          claim the pass ends if the live running count is at the cap (upstream would keep
          asking and be refused, unless another worker finished in that instant).
        """
        if scan_limit <= 0 or max_claimed <= 0 or not allowed_sources:
            return []
        now = self._now()
        now_ms = self._now_ms()

        def scan_page(after: tuple[int, str] | None, limit: int) -> list[Row[Any]]:
            return self._read(
                lambda conn: _scan_stage1_candidates(
                    conn,
                    now_ms=now_ms,
                    current_thread_id=current_thread_id,
                    scan_limit=limit,
                    max_age_days=max_age_days,
                    min_rollout_idle_hours=min_rollout_idle_hours,
                    allowed_sources=allowed_sources,
                    include_archived=include_archived,
                    after=after,
                )
            )

        claims: list[Stage1Claim] = []
        cap_was_reached = False
        for row in _stage1_candidate_pages(scan_page, scan_limit=scan_limit, max_claimed=max_claimed):
            if len(claims) >= max_claimed:
                break
            source_updated_at = row.updated_at_ms // 1000
            if row.output_source_updated_at is not None and (
                row.output_source_updated_at >= source_updated_at
            ):
                continue
            if row.last_success_watermark is not None and (
                row.last_success_watermark >= source_updated_at
            ):
                continue
            if row.job_status == JobStatus.running and (
                row.lease_until is not None and row.lease_until > now
            ):
                continue
            if cap_was_reached and self._count_live_stage1_jobs() >= max_claimed:
                # Every further claim would be refused too; a plain read spares the write locks.
                break
            result = self.try_claim_stage1_job(
                thread_id=row.id,
                worker_id=worker_id,
                source_updated_at=source_updated_at,
                lease_seconds=lease_seconds,
                max_running_jobs=max_claimed,
            )
            if result.outcome is Stage1ClaimOutcome.skipped_running:
                cap_was_reached = True
            if result.outcome is not Stage1ClaimOutcome.claimed or result.ownership_token is None:
                continue
            claims.append(
                Stage1Claim(
                    thread_id=row.id,
                    ownership_token=result.ownership_token,
                    source_updated_at=source_updated_at,
                    rollout_path=row.rollout_path,
                    cwd=row.cwd,
                    git_branch=row.git_branch,
                    source=row.source,
                    git_origin_url=row.git_origin_url,
                )
            )
        return claims

    def try_claim_stage1_job(
        self,
        *,
        thread_id: str,
        worker_id: str,
        source_updated_at: int,
        lease_seconds: int,
        max_running_jobs: int,
    ) -> Stage1ClaimResult:
        """Query behaviour (spec 1.4 steps 1-4, one locked transaction):
        - `skipped_up_to_date` when the output row or the job's `last_success_watermark` is at
          least `source_updated_at`;
        - no job row: insert it `running` (fresh token, lease, `retry_remaining=3`) if fewer than
          `max_running_jobs` stage-1 jobs run under a live lease, else `skipped_running`;
        - existing row: take it over only if its lease is not live, `retry_at` has passed or the
          watermark advanced, retries remain or the watermark advanced, and the running cap
          (other keys) is not reached; `retry_remaining` resets to 3 on an advanced watermark;
        - otherwise classify: `retry_remaining <= 0` → `skipped_retry_exhausted`, `retry_at >
          now` → `skipped_retry_backoff`, anything else → `skipped_running`.
        """

        def run(conn: Connection) -> Stage1ClaimResult:
            return _until_settled(
                lambda: self._claim_stage1_once(
                    conn,
                    thread_id=thread_id,
                    worker_id=worker_id,
                    source_updated_at=source_updated_at,
                    lease_seconds=lease_seconds,
                    max_running_jobs=max_running_jobs,
                ),
                f"stage-1 job {thread_id!r}",
            )

        return self._write(run, locks=(JobKind.stage1,))

    def resume_stage1_claims(
        self,
        claims: Sequence[Stage1Claim],
        *,
        worker_id: str,
        lease_seconds: int,
        max_running_jobs: int,
    ) -> list[Stage1ClaimResume]:
        """A retried flow run takes back the claims its earlier attempt made (same order).

        Query behaviour, per claim, under the stage-1 lock:
        - job `running` or `done` under the claim's token: the claim stands (a running one's
          lease is renewed for `worker_id`); a done one was finalized by the earlier attempt and
          its finalizer reports it again without writing (`finalize_extraction`);
        - job `error` under the claim's token (the earlier attempt failed it): taken again under a
          new token and lease, `retry_at` and `last_error` cleared; the retry is the user's
          explicit request, so the backoff does not apply; `retry_remaining` and the watermark
          stay;
        - anything else (released, taken over by another worker, forgotten): an ordinary claim
          (`try_claim_stage1_job` at the claim's version); the claim stands only if that claims.
        """
        now = self._now()
        resumed: list[Stage1ClaimResume] = []
        for claim in claims:

            def run(conn: Connection, claim: Stage1Claim = claim) -> Stage1ClaimResume | None:
                job = conn.execute(
                    select(_jobs).where(_jobs.c.kind == JobKind.stage1.value, _jobs.c.job_key == claim.thread_id)
                ).one_or_none()
                if job is None or job.ownership_token != claim.ownership_token:
                    return None
                if job.status == JobStatus.done:
                    return Stage1ClaimResume(outcome=Stage1ClaimOutcome.claimed, claim=claim)
                if job.status == JobStatus.running:
                    conn.execute(
                        update(_jobs)
                        .where(*_stage1_owner(claim.thread_id, claim.ownership_token))
                        .values(worker_id=worker_id, lease_until=now + lease_seconds)
                    )
                    return Stage1ClaimResume(outcome=Stage1ClaimOutcome.claimed, claim=claim)
                token = str(uuid.uuid4())
                taken = conn.execute(
                    update(_jobs)
                    .where(_jobs.c.kind == JobKind.stage1.value, _jobs.c.job_key == claim.thread_id, *_unchanged_job(job))
                    .values(**_running_values(worker_id, token, now, lease_seconds))
                ).rowcount
                if taken != 1:
                    return None
                return Stage1ClaimResume(
                    outcome=Stage1ClaimOutcome.claimed, claim=claim.model_copy(update={"ownership_token": token})
                )

            taken_back = self._write(run, locks=(JobKind.stage1,))
            if taken_back is None:
                result = self.try_claim_stage1_job(
                    thread_id=claim.thread_id,
                    worker_id=worker_id,
                    source_updated_at=claim.source_updated_at,
                    lease_seconds=lease_seconds,
                    max_running_jobs=max_running_jobs,
                )
                fresh = (
                    claim.model_copy(update={"ownership_token": result.ownership_token})
                    if result.outcome is Stage1ClaimOutcome.claimed and result.ownership_token
                    else None
                )
                taken_back = Stage1ClaimResume(outcome=result.outcome, claim=fresh)
            resumed.append(taken_back)
        return resumed

    def mark_stage1_job_succeeded(
        self,
        *,
        thread_id: str,
        ownership_token: str,
        source_updated_at: int,
        raw_memory: str,
        rollout_summary: str,
        rollout_slug: str | None,
        usage: dict[str, int] | None = None,
        scope: str | None = None,
        project_key: str | None = None,
    ) -> bool:
        """Query behaviour (spec 1.10, 2.3):
        - only while still owner (`status='running' AND ownership_token=?`), else False and
          nothing changes;
        - job → `done`, `finished_at=now`, lease and error cleared, `last_success_watermark =
          input_watermark`; token usage added to the job's totals;
        - upsert the output row; an existing row is overwritten only when the new
          `source_updated_at` is not older, and keeps `usage_count`, `last_usage` and the
          `selected_for_phase2*` snapshot; `scope` and `project_key` (issue 15) are written
          with the payloads they describe;
        - enqueue phase 2 with watermark `source_updated_at`.
        """
        usage_assignments = _usage_assignments(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            finished = conn.execute(_finish_stage1_job(thread_id, ownership_token, now, usage_assignments)).rowcount
            if finished != 1:
                return False
            _forget_arrived_result(conn, thread_id)
            statement = self._insert_for_upsert(_outputs).values(
                thread_id=thread_id,
                source_updated_at=source_updated_at,
                raw_memory=raw_memory,
                rollout_summary=rollout_summary,
                rollout_slug=rollout_slug,
                generated_at=now,
                scope=scope,
                project_key=project_key,
            )
            excluded = statement.excluded
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[_outputs.c.thread_id],
                    set_={
                        "source_updated_at": excluded.source_updated_at,
                        "raw_memory": excluded.raw_memory,
                        "rollout_summary": excluded.rollout_summary,
                        "rollout_slug": excluded.rollout_slug,
                        "generated_at": excluded.generated_at,
                        "scope": excluded.scope,
                        "project_key": excluded.project_key,
                    },
                    where=excluded.source_updated_at >= _outputs.c.source_updated_at,
                )
            )
            self._enqueue_global(conn, source_updated_at)
            return True

        return self._write(run, locks=(JobKind.consolidate_global,))

    def mark_stage1_job_succeeded_no_output(
        self, *, thread_id: str, ownership_token: str, usage: dict[str, int] | None = None
    ) -> bool:
        """Query behaviour (spec 1.10, forgetting route 3):
        - only while still owner, else False and nothing changes;
        - job → `done` as on success (`last_success_watermark = input_watermark`);
        - delete the thread's output row; enqueue phase 2 with the job's `input_watermark` only
          if a row was actually deleted.
        """
        usage_assignments = _usage_assignments(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            input_watermark = conn.execute(
                _finish_stage1_job(thread_id, ownership_token, now, usage_assignments).returning(
                    _jobs.c.input_watermark
                )
            ).one_or_none()
            if input_watermark is None:
                return False
            _forget_arrived_result(conn, thread_id)
            deleted = conn.execute(
                delete(_outputs).where(_outputs.c.thread_id == thread_id)
            ).rowcount
            if deleted:
                self._enqueue_global(conn, input_watermark[0] or 0)
            return True

        return self._write(run, locks=(JobKind.consolidate_global,))

    def mark_stage1_job_failed(
        self,
        *,
        thread_id: str,
        ownership_token: str,
        reason: str,
        retry_delay_seconds: int,
        usage: dict[str, int] | None = None,
    ) -> bool:
        """Query behaviour (spec 1.10):
        - only while still owner, else False and nothing changes;
        - `status='error'`, `finished_at=now`, lease cleared, `retry_at = now + delay`,
          `retry_remaining` decremented (never below 0), `last_error = reason`; token usage added.
        """
        usage_assignments = _usage_assignments(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            failed = conn.execute(
                update(_jobs)
                .where(*_stage1_owner(thread_id, ownership_token))
                .values(_failure_values(now, reason, retry_delay_seconds) | usage_assignments)
            ).rowcount
            if failed == 1:
                # A failed job is retried from the model: its arrived answer (e.g. one that
                # failed the quality check) must not be reused for ever.
                _forget_arrived_result(conn, thread_id)
            return failed == 1

        return self._write(run)

    def record_arrived_stage1_result(
        self,
        *,
        thread_id: str,
        source_updated_at: int,
        provider: str,
        model: str,
        prompt_sha256: str,
        result_json: str,
    ) -> None:
        """Query behaviour (a crash never pays twice):
        - upsert the thread's arrived result (one per thread; a newer answer replaces it),
          committed on return, before the batch's quality check or finalize can fail;
        - not ownership-checked: the answer was paid for whoever holds the job now, and the
          finalizers delete the row when the job finishes.
        """
        now = self._now()
        values = {
            "source_updated_at": source_updated_at,
            "provider": provider,
            "model": model,
            "prompt_sha256": prompt_sha256,
            "result_json": result_json,
            "arrived_at": now,
        }

        def run(conn: Connection) -> None:
            statement = self._insert_for_upsert(_arrived).values(thread_id=thread_id, **values)
            conn.execute(statement.on_conflict_do_update(index_elements=[_arrived.c.thread_id], set_=values))

        self._write(run)

    def get_arrived_stage1_results(self, thread_ids: Sequence[str]) -> dict[str, Stage1ArrivedResult]:
        """The arrived, unfinalized results of these threads, by thread id (absent: none)."""

        def run(conn: Connection) -> dict[str, Stage1ArrivedResult]:
            found: dict[str, Stage1ArrivedResult] = {}
            for chunk in _chunks(list(thread_ids), _IN_LIST_CHUNK):
                rows = conn.execute(select(_arrived).where(_arrived.c.thread_id.in_(chunk)))
                for row in rows:
                    found[row.thread_id] = Stage1ArrivedResult.model_validate(dict(row._mapping))
            return found

        return self._read(run)

    def release_stage1_claims(self, claims: Sequence[tuple[str, str]]) -> int:
        """Give back claims whose extraction was never sent (the rate-limit guard).

        Query behaviour: for each `(thread_id, ownership_token)` still owned, `status='pending'`,
        lease, token, worker and `started_at` cleared; `retry_at`, `retry_remaining`,
        `last_error` and `finished_at` untouched (not a failure, no backoff). The claim's
        `input_watermark` stays, so the next run claims the thread as usual. Returns the number
        released (a claim whose lease was taken meanwhile is not touched)."""

        def run(conn: Connection) -> int:
            released = 0
            for thread_id, ownership_token in claims:
                released += conn.execute(
                    update(_jobs)
                    .where(*_stage1_owner(thread_id, ownership_token))
                    .values(
                        status=JobStatus.pending.value,
                        ownership_token=None,
                        worker_id=None,
                        started_at=None,
                        lease_until=None,
                    )
                ).rowcount
            return released

        return self._write(run)

    def release_global_phase2_job(self, *, ownership_token: str) -> bool:
        """Give back the global phase-2 lease without running the agent (the rate-limit guard).

        Query behaviour: while still owner, `status='pending'`, lease, token and worker cleared;
        `retry_at`, `retry_remaining`, `last_error`, `finished_at` and the watermarks untouched
        (no backoff, no cooldown: the next run claims it). False when ownership was lost."""

        def run(conn: Connection) -> bool:
            return (
                conn.execute(
                    update(_jobs)
                    .where(*_global_owner(ownership_token))
                    .values(status=JobStatus.pending.value, ownership_token=None, worker_id=None, lease_until=None)
                ).rowcount
                == 1
            )

        return self._write(run, locks=(JobKind.consolidate_global,))

    def prune_stage1_outputs_for_retention(self, *, max_unused_days: int, limit: int) -> list[str]:
        """Query behaviour (spec 2.5, forgetting route 1):
        - delete up to `limit` output rows with `selected_for_phase2 = 0` and
          `COALESCE(last_usage, source_updated_at) < now - max_unused_days`, stalest first
          (`COALESCE(...) ASC, source_updated_at ASC, thread_id ASC`);
        - jobs rows are untouched, so the thread stays up to date and is not re-extracted;
        - returns the deleted thread ids, stalest first.
        """
        if limit <= 0:
            return []
        cutoff = self._now() - max_unused_days * _SECONDS_PER_DAY
        last_touched = func.coalesce(_outputs.c.last_usage, _outputs.c.source_updated_at)
        prunable = and_(_outputs.c.selected_for_phase2 == 0, last_touched < cutoff)

        def run(conn: Connection) -> list[str]:
            ordered = list(
                conn.execute(
                    select(_outputs.c.thread_id)
                    .where(prunable)
                    .order_by(
                        last_touched.asc(),
                        _outputs.c.source_updated_at.asc(),
                        _outputs.c.thread_id.asc(),
                    )
                    .limit(limit)
                ).scalars()
            )
            if not ordered:
                return []
            deleted = set(
                conn.execute(
                    delete(_outputs)
                    .where(_outputs.c.thread_id.in_(ordered), prunable)
                    .returning(_outputs.c.thread_id)
                ).scalars()
            )
            return [thread_id for thread_id in ordered if thread_id in deleted]

        return self._write(run)

    def get_stage1_output(self, thread_id: str) -> Stage1Output | None:
        """Query behaviour:
        - the thread's output row whatever its memory mode, hydrated with `cwd`,
          `rollout_path`, `git_branch` when the thread row exists; None when there is no row.
        """

        def run(conn: Connection) -> Stage1Output | None:
            row = conn.execute(
                _hydrated_outputs(outer=True).where(_outputs.c.thread_id == thread_id)
            ).one_or_none()
            return None if row is None else _output_record(row)

        return self._read(run)

    def stage1_outputs_for_project(self, project_key: str, *, include_user_level: bool = False) -> list[Stage1Output]:
        """Query behaviour (issue 15; export and forgetting by project):
        - rows whose `project_key` equals `project_key` exactly (keys come from
          `scopes.project_key` / `project_key_for_directory`), whatever their thread's memory
          mode, hydrated with `cwd`, `rollout_path`, `git_branch` (outer join: a row whose thread
          is gone is still returned);
        - by default only rows holding project-level memory (`scope` `project` or `mixed`; a
          `mixed` row's user-level blocks are split off with
          `extract.scope_tagging.split_raw_memory_by_scope`); `include_user_level` adds the
          rows that are user-level only;
        - ordered by `thread_id`; uses `idx_stage1_outputs_project_key`.
        """
        scopes = ["project", "mixed", "user"] if include_user_level else ["project", "mixed"]

        def run(conn: Connection) -> list[Stage1Output]:
            rows = conn.execute(
                _hydrated_outputs(outer=True)
                .where(_outputs.c.project_key == project_key, _outputs.c.scope.in_(scopes))
                .order_by(_outputs.c.thread_id)
            )
            return [_output_record(row) for row in rows]

        return self._read(run)

    def get_job(self, kind: JobKind | str, key: str) -> JobRecord | None:
        """Query behaviour:
        - one `jobs` row by `(kind, job_key)`; None when absent.
        """

        def run(conn: Connection) -> JobRecord | None:
            row = conn.execute(
                select(_jobs).where(_jobs.c.kind == str(kind), _jobs.c.job_key == key)
            ).one_or_none()
            return None if row is None else _job_record(row)

        return self._read(run)

    # ------------------------------------------------------------------ phase 2

    def enqueue_global_consolidation(self, watermark: int) -> None:
        """Query behaviour (spec 2.4):
        - new row: `pending`, `retry_remaining=3`, `input_watermark=W`, `last_success_watermark=0`;
        - existing row: stays `running` if running, else `pending`; `retry_at` cleared unless
          running; `retry_remaining = max(existing, 3)`; `input_watermark = W` if larger, else
          `existing + 1`.
        """
        self._write(
            lambda conn: self._enqueue_global(conn, watermark),
            locks=(JobKind.consolidate_global,),
        )

    def try_claim_global_phase2_job(
        self,
        *,
        worker_id: str,
        lease_seconds: int,
        cooldown_seconds: int = PHASE2_SUCCESS_COOLDOWN_SECONDS,
        ignore_cooldown: bool = False,
        defer_to_stage1_in_flight: bool = False,
        retried_flow_run: str | None = None,
    ) -> Phase2ClaimResult:
        """Query behaviour (spec 2.4, one locked transaction):
        - no row: insert `running` (`input_watermark=0`) → `claimed` (unless stage-1 jobs are
          in flight, below);
        - `retry_at > now` → `skipped_retry_unavailable`;
        - running under a live lease → `skipped_running`;
        - ours, `retried_flow_run` (a flow run retried from the Prefect UI): the two checks above
          do not apply to a row whose `worker_id` names that flow run (`<host>:<pid>:<flow run
          id>`): its backoff or its lease was left by an earlier attempt of the same run, and the
          retry is the user's explicit request to do the work now;
        - `last_error IS NULL AND finished_at > now - cooldown` → `skipped_cooldown`, unless
          `ignore_cooldown` (`--force`: skips this check only);
        - ours, with `defer_to_stage1_in_flight` (the phase-2 flow sets it; the default is the
          spec's claim): any `memory_stage1` job `running` under a live lease →
          `skipped_stage1_in_flight` and the row is left as it is (dirty, for the next run), so
          a consolidation never starts over extractions it cannot see yet;
        - otherwise take it: `running`, new token, `started_at=now`, `lease_until=now+lease`,
          `finished_at`, `retry_at`, `last_error` cleared → `claimed` with the row's
          `input_watermark`. `retry_remaining` is never checked.
        """

        def run(conn: Connection) -> Phase2ClaimResult:
            return _until_settled(
                lambda: self._claim_phase2_once(
                    conn,
                    worker_id=worker_id,
                    lease_seconds=lease_seconds,
                    cooldown_seconds=cooldown_seconds,
                    ignore_cooldown=ignore_cooldown,
                    defer_to_stage1_in_flight=defer_to_stage1_in_flight,
                    retried_flow_run=retried_flow_run,
                ),
                "global phase-2 job",
            )

        return self._write(run, locks=(JobKind.consolidate_global,))

    def heartbeat_global_phase2_job(self, *, ownership_token: str, lease_seconds: int) -> bool:
        """Query behaviour:
        - `lease_until = now + lease` where `status='running' AND ownership_token=?`;
        - False when ownership was lost.
        """
        now = self._now()

        def run(conn: Connection) -> bool:
            renewed = conn.execute(
                update(_jobs)
                .where(*_global_owner(ownership_token))
                .values(lease_until=now + lease_seconds)
            ).rowcount
            return renewed == 1

        return self._write(run)

    def mark_global_phase2_job_succeeded(
        self,
        *,
        ownership_token: str,
        completed_watermark: int,
        selected: Sequence[Stage1Output | Stage1OutputRef | OutputIdentity],
        usage: dict[str, int] | None = None,
        claimed_input_watermark: int | None = None,
    ) -> bool:
        """Query behaviour (spec 2.4), one transaction:
        - only while still owner, else False and nothing changes;
        - job → `done`, `finished_at=now`, lease and error cleared, `last_success_watermark =
          max(COALESCE(old, 0), completed_watermark)`; token usage added;
        - ours: when `claimed_input_watermark` is given and the row's `input_watermark` moved
          since the claim (a stage-1 output arrived, or was deleted, while this consolidation
          ran: work it could not see), the job goes to `pending` with `finished_at = NULL`
          instead: still dirty, and no cooldown counts from it (the cooldown needs a
          `finished_at`);
        - clear every `selected_for_phase2*` flag, then set `selected_for_phase2 = 1` and the
          snapshot for rows matching exactly `(thread_id, source_updated_at)` of each selected
          output (a row refreshed meanwhile stays unselected).
        """
        usage_assignments = _usage_assignments(usage)
        now = self._now()
        previous = func.coalesce(_jobs.c.last_success_watermark, 0)
        snapshots = sorted({(output.thread_id, output.source_updated_at) for output in selected})

        def run(conn: Connection) -> bool:
            current = _global_job_row(conn)
            work_arrived = (
                claimed_input_watermark is not None
                and current is not None
                and (current.input_watermark or 0) != claimed_input_watermark
            )
            finished = conn.execute(
                update(_jobs)
                .where(*_global_owner(ownership_token))
                .values(
                    status=JobStatus.pending.value if work_arrived else JobStatus.done.value,
                    finished_at=None if work_arrived else now,
                    lease_until=None,
                    last_error=None,
                    last_success_watermark=case(
                        (previous > completed_watermark, previous), else_=completed_watermark
                    ),
                    **usage_assignments,
                )
            ).rowcount
            if finished != 1:
                return False
            conn.execute(
                update(_outputs)
                .where(
                    or_(
                        _outputs.c.selected_for_phase2 != 0,
                        _outputs.c.selected_for_phase2_source_updated_at.is_not(None),
                    )
                )
                .values(selected_for_phase2=0, selected_for_phase2_source_updated_at=None)
            )
            if snapshots:
                conn.execute(
                    update(_outputs)
                    .where(
                        _outputs.c.thread_id == bindparam("selected_thread_id"),
                        _outputs.c.source_updated_at == bindparam("selected_source_updated_at"),
                    )
                    .values(
                        selected_for_phase2=1,
                        selected_for_phase2_source_updated_at=_outputs.c.source_updated_at,
                    ),
                    [
                        {"selected_thread_id": thread_id, "selected_source_updated_at": version}
                        for thread_id, version in snapshots
                    ],
                )
            return True

        return self._write(run, locks=(JobKind.consolidate_global,))

    def mark_global_phase2_job_failed(
        self,
        *,
        ownership_token: str,
        reason: str,
        retry_delay_seconds: int,
        usage: dict[str, int] | None = None,
    ) -> bool:
        """Query behaviour (spec 2.4):
        - only while still owner, else False;
        - `status='error'`, `finished_at=now`, lease cleared, `retry_at = now + delay`,
          `retry_remaining = max(r - 1, 0)`, `last_error = reason`; token usage added.
        """
        return self._fail_global(
            (*_global_owner(ownership_token),), reason, retry_delay_seconds, usage
        )

    def mark_global_phase2_job_failed_if_unowned(
        self,
        *,
        ownership_token: str,
        reason: str,
        retry_delay_seconds: int,
        usage: dict[str, int] | None = None,
    ) -> bool:
        """Query behaviour (spec 2.4, the fallback when the strict failure matched nothing):
        - as `mark_global_phase2_job_failed`, but also matches a running row whose
          `ownership_token IS NULL`.
        """
        conditions = (
            _jobs.c.kind == JobKind.consolidate_global.value,
            _jobs.c.job_key == GLOBAL_JOB_KEY,
            _jobs.c.status == JobStatus.running.value,
            or_(_jobs.c.ownership_token == ownership_token, _jobs.c.ownership_token.is_(None)),
        )
        return self._fail_global(conditions, reason, retry_delay_seconds, usage)

    def list_stage1_outputs_for_global(self, n: int) -> list[Stage1Output]:
        """Query behaviour (spec 2.5):
        - rows whose trimmed `raw_memory` or `rollout_summary` is non-empty, whose thread
          exists with `memory_mode='enabled'`;
        - `ORDER BY source_updated_at DESC, thread_id DESC LIMIT n`, hydrated with `cwd`,
          `rollout_path`, `git_branch`.
        """
        if n <= 0:
            return []

        def run(conn: Connection) -> list[Stage1Output]:
            rows = conn.execute(
                _hydrated_outputs(outer=False)
                .where(_has_payload(), _threads.c.memory_mode == MemoryMode.enabled.value)
                .order_by(_outputs.c.source_updated_at.desc(), _outputs.c.thread_id.desc())
                .limit(n)
            )
            return [_output_record(row) for row in rows]

        return self._read(run)

    def get_phase2_input_selection(self, *, n: int, max_unused_days: int) -> list[Stage1Output]:
        """Query behaviour (spec 3 step 4):
        - candidates: non-empty trimmed payload and, with `cutoff = now - max_unused_days`,
          (`last_usage >= cutoff`) or (`last_usage IS NULL AND source_updated_at >= cutoff`);
        - ranked `COALESCE(usage_count,0) DESC, COALESCE(last_usage, source_updated_at) DESC,
          source_updated_at DESC, thread_id DESC`, read in pages of `min(n, 512)`;
        - a candidate counts only if its thread exists with `memory_mode='enabled'`; stop at n;
        - the chosen `(thread_id, source_updated_at)` pairs are re-read exactly (a row changed
          in between drops out), hydrated, and returned sorted by `thread_id`.
        """
        if n <= 0:
            return []
        cutoff = self._now() - max_unused_days * _SECONDS_PER_DAY

        def run(conn: Connection) -> list[Stage1Output]:
            chosen = _rank_phase2_inputs(conn, n, cutoff)
            return _read_exact(conn, chosen, _hydrated_outputs(outer=False), _output_record)

        return self._read(run)

    def get_phase2_input_refs(self, *, n: int, max_unused_days: int) -> list[Stage1OutputRef]:
        """Query behaviour: the same selection as `get_phase2_input_selection`, without reading
        the payloads (`raw_memory`, `rollout_summary`); sorted by `thread_id`."""
        if n <= 0:
            return []
        cutoff = self._now() - max_unused_days * _SECONDS_PER_DAY

        def run(conn: Connection) -> list[Stage1OutputRef]:
            chosen = _rank_phase2_inputs(conn, n, cutoff)
            return _read_exact(conn, chosen, _hydrated_output_refs(), _output_ref_record)

        return self._read(run)

    def get_phase2_inputs_state(self, *, max_unused_days: int) -> Phase2InputsState:
        """Query behaviour: one aggregate over `stage1_outputs` joined to their threads, plus the
        global job's `input_watermark` (see `Phase2InputsState`). Reads the ranking index and one
        primary-key lookup per output, never a payload: phase 2 compares it with the value kept
        at its last success to skip recomputing an unchanged selection."""
        cutoff = self._now() - max_unused_days * _SECONDS_PER_DAY
        ranking_time = func.coalesce(_outputs.c.last_usage, _outputs.c.source_updated_at)
        enabled = _threads.c.memory_mode == MemoryMode.enabled.value
        aggregate = select(
            func.count(),
            func.sum(_outputs.c.source_updated_at),
            func.sum(func.coalesce(_outputs.c.usage_count, literal_column("0"))),
            func.sum(ranking_time),
            func.count(_threads.c.id),
            func.sum(case((enabled, 1), else_=0)),
            func.sum(case((enabled, _threads.c.updated_at_ms), else_=0)),
            func.sum(func.length(_threads.c.rollout_path)),
            func.min(case((ranking_time >= cutoff, ranking_time))),
        ).select_from(_outputs.outerjoin(_threads, _threads.c.id == _outputs.c.thread_id))

        def run(conn: Connection) -> Phase2InputsState:
            *totals, oldest = conn.execute(aggregate).one()
            job = _global_job_row(conn)
            watermark = None if job is None else job.input_watermark
            text = json.dumps([[None if value is None else int(value) for value in totals], watermark])
            return Phase2InputsState(fingerprint=text, oldest_ranking_time=None if oldest is None else int(oldest))

        return self._read(run)

    def get_phase2_selected_snapshots(self) -> list[OutputIdentity]:
        """Query behaviour: `(thread_id, selected_for_phase2_source_updated_at)` of every row
        flagged `selected_for_phase2` (the last successful selection), sorted by thread id."""

        def run(conn: Connection) -> list[OutputIdentity]:
            rows = conn.execute(
                select(_outputs.c.thread_id, _outputs.c.selected_for_phase2_source_updated_at)
                .where(_outputs.c.selected_for_phase2 != 0, _outputs.c.selected_for_phase2_source_updated_at.is_not(None))
                .order_by(_outputs.c.thread_id)
            )
            return [OutputIdentity(thread_id, int(version)) for thread_id, version in rows]

        return self._read(run)

    def load_stage1_outputs(self, refs: Sequence[Stage1OutputRef]) -> list[Stage1Output]:
        """Query behaviour: the hydrated rows matching exactly each ref's `(thread_id,
        source_updated_at)`; a row refreshed since the ref was read drops out. Sorted by id."""
        chosen = {ref.thread_id: ref.source_updated_at for ref in refs}
        return self._read(lambda conn: _read_exact(conn, chosen, _hydrated_outputs(outer=False), _output_record))

    # ------------------------------------------------------------------ projects and selective forgetting

    def record_team_export(self, folder: str, project_key: str) -> None:
        """Query behaviour: remember (or refresh) that a team memory file was exported into the
        repository at `folder` for `project_key`."""
        values = {"project_key": project_key, "exported_at": self._now()}

        def run(conn: Connection) -> None:
            statement = self._insert_for_upsert(_team_exports).values(folder=folder, **values)
            conn.execute(statement.on_conflict_do_update(index_elements=[_team_exports.c.folder], set_=values))

        self._write(run)

    def team_export_folders(self) -> list[str]:
        """Query behaviour: every repository folder a team memory file was exported into, sorted."""
        return self._read(lambda conn: list(conn.execute(select(_team_exports.c.folder).order_by(_team_exports.c.folder)).scalars()))

    def thread_cwds(self) -> list[str]:
        """Query behaviour: every distinct working directory a thread recorded, sorted (the
        projects whose exported team files a `forget --match` or a reset may reach)."""
        return self._read(
            lambda conn: list(conn.execute(select(_threads.c.cwd).where(_threads.c.cwd.is_not(None)).distinct().order_by(_threads.c.cwd)).scalars())
        )

    def threads_for_project(self, key: str, *, folder: str | None = None) -> list[ThreadRecord]:
        """Query behaviour (issue 15, a project's memories):
        - threads whose project key (`scopes.project_key` of their `git_origin_url` and `cwd`) is
          `key`; with `folder` (the project's folder on this machine), also threads without an
          origin whose cwd is `folder` or below it (a repository without an origin is keyed by
          its root, while a thread records the subfolder it ran in);
        - every memory mode (callers filter); ordered by thread id.
        """
        base = folder.rstrip("/") if folder else None

        def belongs(cwd: str | None, origin: str | None) -> bool:
            if project_key(git_origin_url=origin, cwd=cwd) == key:
                return True
            if base is None or not cwd or project_key(git_origin_url=origin) is not None:
                return False
            cwd = cwd.rstrip("/")
            return cwd == base or cwd.startswith(base + "/")

        def run(conn: Connection) -> list[ThreadRecord]:
            # The key is computed in Python (it normalises URLs); only three columns are scanned.
            candidates = conn.execute(
                select(_threads.c.id, _threads.c.cwd, _threads.c.git_origin_url).where(
                    or_(_threads.c.cwd.is_not(None), _threads.c.git_origin_url.is_not(None))
                )
            )
            chosen = sorted(row.id for row in candidates if belongs(row.cwd, row.git_origin_url))
            records: list[ThreadRecord] = []
            for chunk in _chunks(chosen, _IN_LIST_CHUNK):
                rows = conn.execute(select(_threads).where(_threads.c.id.in_(chunk)).order_by(_threads.c.id))
                records.extend(_thread_record(row) for row in rows)
            return records

        return self._read(run)

    def stage1_outputs_containing(self, text: str) -> list[Stage1Output]:
        """Query behaviour: `stage1_outputs_where` with `raw_memory` or `rollout_summary` holding
        `text`, compared case-insensitively with Python's `casefold` (SQL `lower` folds ASCII only)."""
        needle = text.casefold()
        return self.stage1_outputs_where(
            lambda raw_memory, rollout_summary, _slug: needle in raw_memory.casefold() or needle in rollout_summary.casefold()
        )

    def stage1_outputs_where(self, holds: Callable[[str, str, str | None], bool]) -> list[Stage1Output]:
        """Query behaviour (forget by match):
        - every output row (any memory mode) for which `holds(raw_memory, rollout_summary,
          rollout_slug)` is true (the caller's test, in Python); hydrated as `get_stage1_output`
          is; ordered by thread id;
        - rows are streamed, so the scan holds one page of payloads at a time.
        """

        def run(conn: Connection) -> list[Stage1Output]:
            result = conn.execution_options(yield_per=PHASE2_INPUT_SELECTION_PAGE_SIZE).execute(
                _hydrated_outputs(outer=True).order_by(_outputs.c.thread_id)
            )
            try:
                return [_output_record(row) for row in result if holds(row.raw_memory, row.rollout_summary, row.rollout_slug)]
            finally:
                result.close()

        return self._read(run)

    def rewrite_stage1_output_payload(
        self, *, thread_id: str, source_updated_at: int, raw_memory: str, rollout_summary: str, rollout_slug: str | None
    ) -> bool:
        """Query behaviour (forget by match):
        - replace the payloads and the slug (the rollout summary's file name is made from it) of
          the output row `(thread_id, source_updated_at)`; a row that a re-extraction refreshed in
          between is left alone (returns False: plan again);
        - if the row was selected for phase 2, enqueue phase 2 with watermark now, so the next
          phase 2 rewrites the files made from it (a row left blank is no longer selected);
        - returns whether the row was rewritten.
        """
        now = self._now()

        def run(conn: Connection) -> bool:
            was_selected = _is_selected(conn, thread_id)
            changed = conn.execute(
                update(_outputs)
                .where(_outputs.c.thread_id == thread_id, _outputs.c.source_updated_at == source_updated_at)
                .values(raw_memory=raw_memory, rollout_summary=rollout_summary, rollout_slug=rollout_slug)
            ).rowcount
            if changed and was_selected:
                self._enqueue_global(conn, now)
            return bool(changed)

        return self._write(run, locks=(JobKind.consolidate_global,))

    # ------------------------------------------------------------------ other operations

    def replace_stage1_output_texts(
        self, *, thread_id: str, source_updated_at: int, raw_memory: str, rollout_summary: str
    ) -> bool:
        """Query behaviour (forgetting route `entry_expiry`):
        - `UPDATE stage1_outputs SET raw_memory=?, rollout_summary=? WHERE thread_id=? AND
          source_updated_at=?`: a row re-extracted since it was read is left alone;
        - nothing else changes (times, usage, selection flags): the row is the same memory with
          lines removed, so phase 2's snapshot of it still matches;
        - returns whether a row matched.
        """

        def run(conn: Connection) -> bool:
            return conn.execute(
                update(_outputs)
                .where(_outputs.c.thread_id == thread_id, _outputs.c.source_updated_at == source_updated_at)
                .values(raw_memory=raw_memory, rollout_summary=rollout_summary)
            ).rowcount > 0

        return self._write(run)

    def record_stage1_output_usage(self, thread_ids: list[str]) -> int:
        """Query behaviour (spec 2.5, read-path citations):
        - per listed id (duplicates count again): `usage_count = COALESCE(usage_count,0)+1`,
          `last_usage = now`; unknown ids are ignored;
        - returns the number of list entries that matched a row.
        """
        if not thread_ids:
            return 0
        now = self._now()
        return self._write(lambda conn: self._record_usage(conn, thread_ids, now))

    @staticmethod
    def _record_usage(conn: Connection, thread_ids: Sequence[str], now: int) -> int:
        citations = Counter(thread_ids)
        recorded = 0
        for thread_id in sorted(citations):
            times = citations[thread_id]
            matched = conn.execute(
                update(_outputs)
                .where(_outputs.c.thread_id == thread_id)
                .values(
                    usage_count=func.coalesce(_outputs.c.usage_count, 0) + times,
                    last_usage=now,
                )
            ).rowcount
            recorded += matched * times
        return recorded

    def record_harvested_citations(
        self, *, rollout_path: str, expected_offset: int, new_offset: int, thread_ids: list[str]
    ) -> int | None:
        """Query behaviour (citation harvest, one transaction):
        - move the rollout's harvest offset from `expected_offset` to `new_offset` only if it
          still is `expected_offset` (a conditional UPDATE, or an INSERT when never scanned);
        - if it moved, record one use per listed id as `record_stage1_output_usage` does and
          return the uses recorded; if another harvester got there first, change nothing and
          return None. So a citation is counted once however many runs scan the file.
        """
        if new_offset < 0:
            raise ValueError(f"harvest offset must be >= 0, got {new_offset}")
        now = self._now()

        def run(conn: Connection) -> int | None:
            moved = conn.execute(
                update(_harvest)
                .where(_harvest.c.rollout_path == rollout_path, _harvest.c.harvested_offset == expected_offset)
                .values(harvested_offset=new_offset)
            ).rowcount
            if not moved and expected_offset == 0:
                insert = self._insert_for_upsert(_harvest).values(
                    rollout_path=rollout_path, harvested_offset=new_offset
                )
                # RETURNING, not rowcount: the driver's rowcount for a skipped insert is not portable.
                inserted = conn.execute(
                    insert.on_conflict_do_nothing(index_elements=[_harvest.c.rollout_path]).returning(
                        _harvest.c.rollout_path
                    )
                ).first()
                moved = int(inserted is not None)
            if not moved:
                return None
            return self._record_usage(conn, thread_ids, now)

        return self._write(run)

    def delete_thread_memory(self, thread_id: str) -> bool:
        """Query behaviour (spec 2.5, forgetting route 4):
        - delete the thread's output row and its `memory_stage1` job; the thread row stays;
        - if an output row was deleted and it was selected for phase 2, enqueue phase 2 with
          watermark now;
        - returns whether anything was deleted.
        """
        now = self._now()

        def run(conn: Connection) -> bool:
            return self._delete_memory_rows(conn, thread_id, now) > 0

        return self._write(run, locks=(JobKind.stage1, JobKind.consolidate_global))

    def delete_thread(self, thread_id: str) -> int:
        """Query behaviour (forgetting route 4, whole thread):
        - everything `delete_thread_memory` does, plus the `threads` row and the citation
          harvest offset of its rollout file;
        - returns the number of `threads` rows deleted (0 or 1).
        """
        now = self._now()

        def run(conn: Connection) -> int:
            self._delete_memory_rows(conn, thread_id, now)
            rollout_path = conn.execute(
                select(_threads.c.rollout_path).where(_threads.c.id == thread_id)
            ).scalar_one_or_none()
            if rollout_path is not None:
                conn.execute(delete(_harvest).where(_harvest.c.rollout_path == rollout_path))
            return conn.execute(delete(_threads).where(_threads.c.id == thread_id)).rowcount

        return self._write(run, locks=(JobKind.stage1, JobKind.consolidate_global))

    def mark_thread_memory_mode_polluted(self, thread_id: str) -> bool:
        """Query behaviour (spec 2.5, forgetting route 5):
        - `UPDATE threads SET memory_mode='polluted' WHERE id=? AND memory_mode != 'polluted'`;
        - if the output row is selected for phase 2, enqueue phase 2 with watermark now — even
          when the thread was already polluted;
        - returns whether the thread row changed.
        """
        now = self._now()

        def run(conn: Connection) -> bool:
            changed = conn.execute(
                update(_threads)
                .where(
                    _threads.c.id == thread_id,
                    _threads.c.memory_mode != MemoryMode.polluted.value,
                )
                .values(memory_mode=MemoryMode.polluted.value)
            ).rowcount
            if _is_selected(conn, thread_id):
                self._enqueue_global(conn, now)
            return bool(changed)

        return self._write(run, locks=(JobKind.consolidate_global,))

    def clear_memory_data(self) -> dict[str, int]:
        """Query behaviour (spec 2.5, forgetting route 7 reset), one transaction:
        - delete every `stage1_outputs` row and every job of both memory kinds;
        - `threads` (and their memory modes), the forget audit and harvest offsets are kept;
        - returns the deleted counts keyed `stage1_outputs`, `memory_stage1`,
          `memory_consolidate_global`.
        """

        def run(conn: Connection) -> dict[str, int]:
            counts = {"stage1_outputs": conn.execute(delete(_outputs)).rowcount}
            conn.execute(delete(_arrived))  # unfinalized answers are memory data too
            for kind in (JobKind.stage1, JobKind.consolidate_global):
                counts[kind.value] = conn.execute(
                    delete(_jobs).where(_jobs.c.kind == kind.value)
                ).rowcount
            return counts

        return self._write(run, locks=(JobKind.stage1, JobKind.consolidate_global))

    def record_forget_audit(
        self,
        *,
        route: ForgetRoute,
        target: str,
        reason: str,
        removed: dict[str, Any] | list[Any],
    ) -> None:
        """Query behaviour:
        - append one `forget_audit` row; `route` must be a `ForgetRoute` (anything else raises
          `ValueError`); `removed` is stored as JSON (raises on values JSON cannot encode);
          `created_at = now`;
        - the library writes audit rows only through `forget.audit.record_actions`.
        """
        row = {
            "route": ForgetRoute(route).value,
            "target": target,
            "reason": reason,
            "removed": json.dumps(removed, sort_keys=True),
            "created_at": self._now(),
        }
        self._write(lambda conn: conn.execute(insert(_audit).values(**row)))

    def last_forget_audit_id(self) -> int:
        """Query behaviour:
        - the id of the newest audit row, 0 when there is none (a run's starting mark).
        """
        return self._read(lambda conn: conn.execute(select(func.coalesce(func.max(_audit.c.id), 0))).scalar_one())

    def list_forget_audit(self, since: int | None = None, after_id: int | None = None) -> list[ForgetAuditRecord]:
        """Query behaviour:
        - audit rows with `created_at >= since` and `id > after_id` (each filter only when
          given), oldest first.
        """

        def run(conn: Connection) -> list[ForgetAuditRecord]:
            query = select(_audit).order_by(_audit.c.id.asc())
            if since is not None:
                query = query.where(_audit.c.created_at >= since)
            if after_id is not None:
                query = query.where(_audit.c.id > after_id)
            return [
                ForgetAuditRecord(
                    id=row.id,
                    route=row.route,
                    target=row.target,
                    reason=row.reason,
                    removed=json.loads(row.removed),
                    created_at=row.created_at,
                )
                for row in conn.execute(query)
            ]

        return self._read(run)

    def get_harvest_offset(self, rollout_path: str) -> int:
        """Query behaviour:
        - bytes of the rollout already scanned for citations; 0 when never scanned.
        """

        def run(conn: Connection) -> int:
            offset = conn.execute(
                select(_harvest.c.harvested_offset).where(_harvest.c.rollout_path == rollout_path)
            ).scalar_one_or_none()
            return 0 if offset is None else offset

        return self._read(run)

    def set_harvest_offset(self, rollout_path: str, offset: int) -> None:
        """Query behaviour:
        - upsert the scanned byte offset; any non-negative value (a rewritten, shorter file is
          rescanned from a smaller offset).
        """
        if offset < 0:
            raise ValueError(f"harvest offset must be >= 0, got {offset}")

        def run(conn: Connection) -> None:
            statement = self._insert_for_upsert(_harvest).values(
                rollout_path=rollout_path, harvested_offset=offset
            )
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[_harvest.c.rollout_path],
                    set_={"harvested_offset": statement.excluded.harvested_offset},
                )
            )

        self._write(run)

    def status_summary(self) -> StatusSummary:
        """Query behaviour (one read transaction):
        - threads per memory mode, archived and missing counts;
        - jobs per kind and status; output rows and selected rows;
        - the global phase-2 job row; token totals over all jobs and per kind.
        """

        def run(conn: Connection) -> StatusSummary:
            archived = conn.execute(
                select(func.count()).select_from(_threads).where(_threads.c.archived.is_(True))
            ).scalar_one()
            missing = conn.execute(
                select(func.count())
                .select_from(_threads)
                .where(_threads.c.missing_since_ms.is_not(None))
            ).scalar_one()
            jobs_by_kind: dict[str, dict[str, int]] = {}
            for row in conn.execute(
                select(_jobs.c.kind, _jobs.c.status, func.count()).group_by(
                    _jobs.c.kind, _jobs.c.status
                )
            ):
                jobs_by_kind.setdefault(row[0], {})[row[1]] = row[2]
            outputs, selected = conn.execute(
                select(
                    func.count(),
                    func.coalesce(
                        func.sum(case((_outputs.c.selected_for_phase2 != 0, 1), else_=0)), 0
                    ),
                ).select_from(_outputs)
            ).one()
            global_row = conn.execute(
                select(_jobs).where(
                    _jobs.c.kind == JobKind.consolidate_global.value,
                    _jobs.c.job_key == GLOBAL_JOB_KEY,
                )
            ).one_or_none()
            token_totals_by_kind: dict[str, dict[str, int]] = {}
            for row in conn.execute(
                select(
                    _jobs.c.kind,
                    *(func.coalesce(func.sum(_jobs.c[name]), 0) for name in TOKEN_USAGE_FIELDS),
                ).group_by(_jobs.c.kind)
            ):
                token_totals_by_kind[row[0]] = {
                    name: int(value)
                    for name, value in zip(TOKEN_USAGE_FIELDS, row[1:], strict=True)
                }
            token_totals = {
                name: sum(totals[name] for totals in token_totals_by_kind.values())
                for name in TOKEN_USAGE_FIELDS
            }
            return StatusSummary(
                threads_by_memory_mode=_count_threads_by_memory_mode(conn),
                archived_threads=archived,
                missing_threads=missing,
                jobs_by_kind_and_status=jobs_by_kind,
                stage1_outputs=outputs,
                selected_for_phase2=int(selected),
                last_phase2_job=None if global_row is None else _job_record(global_row),
                token_totals=token_totals,
                token_totals_by_kind=token_totals_by_kind,
            )

        return self._read(run)

    # ------------------------------------------------------------------ internals

    def _now(self) -> int:
        return int(self._clock())

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _count_live_stage1_jobs(self) -> int:
        now = self._now()
        return self._read(lambda conn: _live_stage1_jobs(conn, now))

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

    def _claim_stage1_once(
        self,
        conn: Connection,
        *,
        thread_id: str,
        worker_id: str,
        source_updated_at: int,
        lease_seconds: int,
        max_running_jobs: int,
    ) -> Stage1ClaimResult | None:
        """One decision under the stage-1 lock; None when the row changed under us."""
        now = self._now()
        output_version = conn.execute(
            select(_outputs.c.source_updated_at).where(_outputs.c.thread_id == thread_id)
        ).scalar_one_or_none()
        if output_version is not None and output_version >= source_updated_at:
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_up_to_date)
        job = conn.execute(
            select(_jobs).where(
                _jobs.c.kind == JobKind.stage1.value, _jobs.c.job_key == thread_id
            )
        ).one_or_none()
        if job is not None and job.last_success_watermark is not None and (
            job.last_success_watermark >= source_updated_at
        ):
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_up_to_date)
        running_elsewhere = conn.execute(
            select(func.count())
            .select_from(_jobs)
            .where(
                _jobs.c.kind == JobKind.stage1.value,
                _jobs.c.status == JobStatus.running.value,
                _jobs.c.lease_until > now,
                _jobs.c.job_key != thread_id,
            )
        ).scalar_one()
        below_cap = running_elsewhere < max_running_jobs
        token = str(uuid.uuid4())
        running = {**_running_values(worker_id, token, now, lease_seconds), "input_watermark": source_updated_at}
        claimed = Stage1ClaimResult(outcome=Stage1ClaimOutcome.claimed, ownership_token=token)
        if job is None:
            if not below_cap:
                return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_running)
            conn.execute(
                insert(_jobs).values(
                    kind=JobKind.stage1.value,
                    job_key=thread_id,
                    retry_remaining=DEFAULT_RETRY_REMAINING,
                    last_success_watermark=None,
                    **running,
                )
            )
            return claimed
        advanced = job.input_watermark is None or source_updated_at > job.input_watermark
        lease_live = job.status == JobStatus.running and (
            job.lease_until is not None and job.lease_until > now
        )
        retry_due = job.retry_at is None or job.retry_at <= now or advanced
        budget_left = job.retry_remaining > 0 or advanced
        if not lease_live and retry_due and budget_left and below_cap:
            taken = conn.execute(
                update(_jobs)
                .where(
                    _jobs.c.kind == JobKind.stage1.value,
                    _jobs.c.job_key == thread_id,
                    *_unchanged_job(job),
                )
                .values(
                    retry_remaining=DEFAULT_RETRY_REMAINING if advanced else job.retry_remaining,
                    **running,
                )
            ).rowcount
            return claimed if taken == 1 else None
        if job.retry_remaining <= 0:
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_retry_exhausted)
        if job.retry_at is not None and job.retry_at > now:
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_retry_backoff)
        return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_running)

    def _claim_phase2_once(
        self,
        conn: Connection,
        *,
        worker_id: str,
        lease_seconds: int,
        cooldown_seconds: int,
        ignore_cooldown: bool,
        defer_to_stage1_in_flight: bool,
        retried_flow_run: str | None = None,
    ) -> Phase2ClaimResult | None:
        """One decision under the global lock; None when the row changed under us."""
        now = self._now()
        stage1_in_flight = defer_to_stage1_in_flight and _live_stage1_jobs(conn, now) > 0
        token = str(uuid.uuid4())
        running = _running_values(worker_id, token, now, lease_seconds)
        job = _global_job_row(conn)
        if job is None:
            if stage1_in_flight:
                return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_stage1_in_flight)
            conn.execute(
                insert(_jobs).values(
                    kind=JobKind.consolidate_global.value,
                    job_key=GLOBAL_JOB_KEY,
                    retry_remaining=DEFAULT_RETRY_REMAINING,
                    input_watermark=0,
                    last_success_watermark=0,
                    **running,
                )
            )
            return Phase2ClaimResult(
                outcome=Phase2ClaimOutcome.claimed, ownership_token=token, input_watermark=0
            )
        left_by_earlier_attempt = retried_flow_run is not None and (job.worker_id or "").endswith(f":{retried_flow_run}")
        if job.retry_at is not None and job.retry_at > now and not left_by_earlier_attempt:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_retry_unavailable)
        if job.status == JobStatus.running and job.lease_until is not None and (
            job.lease_until > now
        ) and not left_by_earlier_attempt:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_running)
        if not ignore_cooldown and (phase2_cooldown_ends_at(job, cooldown_seconds) or 0) > now:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_cooldown)
        if stage1_in_flight:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_stage1_in_flight)
        taken = conn.execute(
            update(_jobs)
            .where(
                _jobs.c.kind == JobKind.consolidate_global.value,
                _jobs.c.job_key == GLOBAL_JOB_KEY,
                *_unchanged_job(job),
            )
            .values(**running)
        ).rowcount
        if taken != 1:
            return None
        return Phase2ClaimResult(
            outcome=Phase2ClaimOutcome.claimed,
            ownership_token=token,
            input_watermark=job.input_watermark,
        )

    def _enqueue_global(self, conn: Connection, watermark: int) -> None:
        """Spec 2.4 enqueue; the caller holds the global lock."""
        job = _global_job_row(conn)
        if job is None:
            conn.execute(
                insert(_jobs).values(
                    kind=JobKind.consolidate_global.value,
                    job_key=GLOBAL_JOB_KEY,
                    status=JobStatus.pending.value,
                    retry_remaining=DEFAULT_RETRY_REMAINING,
                    input_watermark=watermark,
                    last_success_watermark=0,
                )
            )
            return
        is_running = job.status == JobStatus.running
        existing_watermark = job.input_watermark or 0
        conn.execute(
            update(_jobs)
            .where(
                _jobs.c.kind == JobKind.consolidate_global.value,
                _jobs.c.job_key == GLOBAL_JOB_KEY,
            )
            .values(
                status=case(
                    (_jobs.c.status == JobStatus.running.value, JobStatus.running.value),
                    else_=JobStatus.pending.value,
                ),
                retry_at=_jobs.c.retry_at if is_running else None,
                retry_remaining=max(job.retry_remaining, DEFAULT_RETRY_REMAINING),
                input_watermark=(
                    watermark if watermark > existing_watermark else existing_watermark + 1
                ),
            )
        )

    def _fail_global(
        self,
        conditions: tuple[ColumnElement[bool], ...],
        reason: str,
        retry_delay_seconds: int,
        usage: dict[str, int] | None,
    ) -> bool:
        usage_assignments = _usage_assignments(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            failed = conn.execute(
                update(_jobs)
                .where(*conditions)
                .values(_failure_values(now, reason, retry_delay_seconds) | usage_assignments)
            ).rowcount
            return failed == 1

        return self._write(run, locks=(JobKind.consolidate_global,))

    def _delete_memory_rows(self, conn: Connection, thread_id: str, now: int) -> int:
        was_selected = _is_selected(conn, thread_id)
        deleted_output = conn.execute(
            delete(_outputs).where(_outputs.c.thread_id == thread_id)
        ).rowcount
        deleted_job = conn.execute(
            delete(_jobs).where(
                _jobs.c.kind == JobKind.stage1.value, _jobs.c.job_key == thread_id
            )
        ).rowcount
        _forget_arrived_result(conn, thread_id)  # an unfinalized answer is that memory too
        if deleted_output and was_selected:
            self._enqueue_global(conn, now)
        return deleted_output + deleted_job

    # ------------------------------------------------------------------ backfill

    def list_stage1_backfill_candidates(
        self,
        *,
        allowed_sources: list[str],
        thread_ids: Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
    ) -> list[ThreadRecord]:
        """Query behaviour (beyond the spec: the backfill's counterpart of step A of 1.4):
        - threads with `memory_mode='enabled'`, `source IN allowed_sources`, a non-empty
          `first_user_message` and a rollout file not missing, archived or not;
        - no idle or age window; instead `since_ms <= updated_at_ms < until_ms` (each bound
          skipped when None) and `id IN thread_ids` when `thread_ids` is given (an empty list
          selects nothing);
        - threads already extracted at their version are left out, as step B skips them: the
          output's `source_updated_at` or the job's `last_success_watermark` is at least
          `updated_at_ms // 1000`; jobs in retry backoff or running stay in (their claim says so);
        - oldest first (`updated_at_ms ASC, id ASC`), so a backfill walks history in order.
        Claim each with `try_claim_stage1_job(source_updated_at=updated_at_ms // 1000, ...)`.
        """
        if not allowed_sources or (thread_ids is not None and not thread_ids):
            return []
        conditions: list[ColumnElement[bool]] = [
            _threads.c.memory_mode == MemoryMode.enabled.value,
            _threads.c.source.in_(sorted(set(allowed_sources))),
            _threads.c.first_user_message.is_not(None),
            _threads.c.first_user_message != "",
            _threads.c.missing_since_ms.is_(None),
        ]
        if since_ms is not None:
            conditions.append(_threads.c.updated_at_ms >= since_ms)
        if until_ms is not None:
            conditions.append(_threads.c.updated_at_ms < until_ms)
        stage1_jobs = _jobs.alias("stage1_jobs")
        query = (
            select(
                _threads,
                _outputs.c.source_updated_at.label("output_source_updated_at"),
                stage1_jobs.c.last_success_watermark,
            )
            .select_from(_threads_with_stage1_state(stage1_jobs))
            .where(*conditions)
        )
        id_chunks: list[Sequence[str] | None] = (
            [None] if thread_ids is None else list(_chunks(sorted(set(thread_ids)), _IN_LIST_CHUNK))
        )

        def run(conn: Connection) -> list[Row[Any]]:
            rows: list[Row[Any]] = []
            for chunk in id_chunks:
                chunk_query = query if chunk is None else query.where(_threads.c.id.in_(chunk))
                rows.extend(conn.execute(chunk_query))
            return rows

        pending = []
        for row in self._read(run):
            version = row.updated_at_ms // 1000
            done = [row.output_source_updated_at, row.last_success_watermark]
            if any(mark is not None and mark >= version for mark in done):
                continue
            pending.append(row)
        pending.sort(key=lambda row: (row.updated_at_ms, row.id))
        columns = list(_threads.c.keys())
        return [ThreadRecord.model_validate({name: row._mapping[name] for name in columns}) for row in pending]


# ---------------------------------------------------------------------- helpers


def _chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _thread_values(thread: ThreadRecord) -> dict[str, Any]:
    values = thread.model_dump()
    values["memory_mode"] = MemoryMode(thread.memory_mode).value
    return {name: values[name] for name in _THREAD_COLUMNS}


def _thread_record(row: Row[Any]) -> ThreadRecord:
    return ThreadRecord.model_validate(dict(row._mapping))


def _output_record(row: Row[Any]) -> Stage1Output:
    return Stage1Output.model_validate(dict(row._mapping))


def _job_record(row: Row[Any]) -> JobRecord:
    return JobRecord.model_validate(dict(row._mapping))


def _stage1_owner(thread_id: str, ownership_token: str) -> tuple[ColumnElement[bool], ...]:
    return (
        _jobs.c.kind == JobKind.stage1.value,
        _jobs.c.job_key == thread_id,
        _jobs.c.status == JobStatus.running.value,
        _jobs.c.ownership_token == ownership_token,
    )


def _finish_stage1_job(thread_id: str, ownership_token: str, now: int, usage_assignments: dict[str, Any]) -> Any:
    """The owner's job row -> `done` (both success finalizers): lease and error cleared, the
    processed watermark recorded as the last success, token usage added."""
    return (
        update(_jobs)
        .where(*_stage1_owner(thread_id, ownership_token))
        .values(
            status=JobStatus.done.value,
            finished_at=now,
            lease_until=None,
            last_error=None,
            last_success_watermark=_jobs.c.input_watermark,
            **usage_assignments,
        )
    )


def _forget_arrived_result(conn: Connection, thread_id: str) -> None:
    conn.execute(delete(_arrived).where(_arrived.c.thread_id == thread_id))


def _global_owner(ownership_token: str) -> tuple[ColumnElement[bool], ...]:
    return (
        _jobs.c.kind == JobKind.consolidate_global.value,
        _jobs.c.job_key == GLOBAL_JOB_KEY,
        _jobs.c.status == JobStatus.running.value,
        _jobs.c.ownership_token == ownership_token,
    )


def _unchanged_job(job: Row[Any]) -> tuple[ColumnElement[bool], ...]:
    """Row conditions that hold only while the job is exactly as we read it."""
    token_condition = (
        _jobs.c.ownership_token.is_(None)
        if job.ownership_token is None
        else _jobs.c.ownership_token == job.ownership_token
    )
    return (_jobs.c.status == job.status, token_condition)


def _running_values(worker_id: str, token: str, now: int, lease_seconds: int) -> dict[str, Any]:
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


def _failure_values(now: int, reason: str, retry_delay_seconds: int) -> dict[str, Any]:
    return {
        "status": JobStatus.error.value,
        "finished_at": now,
        "lease_until": None,
        "retry_at": now + retry_delay_seconds,
        "retry_remaining": case(
            (_jobs.c.retry_remaining > 0, _jobs.c.retry_remaining - 1), else_=0
        ),
        "last_error": reason,
    }


def _usage_assignments(usage: dict[str, int] | None) -> dict[str, Any]:
    """Token counts are added to the job's totals, so every attempt's cost is kept."""
    if not usage:
        return {}
    unknown = sorted(set(usage) - set(TOKEN_USAGE_FIELDS))
    if unknown:
        raise ValueError(f"unknown token usage keys {unknown}; expected {list(TOKEN_USAGE_FIELDS)}")
    return {
        name: func.coalesce(_jobs.c[name], 0) + int(count) for name, count in usage.items()
    }


def _has_payload() -> ColumnElement[bool]:
    return or_(
        func.trim(_outputs.c.raw_memory, _BLANK_CHARACTERS) != "",
        func.trim(_outputs.c.rollout_summary, _BLANK_CHARACTERS) != "",
    )


def _hydrated_outputs(*, outer: bool) -> Any:
    columns = [_outputs.c[name] for name in _OUTPUT_COLUMNS]
    joined = _outputs.join(_threads, _threads.c.id == _outputs.c.thread_id, isouter=outer)
    return select(
        *columns, _threads.c.cwd, _threads.c.rollout_path, _threads.c.git_branch
    ).select_from(joined)


_REF_OUTPUT_COLUMNS = ("thread_id", "source_updated_at", "generated_at", "rollout_slug")
_REF_THREAD_COLUMNS = ("cwd", "rollout_path", "git_branch")
_REF_FIELDS = _REF_OUTPUT_COLUMNS + _REF_THREAD_COLUMNS


def phase2_cooldown_ends_at(job: Any, cooldown_seconds: int) -> int | None:
    """When the cooldown after the global job's last success ends (epoch seconds), or None when
    its last run did not succeed or it never finished: the one rule the phase-2 claim applies
    (`job`: a `jobs` row or a `JobRecord`)."""
    if job is None or job.last_error is not None or job.finished_at is None:
        return None
    return int(job.finished_at) + cooldown_seconds


def _until_settled(attempt: Callable[[], _T | None], what: str) -> _T:
    """Repeat an optimistic claim attempt (None: the row changed under it) a bounded number of times."""
    for _attempt in range(_MAX_OPTIMISTIC_ATTEMPTS):
        result = attempt()
        if result is not None:
            return result
    raise RuntimeError(f"{what} kept changing while being claimed")


def _threads_with_stage1_state(stage1_jobs: Any) -> Any:
    """Threads with their stage-1 output and job, when they have them (claim and backfill)."""
    return _threads.outerjoin(_outputs, _outputs.c.thread_id == _threads.c.id).outerjoin(
        stage1_jobs,
        and_(stage1_jobs.c.kind == JobKind.stage1.value, stage1_jobs.c.job_key == _threads.c.id),
    )


def _hydrated_output_refs() -> Any:
    joined = _outputs.join(_threads, _threads.c.id == _outputs.c.thread_id)
    return select(
        *(_outputs.c[name] for name in _REF_OUTPUT_COLUMNS), *(_threads.c[name] for name in _REF_THREAD_COLUMNS)
    ).select_from(joined)


def _output_ref_record(row: Row[Any]) -> Stage1OutputRef:
    # Built without validation, by position: every field comes from a typed column of our own
    # tables, and phase 2 builds thousands of these per run (validation and per-row key
    # mappings were two thirds of its selection time).
    return Stage1OutputRef.model_construct(**dict(zip(_REF_FIELDS, row, strict=True)))


def _rank_phase2_inputs(conn: Connection, n: int, cutoff: int) -> dict[str, int]:
    """The top-n enabled candidates of spec 3 step 4: thread id -> source_updated_at."""
    page_size = min(n, PHASE2_INPUT_SELECTION_PAGE_SIZE)
    recently_relevant = or_(
        and_(_outputs.c.last_usage.is_not(None), _outputs.c.last_usage >= cutoff),
        and_(_outputs.c.last_usage.is_(None), _outputs.c.source_updated_at >= cutoff),
    )
    ranked = (
        select(_outputs.c.thread_id, _outputs.c.source_updated_at)
        .where(_has_payload(), recently_relevant)
        .order_by(
            # A literal 0, not a bound parameter: SQLite matches ORDER BY terms to the
            # expression index idx_stage1_outputs_phase2_rank only when they are identical.
            func.coalesce(_outputs.c.usage_count, literal_column("0")).desc(),
            func.coalesce(_outputs.c.last_usage, _outputs.c.source_updated_at).desc(),
            _outputs.c.source_updated_at.desc(),
            _outputs.c.thread_id.desc(),
        )
    )
    chosen: dict[str, int] = {}
    # One streamed query read page by page, not LIMIT/OFFSET pages: every OFFSET page walks the
    # index again from the top (measured: 0.085 s against 0.03 s for 4,096 rows on SQLite).
    result = conn.execution_options(yield_per=page_size).execute(ranked)
    try:
        for page in result.partitions():
            enabled = _enabled_thread_ids(conn, [row.thread_id for row in page])
            for row in page:
                if row.thread_id in enabled:
                    chosen[row.thread_id] = row.source_updated_at
                    if len(chosen) == n:
                        return chosen
    finally:
        result.close()
    return chosen


def _read_exact(conn: Connection, chosen: dict[str, int], query: Any, to_record: Callable[[Row[Any]], _T]) -> list[_T]:
    """Rows of `query` whose (thread_id, source_updated_at) is exactly as chosen, by thread id."""
    records: list[tuple[str, _T]] = []
    for chunk in _chunks(sorted(chosen), _IN_LIST_CHUNK):
        rows = conn.execute(query.where(_outputs.c.thread_id.in_(chunk)))
        records.extend(
            (row.thread_id, to_record(row)) for row in rows if row.source_updated_at == chosen[row.thread_id]
        )
    return [record for _, record in sorted(records, key=lambda item: item[0])]


def _is_selected(conn: Connection, thread_id: str) -> bool:
    selected = conn.execute(
        select(_outputs.c.selected_for_phase2).where(_outputs.c.thread_id == thread_id)
    ).scalar_one_or_none()
    return bool(selected)


def _enabled_thread_ids(conn: Connection, thread_ids: Iterable[str]) -> set[str]:
    # The mode is checked here, not in SQL: with `memory_mode = 'enabled'` in the WHERE clause
    # SQLite (no statistics) walks the claim index over every enabled thread instead of
    # looking the ids up by primary key (measured: O(threads), 200 ms at 100,000 threads).
    enabled: set[str] = set()
    for chunk in _chunks(sorted(set(thread_ids)), _IN_LIST_CHUNK):
        rows = conn.execute(select(_threads.c.id, _threads.c.memory_mode).where(_threads.c.id.in_(chunk)))
        enabled.update(row.id for row in rows if row.memory_mode == MemoryMode.enabled.value)
    return enabled


def _live_stage1_jobs(conn: Connection, now: int) -> int:
    return conn.execute(
        select(func.count())
        .select_from(_jobs)
        .where(
            _jobs.c.kind == JobKind.stage1.value,
            _jobs.c.status == JobStatus.running.value,
            _jobs.c.lease_until > now,
        )
    ).scalar_one()


def _global_job_row(conn: Connection) -> Row[Any] | None:
    return conn.execute(
        select(_jobs).where(
            _jobs.c.kind == JobKind.consolidate_global.value, _jobs.c.job_key == GLOBAL_JOB_KEY
        )
    ).one_or_none()


def _count_threads_by_memory_mode(conn: Connection) -> dict[str, int]:
    counts = {mode.value: 0 for mode in MemoryMode}
    for mode, count in conn.execute(
        select(_threads.c.memory_mode, func.count()).group_by(_threads.c.memory_mode)
    ):
        counts[mode] = count
    return counts


def _scan_stage1_candidates(
    conn: Connection,
    *,
    now_ms: int,
    current_thread_id: str | None,
    scan_limit: int,
    max_age_days: int | None,
    min_rollout_idle_hours: int | None,
    allowed_sources: list[str],
    include_archived: bool,
    after: tuple[int, str] | None = None,
) -> list[Row[Any]]:
    """Spec 1.4 step A, with the step-B probes joined in (one row per thread, so the
    `LIMIT scan_limit` still bounds threads before any probe is looked at). `after` is the
    `(updated_at_ms, id)` of the last row of the previous page: this page starts right after it
    in the same order (a keyset page on `idx_threads_claim_scale`)."""
    conditions: list[ColumnElement[bool]] = [
        _threads.c.memory_mode == MemoryMode.enabled.value,
        _threads.c.source.in_(sorted(set(allowed_sources))),
        _threads.c.first_user_message.is_not(None),
        _threads.c.first_user_message != "",
        _threads.c.missing_since_ms.is_(None),
    ]
    if not include_archived:
        conditions.append(_threads.c.archived.is_(False))
    if current_thread_id is not None:
        conditions.append(_threads.c.id != current_thread_id)
    if max_age_days is not None:
        conditions.append(_threads.c.updated_at_ms >= now_ms - max_age_days * 86_400_000)
    if min_rollout_idle_hours is not None:
        conditions.append(
            _threads.c.updated_at_ms <= now_ms - min_rollout_idle_hours * 3_600_000
        )
    if after is not None:
        after_ms, after_id = after
        conditions.append(_threads.c.updated_at_ms <= after_ms)
        conditions.append(
            or_(_threads.c.updated_at_ms < after_ms, _threads.c.id < after_id)
        )
    stage1_jobs = _jobs.alias("stage1_jobs")
    query = (
        select(
            _threads.c.id,
            _threads.c.rollout_path,
            _threads.c.updated_at_ms,
            _threads.c.cwd,
            _threads.c.git_branch,
            _threads.c.source,
            _threads.c.git_origin_url,
            _outputs.c.source_updated_at.label("output_source_updated_at"),
            stage1_jobs.c.last_success_watermark,
            stage1_jobs.c.status.label("job_status"),
            stage1_jobs.c.lease_until,
        )
        .select_from(_threads_with_stage1_state(stage1_jobs))
        .where(*conditions)
        .order_by(_threads.c.updated_at_ms.desc(), _threads.c.id.desc())
        .limit(scan_limit)
    )
    return list(conn.execute(query))


# The first keyset page of the startup claim; each further page doubles, so the rows read stay
# within twice the rows the claims needed (plus this), never the whole `scan_limit` up front.
_CLAIM_FIRST_PAGE = 32


def _stage1_candidate_pages(
    scan_page: Callable[[tuple[int, str] | None, int], list[Row[Any]]],
    *,
    scan_limit: int,
    max_claimed: int,
) -> Iterator[Row[Any]]:
    """The first `scan_limit` candidates of spec 1.4 step A, newest first, read in growing
    keyset pages as the caller consumes them.

    The rows and their order are exactly those of one `LIMIT scan_limit` query (the order is
    total: `updated_at_ms DESC, id DESC`), so the scan bound still applies before any probe;
    but a claim that is done after the first hundred rows (the steady state: nearly every
    thread is up to date) reads about that many, whatever the size of the table."""
    remaining = scan_limit
    page_size = max(_CLAIM_FIRST_PAGE, 2 * max_claimed)
    after: tuple[int, str] | None = None
    while remaining > 0:
        rows = scan_page(after, min(page_size, remaining))
        yield from rows
        remaining -= len(rows)
        if len(rows) < min(page_size, remaining + len(rows)):
            return  # the window holds no more candidates
        after = (rows[-1].updated_at_ms, rows[-1].id)
        page_size *= 2
