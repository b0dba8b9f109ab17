"""Stage 1: claiming threads for extraction (startup scan, single claim, a retried run taking
its claims back, the backfill's candidates), finalizing them, the answers that arrived before
their finalize, and reading the outputs.

Part of `MemoryStore` (see `store.py` for the transaction and clock contract).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Row, and_, delete, func, insert, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from codex_memories.state._base import (
    IN_LIST_CHUNK,
    StoreBase,
    arrived_table,
    chunks,
    hydrated_outputs,
    jobs_table,
    output_record,
    outputs_table,
    threads_table,
)
from codex_memories.state._jobs import (
    DEFAULT_RETRY_REMAINING,
    count_live_stage1_jobs,
    failure_values,
    job_record,
    running_values,
    token_usage_additions,
    unchanged_job,
    until_settled,
)
from codex_memories.state.phase2 import enqueue_global_job
from codex_memories.state.records import (
    JobKind,
    JobRecord,
    JobStatus,
    MemoryMode,
    Stage1ArrivedResult,
    Stage1Claim,
    Stage1ClaimOutcome,
    Stage1ClaimResult,
    Stage1ClaimResume,
    Stage1Output,
    ThreadRecord,
)


class Stage1Store(StoreBase):
    """The stage-1 job machine (spec 1.4, 1.10, 2.3) and its outputs."""

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
            return until_settled(
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
                    select(jobs_table).where(jobs_table.c.kind == JobKind.stage1.value, jobs_table.c.job_key == claim.thread_id)
                ).one_or_none()
                if job is None or job.ownership_token != claim.ownership_token:
                    return None
                if job.status == JobStatus.done:
                    return Stage1ClaimResume(outcome=Stage1ClaimOutcome.claimed, claim=claim)
                if job.status == JobStatus.running:
                    conn.execute(
                        update(jobs_table)
                        .where(*_stage1_owner(claim.thread_id, claim.ownership_token))
                        .values(worker_id=worker_id, lease_until=now + lease_seconds)
                    )
                    return Stage1ClaimResume(outcome=Stage1ClaimOutcome.claimed, claim=claim)
                token = str(uuid.uuid4())
                taken = conn.execute(
                    update(jobs_table)
                    .where(jobs_table.c.kind == JobKind.stage1.value, jobs_table.c.job_key == claim.thread_id, *unchanged_job(job))
                    .values(**running_values(worker_id, token, now, lease_seconds))
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
        usage_assignments = token_usage_additions(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            finished = conn.execute(_finish_stage1_job(thread_id, ownership_token, now, usage_assignments)).rowcount
            if finished != 1:
                return False
            forget_arrived_result(conn, thread_id)
            statement = self._insert_for_upsert(outputs_table).values(
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
                    index_elements=[outputs_table.c.thread_id],
                    set_={
                        "source_updated_at": excluded.source_updated_at,
                        "raw_memory": excluded.raw_memory,
                        "rollout_summary": excluded.rollout_summary,
                        "rollout_slug": excluded.rollout_slug,
                        "generated_at": excluded.generated_at,
                        "scope": excluded.scope,
                        "project_key": excluded.project_key,
                    },
                    where=excluded.source_updated_at >= outputs_table.c.source_updated_at,
                )
            )
            enqueue_global_job(conn, source_updated_at)
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
        usage_assignments = token_usage_additions(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            input_watermark = conn.execute(
                _finish_stage1_job(thread_id, ownership_token, now, usage_assignments).returning(
                    jobs_table.c.input_watermark
                )
            ).one_or_none()
            if input_watermark is None:
                return False
            forget_arrived_result(conn, thread_id)
            deleted = conn.execute(
                delete(outputs_table).where(outputs_table.c.thread_id == thread_id)
            ).rowcount
            if deleted:
                enqueue_global_job(conn, input_watermark[0] or 0)
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
        usage_assignments = token_usage_additions(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            failed = conn.execute(
                update(jobs_table)
                .where(*_stage1_owner(thread_id, ownership_token))
                .values(failure_values(now, reason, retry_delay_seconds) | usage_assignments)
            ).rowcount
            if failed == 1:
                # A failed job is retried from the model: its arrived answer (e.g. one that
                # failed the quality check) must not be reused for ever.
                forget_arrived_result(conn, thread_id)
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
            statement = self._insert_for_upsert(arrived_table).values(thread_id=thread_id, **values)
            conn.execute(statement.on_conflict_do_update(index_elements=[arrived_table.c.thread_id], set_=values))

        self._write(run)

    def get_arrived_stage1_results(self, thread_ids: Sequence[str]) -> dict[str, Stage1ArrivedResult]:
        """The arrived, unfinalized results of these threads, by thread id (absent: none)."""

        def run(conn: Connection) -> dict[str, Stage1ArrivedResult]:
            found: dict[str, Stage1ArrivedResult] = {}
            for chunk in chunks(list(thread_ids), IN_LIST_CHUNK):
                rows = conn.execute(select(arrived_table).where(arrived_table.c.thread_id.in_(chunk)))
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
                    update(jobs_table)
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

    def get_stage1_output(self, thread_id: str) -> Stage1Output | None:
        """Query behaviour:
        - the thread's output row whatever its memory mode, hydrated with `cwd`,
          `rollout_path`, `git_branch` when the thread row exists; None when there is no row.
        """

        def run(conn: Connection) -> Stage1Output | None:
            row = conn.execute(
                hydrated_outputs(outer=True).where(outputs_table.c.thread_id == thread_id)
            ).one_or_none()
            return None if row is None else output_record(row)

        return self._read(run)

    def get_job(self, kind: JobKind | str, key: str) -> JobRecord | None:
        """Query behaviour:
        - one `jobs` row by `(kind, job_key)`; None when absent.
        """

        def run(conn: Connection) -> JobRecord | None:
            row = conn.execute(
                select(jobs_table).where(jobs_table.c.kind == str(kind), jobs_table.c.job_key == key)
            ).one_or_none()
            return None if row is None else job_record(row)

        return self._read(run)

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
            threads_table.c.memory_mode == MemoryMode.enabled.value,
            threads_table.c.source.in_(sorted(set(allowed_sources))),
            threads_table.c.first_user_message.is_not(None),
            threads_table.c.first_user_message != "",
            threads_table.c.missing_since_ms.is_(None),
        ]
        if since_ms is not None:
            conditions.append(threads_table.c.updated_at_ms >= since_ms)
        if until_ms is not None:
            conditions.append(threads_table.c.updated_at_ms < until_ms)
        stage1_jobs = jobs_table.alias("stage1_jobs")
        query = (
            select(
                threads_table,
                outputs_table.c.source_updated_at.label("output_source_updated_at"),
                stage1_jobs.c.last_success_watermark,
            )
            .select_from(_threads_with_stage1_state(stage1_jobs))
            .where(*conditions)
        )
        id_chunks: list[Sequence[str] | None] = (
            [None] if thread_ids is None else list(chunks(sorted(set(thread_ids)), IN_LIST_CHUNK))
        )

        def run(conn: Connection) -> list[Row[Any]]:
            rows: list[Row[Any]] = []
            for chunk in id_chunks:
                chunk_query = query if chunk is None else query.where(threads_table.c.id.in_(chunk))
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
        columns = list(threads_table.c.keys())
        return [ThreadRecord.model_validate({name: row._mapping[name] for name in columns}) for row in pending]

    def _count_live_stage1_jobs(self) -> int:
        now = self._now()
        return self._read(lambda conn: count_live_stage1_jobs(conn, now))

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
            select(outputs_table.c.source_updated_at).where(outputs_table.c.thread_id == thread_id)
        ).scalar_one_or_none()
        if output_version is not None and output_version >= source_updated_at:
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_up_to_date)
        job = conn.execute(
            select(jobs_table).where(
                jobs_table.c.kind == JobKind.stage1.value, jobs_table.c.job_key == thread_id
            )
        ).one_or_none()
        if job is not None and job.last_success_watermark is not None and (
            job.last_success_watermark >= source_updated_at
        ):
            return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_up_to_date)
        running_elsewhere = conn.execute(
            select(func.count())
            .select_from(jobs_table)
            .where(
                jobs_table.c.kind == JobKind.stage1.value,
                jobs_table.c.status == JobStatus.running.value,
                jobs_table.c.lease_until > now,
                jobs_table.c.job_key != thread_id,
            )
        ).scalar_one()
        below_cap = running_elsewhere < max_running_jobs
        token = str(uuid.uuid4())
        running = {**running_values(worker_id, token, now, lease_seconds), "input_watermark": source_updated_at}
        claimed = Stage1ClaimResult(outcome=Stage1ClaimOutcome.claimed, ownership_token=token)
        if job is None:
            if not below_cap:
                return Stage1ClaimResult(outcome=Stage1ClaimOutcome.skipped_running)
            conn.execute(
                insert(jobs_table).values(
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
                update(jobs_table)
                .where(
                    jobs_table.c.kind == JobKind.stage1.value,
                    jobs_table.c.job_key == thread_id,
                    *unchanged_job(job),
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


def forget_arrived_result(conn: Connection, thread_id: str) -> None:
    conn.execute(delete(arrived_table).where(arrived_table.c.thread_id == thread_id))


def _stage1_owner(thread_id: str, ownership_token: str) -> tuple[ColumnElement[bool], ...]:
    return (
        jobs_table.c.kind == JobKind.stage1.value,
        jobs_table.c.job_key == thread_id,
        jobs_table.c.status == JobStatus.running.value,
        jobs_table.c.ownership_token == ownership_token,
    )


def _finish_stage1_job(thread_id: str, ownership_token: str, now: int, usage_assignments: dict[str, Any]) -> Any:
    """The owner's job row -> `done` (both success finalizers): lease and error cleared, the
    processed watermark recorded as the last success, token usage added."""
    return (
        update(jobs_table)
        .where(*_stage1_owner(thread_id, ownership_token))
        .values(
            status=JobStatus.done.value,
            finished_at=now,
            lease_until=None,
            last_error=None,
            last_success_watermark=jobs_table.c.input_watermark,
            **usage_assignments,
        )
    )


def _threads_with_stage1_state(stage1_jobs: Any) -> Any:
    """Threads with their stage-1 output and job, when they have them (claim and backfill)."""
    return threads_table.outerjoin(outputs_table, outputs_table.c.thread_id == threads_table.c.id).outerjoin(
        stage1_jobs,
        and_(stage1_jobs.c.kind == JobKind.stage1.value, stage1_jobs.c.job_key == threads_table.c.id),
    )


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
        threads_table.c.memory_mode == MemoryMode.enabled.value,
        threads_table.c.source.in_(sorted(set(allowed_sources))),
        threads_table.c.first_user_message.is_not(None),
        threads_table.c.first_user_message != "",
        threads_table.c.missing_since_ms.is_(None),
    ]
    if not include_archived:
        conditions.append(threads_table.c.archived.is_(False))
    if current_thread_id is not None:
        conditions.append(threads_table.c.id != current_thread_id)
    if max_age_days is not None:
        conditions.append(threads_table.c.updated_at_ms >= now_ms - max_age_days * 86_400_000)
    if min_rollout_idle_hours is not None:
        conditions.append(
            threads_table.c.updated_at_ms <= now_ms - min_rollout_idle_hours * 3_600_000
        )
    if after is not None:
        after_ms, after_id = after
        conditions.append(threads_table.c.updated_at_ms <= after_ms)
        conditions.append(
            or_(threads_table.c.updated_at_ms < after_ms, threads_table.c.id < after_id)
        )
    stage1_jobs = jobs_table.alias("stage1_jobs")
    query = (
        select(
            threads_table.c.id,
            threads_table.c.rollout_path,
            threads_table.c.updated_at_ms,
            threads_table.c.cwd,
            threads_table.c.git_branch,
            threads_table.c.source,
            threads_table.c.git_origin_url,
            outputs_table.c.source_updated_at.label("output_source_updated_at"),
            stage1_jobs.c.last_success_watermark,
            stage1_jobs.c.status.label("job_status"),
            stage1_jobs.c.lease_until,
        )
        .select_from(_threads_with_stage1_state(stage1_jobs))
        .where(*conditions)
        .order_by(threads_table.c.updated_at_ms.desc(), threads_table.c.id.desc())
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
