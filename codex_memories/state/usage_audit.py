"""Usage and audit: citations counted as uses of a memory (read path and harvest, with the
harvest's per-rollout offsets), the forget audit, and the status summary.

Part of `MemoryStore` (see `store.py` for the transaction and clock contract).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, case, func, insert, select, update

from codex_memories.state._base import (
    StoreBase,
    audit_table,
    harvest_table,
    jobs_table,
    outputs_table,
    threads_per_memory_mode,
    threads_table,
)
from codex_memories.state._jobs import global_job_row, job_record
from codex_memories.state.records import (
    SECONDS_PER_DAY,
    TOKEN_USAGE_FIELDS,
    CoverageReason,
    ForgetAuditRecord,
    ForgetRoute,
    JobKind,
    JobStatus,
    MemoryMode,
    SessionCoverage,
    StatusSummary,
)


class UsageAuditStore(StoreBase):
    """Uses of memories, the forget audit, and the status summary."""

    def record_stage1_output_usage(self, thread_ids: list[str]) -> int:
        """Query behaviour (spec 2.5, read-path citations):
        - per listed id (duplicates count again): `usage_count = COALESCE(usage_count,0)+1`,
          `last_usage = now`; unknown ids are ignored;
        - returns the number of list entries that matched a row.
        """
        if not thread_ids:
            return 0
        now = self._now()
        return self._write(lambda conn: _record_usage(conn, thread_ids, now))

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
                update(harvest_table)
                .where(harvest_table.c.rollout_path == rollout_path, harvest_table.c.harvested_offset == expected_offset)
                .values(harvested_offset=new_offset)
            ).rowcount
            if not moved and expected_offset == 0:
                insert = self._insert_for_upsert(harvest_table).values(
                    rollout_path=rollout_path, harvested_offset=new_offset
                )
                # RETURNING, not rowcount: the driver's rowcount for a skipped insert is not portable.
                inserted = conn.execute(
                    insert.on_conflict_do_nothing(index_elements=[harvest_table.c.rollout_path]).returning(
                        harvest_table.c.rollout_path
                    )
                ).first()
                moved = int(inserted is not None)
            if not moved:
                return None
            return _record_usage(conn, thread_ids, now)

        return self._write(run)

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
        self._write(lambda conn: conn.execute(insert(audit_table).values(**row)))

    def last_forget_audit_id(self) -> int:
        """Query behaviour:
        - the id of the newest audit row, 0 when there is none (a run's starting mark).
        """
        return self._read(lambda conn: conn.execute(select(func.coalesce(func.max(audit_table.c.id), 0))).scalar_one())

    def list_forget_audit(self, since: int | None = None, after_id: int | None = None) -> list[ForgetAuditRecord]:
        """Query behaviour:
        - audit rows with `created_at >= since` and `id > after_id` (each filter only when
          given), oldest first.
        """

        def run(conn: Connection) -> list[ForgetAuditRecord]:
            query = select(audit_table).order_by(audit_table.c.id.asc())
            if since is not None:
                query = query.where(audit_table.c.created_at >= since)
            if after_id is not None:
                query = query.where(audit_table.c.id > after_id)
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
                select(harvest_table.c.harvested_offset).where(harvest_table.c.rollout_path == rollout_path)
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
            statement = self._insert_for_upsert(harvest_table).values(
                rollout_path=rollout_path, harvested_offset=offset
            )
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[harvest_table.c.rollout_path],
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
                select(func.count()).select_from(threads_table).where(threads_table.c.archived.is_(True))
            ).scalar_one()
            missing = conn.execute(
                select(func.count())
                .select_from(threads_table)
                .where(threads_table.c.missing_since_ms.is_not(None))
            ).scalar_one()
            jobs_by_kind: dict[str, dict[str, int]] = {}
            for row in conn.execute(
                select(jobs_table.c.kind, jobs_table.c.status, func.count()).group_by(
                    jobs_table.c.kind, jobs_table.c.status
                )
            ):
                jobs_by_kind.setdefault(row[0], {})[row[1]] = row[2]
            outputs, selected = conn.execute(
                select(
                    func.count(),
                    func.coalesce(
                        func.sum(case((outputs_table.c.selected_for_phase2 != 0, 1), else_=0)), 0
                    ),
                ).select_from(outputs_table)
            ).one()
            global_row = global_job_row(conn)
            token_totals_by_kind: dict[str, dict[str, int]] = {}
            for row in conn.execute(
                select(
                    jobs_table.c.kind,
                    *(func.coalesce(func.sum(jobs_table.c[name]), 0) for name in TOKEN_USAGE_FIELDS),
                ).group_by(jobs_table.c.kind)
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
                threads_by_memory_mode=threads_per_memory_mode(conn),
                archived_threads=archived,
                missing_threads=missing,
                jobs_by_kind_and_status=jobs_by_kind,
                stage1_outputs=outputs,
                selected_for_phase2=int(selected),
                last_phase2_job=None if global_row is None else job_record(global_row),
                token_totals=token_totals,
                token_totals_by_kind=token_totals_by_kind,
            )

        return self._read(run)


    def session_coverage(
        self, *, interactive_sources: Sequence[str], min_rollout_idle_hours: int | None, max_rollout_age_days: int | None
    ) -> SessionCoverage:
        """Query behaviour (one read transaction, one pass over the threads):
        - every thread with its memory mode, source, activity time, whether it has a stage-1
          output and its stage-1 job's status;
        - each is counted under the first `CoverageReason` that applies (`coverage_reason`),
          with the windows a scheduled run applies (None: that window is off)."""

        def run(conn: Connection) -> SessionCoverage:
            has_output = select(outputs_table.c.thread_id).where(outputs_table.c.thread_id == threads_table.c.id).exists()
            rows = conn.execute(
                select(
                    threads_table.c.source, threads_table.c.updated_at_ms, threads_table.c.archived, threads_table.c.memory_mode,
                    threads_table.c.first_user_message, threads_table.c.missing_since_ms, has_output.label("has_output"),
                    jobs_table.c.status, jobs_table.c.last_error,
                ).select_from(
                    threads_table.outerjoin(
                        jobs_table, (jobs_table.c.kind == JobKind.stage1.value) & (jobs_table.c.job_key == threads_table.c.id)
                    )
                )
            )
            now_ms = self._now_ms()
            by_reason: Counter[str] = Counter()
            by_source: Counter[str] = Counter()
            seen = 0
            for row in rows:
                seen += 1
                reason = coverage_reason(
                    row, now_ms=now_ms, interactive_sources=interactive_sources,
                    min_rollout_idle_hours=min_rollout_idle_hours, max_rollout_age_days=max_rollout_age_days,
                )
                by_reason[reason.value] += 1
                if reason is CoverageReason.not_interactive:
                    by_source[row.source] += 1
            return SessionCoverage(
                seen=seen, by_reason=dict(by_reason), not_interactive_by_source=dict(by_source),
                min_rollout_idle_hours=min_rollout_idle_hours, max_rollout_age_days=max_rollout_age_days,
            )

        return self._read(run)


def coverage_reason(
    row: Any, *, now_ms: int, interactive_sources: Sequence[str], min_rollout_idle_hours: int | None, max_rollout_age_days: int | None
) -> CoverageReason:
    """The first `CoverageReason` that applies to one thread row (`session_coverage`)."""
    if row.missing_since_ms is not None:
        return CoverageReason.file_gone
    if row.archived:
        return CoverageReason.archived
    if row.memory_mode == MemoryMode.disabled.value:
        return CoverageReason.memory_disabled
    if row.memory_mode == MemoryMode.polluted.value:
        return CoverageReason.external_context
    if row.source not in interactive_sources:
        return CoverageReason.not_interactive
    if not (row.first_user_message or "").strip():
        return CoverageReason.no_user_message
    if row.has_output:
        return CoverageReason.extracted
    if row.status == JobStatus.done.value:
        return CoverageReason.nothing_to_keep
    if row.status == JobStatus.error.value or (row.last_error and row.status != JobStatus.running.value):
        return CoverageReason.failed
    if max_rollout_age_days is not None and row.updated_at_ms < now_ms - max_rollout_age_days * SECONDS_PER_DAY * 1000:
        return CoverageReason.too_old
    if min_rollout_idle_hours is not None and row.updated_at_ms > now_ms - min_rollout_idle_hours * 3_600_000:
        return CoverageReason.too_recent
    return CoverageReason.waiting


def _record_usage(conn: Connection, thread_ids: Sequence[str], now: int) -> int:
    citations = Counter(thread_ids)
    recorded = 0
    for thread_id in sorted(citations):
        times = citations[thread_id]
        matched = conn.execute(
            update(outputs_table)
            .where(outputs_table.c.thread_id == thread_id)
            .values(
                usage_count=func.coalesce(outputs_table.c.usage_count, 0) + times,
                last_usage=now,
            )
        ).rowcount
        recorded += matched * times
    return recorded
