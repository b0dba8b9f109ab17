"""Phase 2: the one global consolidation job (enqueue, claim under a lease, heartbeat, success
with the selection's snapshot, failure with backoff, release) and the input selection it
consolidates (spec 2.4, 2.5, 3 step 4).

Part of `MemoryStore` (see `store.py` for the transaction and clock contract).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, and_, bindparam, case, func, insert, literal_column, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from codex_memories.state._base import (
    IN_LIST_CHUNK,
    StoreBase,
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
    global_job_row,
    running_values,
    token_usage_additions,
    unchanged_job,
    until_settled,
)
from codex_memories.state.records import (
    GLOBAL_JOB_KEY,
    SECONDS_PER_DAY,
    JobKind,
    JobStatus,
    MemoryMode,
    OutputIdentity,
    Phase2ClaimOutcome,
    Phase2ClaimResult,
    Phase2InputsState,
    Stage1Output,
    Stage1OutputRef,
)

_T = TypeVar("_T")

PHASE2_SUCCESS_COOLDOWN_SECONDS = 21_600
PHASE2_INPUT_SELECTION_PAGE_SIZE = 512

# The phase-2 ranking (spec 3 step 4), best first: most used, then most recently used or
# extracted, then newest, then thread id. One definition for the selection's ORDER BY and the
# inputs' fingerprint; migration 0002 created the expression index
# `idx_stage1_outputs_phase2_rank` on exactly these terms, and as a migration is frozen history
# it keeps its own text: tests/state/test_migration_0002.py holds the two equal.
# A literal 0, not a bound parameter: SQLite matches ORDER BY terms to the expression index
# only when they are identical.
PHASE2_RANK_USAGE_COUNT = func.coalesce(outputs_table.c.usage_count, literal_column("0"))
PHASE2_RANK_TIME = func.coalesce(outputs_table.c.last_usage, outputs_table.c.source_updated_at)
PHASE2_RANKING = (
    PHASE2_RANK_USAGE_COUNT.desc(),
    PHASE2_RANK_TIME.desc(),
    outputs_table.c.source_updated_at.desc(),
    outputs_table.c.thread_id.desc(),
)

# A failure's `last_error` ends with the settings it ran with (`tag_failure_with_settings`): a
# run with other settings (another provider, model, endpoint, ...) is not held back by it.
_SETTINGS_TAG = " [settings {}]"
_SETTINGS_TAG_PATTERN = re.compile(r" \[settings ([0-9a-f]+)\]$")


def tag_failure_with_settings(reason: str, settings_fingerprint: str) -> str:
    """The failure reason stored on the global job, ending with the settings it ran with."""
    return reason + _SETTINGS_TAG.format(settings_fingerprint)


def settings_of_failure(last_error: str | None) -> str | None:
    """The settings fingerprint a stored failure ran with (None: untagged, e.g. Codex's own)."""
    match = _SETTINGS_TAG_PATTERN.search(last_error or "")
    return match.group(1) if match else None


BACKOFF_ADVICE = (
    "fix the cause, then run `codex-memories phase2 --force` (or the deployment with force), "
    "or change the provider or settings"
)


def failure_without_settings(last_error: str) -> str:
    """A stored failure as a person reads it: without the settings tag."""
    return _SETTINGS_TAG_PATTERN.sub("", last_error)


def describe_backoff(last_error: str | None, finished_at: int | None, retry_at: int) -> str:
    """Why phase 2 waits and until when, as a run's state message says it."""
    failure = failure_without_settings(last_error or "unknown failure")
    when = f" at {_utc(finished_at)}" if finished_at is not None else ""
    return f"backing off after the last consolidation failed{when} ({failure}) until {_utc(retry_at)}"


def _utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# What counts as an empty phase-1 payload: Rust's `trim()` strips all of these.
_BLANK_CHARACTERS = " \t\n\r"


class Phase2Store(StoreBase):
    """The global phase-2 job machine and its input selection."""

    def enqueue_global_consolidation(self, watermark: int) -> None:
        """Query behaviour (spec 2.4):
        - new row: `pending`, `retry_remaining=3`, `input_watermark=W`, `last_success_watermark=0`;
        - existing row: stays `running` if running, else `pending`; `retry_at` cleared unless
          running; `retry_remaining = max(existing, 3)`; `input_watermark = W` if larger, else
          `existing + 1`.
        """
        self._write(
            lambda conn: enqueue_global_job(conn, watermark),
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
        - `retry_at > now` → `skipped_retry_unavailable`, its reason the failure and the end of
          the backoff (`describe_backoff`); `lift_global_phase2_backoff`, called first, clears
          it for `--force` or other settings;
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
            return until_settled(
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

    def lift_global_phase2_backoff(self, *, force: bool, settings_fingerprint: str) -> str | None:
        """Query behaviour (one locked transaction), before the claim:
        - the global job is not running and its `retry_at > now` (a failure's backoff), and
          either `force` (the user's explicit request to try now) or the failure ran with other
          settings than `settings_fingerprint` (`settings_of_failure`: another provider, model,
          endpoint, ...): `retry_at` is cleared (`last_error` and `retry_remaining` are kept) and
          the backoff lifted is returned, described (`describe_backoff`);
        - otherwise nothing changes → None (an untagged failure is lifted by `force` only).
        """

        def run(conn: Connection) -> str | None:
            now = self._now()
            job = global_job_row(conn)
            if job is None or job.status == JobStatus.running or job.retry_at is None or job.retry_at <= now:
                return None
            failed_with = settings_of_failure(job.last_error)
            other_settings = failed_with is not None and failed_with != settings_fingerprint
            if not (force or other_settings):
                return None
            lifted = conn.execute(
                update(jobs_table)
                .where(jobs_table.c.kind == JobKind.consolidate_global.value, jobs_table.c.job_key == GLOBAL_JOB_KEY, *unchanged_job(job))
                .values(retry_at=None)
            ).rowcount
            if lifted != 1:
                return None
            why = "--force" if force else "the settings changed since that failure"
            return f"{describe_backoff(job.last_error, job.finished_at, job.retry_at)}: lifted ({why})"

        return self._write(run, locks=(JobKind.consolidate_global,))

    def heartbeat_global_phase2_job(self, *, ownership_token: str, lease_seconds: int) -> bool:
        """Query behaviour:
        - `lease_until = now + lease` where `status='running' AND ownership_token=?`;
        - False when ownership was lost.
        """
        now = self._now()

        def run(conn: Connection) -> bool:
            renewed = conn.execute(
                update(jobs_table)
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
        usage_assignments = token_usage_additions(usage)
        now = self._now()
        previous = func.coalesce(jobs_table.c.last_success_watermark, 0)
        snapshots = sorted({(output.thread_id, output.source_updated_at) for output in selected})

        def run(conn: Connection) -> bool:
            current = global_job_row(conn)
            work_arrived = (
                claimed_input_watermark is not None
                and current is not None
                and (current.input_watermark or 0) != claimed_input_watermark
            )
            finished = conn.execute(
                update(jobs_table)
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
                update(outputs_table)
                .where(
                    or_(
                        outputs_table.c.selected_for_phase2 != 0,
                        outputs_table.c.selected_for_phase2_source_updated_at.is_not(None),
                    )
                )
                .values(selected_for_phase2=0, selected_for_phase2_source_updated_at=None)
            )
            if snapshots:
                conn.execute(
                    update(outputs_table)
                    .where(
                        outputs_table.c.thread_id == bindparam("selected_thread_id"),
                        outputs_table.c.source_updated_at == bindparam("selected_source_updated_at"),
                    )
                    .values(
                        selected_for_phase2=1,
                        selected_for_phase2_source_updated_at=outputs_table.c.source_updated_at,
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
            jobs_table.c.kind == JobKind.consolidate_global.value,
            jobs_table.c.job_key == GLOBAL_JOB_KEY,
            jobs_table.c.status == JobStatus.running.value,
            or_(jobs_table.c.ownership_token == ownership_token, jobs_table.c.ownership_token.is_(None)),
        )
        return self._fail_global(conditions, reason, retry_delay_seconds, usage)

    def release_global_phase2_job(self, *, ownership_token: str) -> bool:
        """Give back the global phase-2 lease without running the agent (the rate-limit guard).

        Query behaviour: while still owner, `status='pending'`, lease, token and worker cleared;
        `retry_at`, `retry_remaining`, `last_error`, `finished_at` and the watermarks untouched
        (no backoff, no cooldown: the next run claims it). False when ownership was lost."""

        def run(conn: Connection) -> bool:
            return (
                conn.execute(
                    update(jobs_table)
                    .where(*_global_owner(ownership_token))
                    .values(status=JobStatus.pending.value, ownership_token=None, worker_id=None, lease_until=None)
                ).rowcount
                == 1
            )

        return self._write(run, locks=(JobKind.consolidate_global,))

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
                hydrated_outputs(outer=False)
                .where(_has_payload(), threads_table.c.memory_mode == MemoryMode.enabled.value)
                .order_by(outputs_table.c.source_updated_at.desc(), outputs_table.c.thread_id.desc())
                .limit(n)
            )
            return [output_record(row) for row in rows]

        return self._read(run)

    def get_phase2_input_refs(self, *, n: int, max_unused_days: int) -> list[Stage1OutputRef]:
        """Query behaviour (spec 3 step 4):
        - candidates: non-empty trimmed payload and, with `cutoff = now - max_unused_days`,
          (`last_usage >= cutoff`) or (`last_usage IS NULL AND source_updated_at >= cutoff`);
        - ranked by `PHASE2_RANKING` (`COALESCE(usage_count,0) DESC, COALESCE(last_usage,
          source_updated_at) DESC, source_updated_at DESC, thread_id DESC`), read in pages of
          `min(n, 512)`;
        - a candidate counts only if its thread exists with `memory_mode='enabled'`; stop at n;
        - the chosen `(thread_id, source_updated_at)` pairs are re-read exactly (a row changed
          in between drops out), with the thread's `cwd`, `rollout_path`, `git_branch` but
          without the payloads (`raw_memory`, `rollout_summary`: `load_stage1_outputs` reads
          them), and returned sorted by `thread_id`.
        """
        if n <= 0:
            return []
        cutoff = self._now() - max_unused_days * SECONDS_PER_DAY

        def run(conn: Connection) -> list[Stage1OutputRef]:
            chosen = _rank_phase2_inputs(conn, n, cutoff)
            return _read_exact(conn, chosen, _hydrated_output_refs(), _output_ref_record)

        return self._read(run)

    def get_phase2_inputs_state(self, *, max_unused_days: int) -> Phase2InputsState:
        """Query behaviour: one aggregate over `stage1_outputs` joined to their threads, plus the
        global job's `input_watermark` (see `Phase2InputsState`). Reads the ranking index and one
        primary-key lookup per output, never a payload: phase 2 compares it with the value kept
        at its last success to skip recomputing an unchanged selection."""
        cutoff = self._now() - max_unused_days * SECONDS_PER_DAY
        enabled = threads_table.c.memory_mode == MemoryMode.enabled.value
        # The ranking's own keys, summed: any change of rank changes the fingerprint.
        aggregate = select(
            func.count(),
            func.sum(outputs_table.c.source_updated_at),
            func.sum(PHASE2_RANK_USAGE_COUNT),
            func.sum(PHASE2_RANK_TIME),
            func.count(threads_table.c.id),
            func.sum(case((enabled, 1), else_=0)),
            func.sum(case((enabled, threads_table.c.updated_at_ms), else_=0)),
            func.sum(func.length(threads_table.c.rollout_path)),
            func.min(case((PHASE2_RANK_TIME >= cutoff, PHASE2_RANK_TIME))),
        ).select_from(outputs_table.outerjoin(threads_table, threads_table.c.id == outputs_table.c.thread_id))

        def run(conn: Connection) -> Phase2InputsState:
            *totals, oldest = conn.execute(aggregate).one()
            job = global_job_row(conn)
            watermark = None if job is None else job.input_watermark
            text = json.dumps([[None if value is None else int(value) for value in totals], watermark])
            return Phase2InputsState(fingerprint=text, oldest_ranking_time=None if oldest is None else int(oldest))

        return self._read(run)

    def get_phase2_selected_snapshots(self) -> list[OutputIdentity]:
        """Query behaviour: `(thread_id, selected_for_phase2_source_updated_at)` of every row
        flagged `selected_for_phase2` (the last successful selection), sorted by thread id."""

        def run(conn: Connection) -> list[OutputIdentity]:
            rows = conn.execute(
                select(outputs_table.c.thread_id, outputs_table.c.selected_for_phase2_source_updated_at)
                .where(outputs_table.c.selected_for_phase2 != 0, outputs_table.c.selected_for_phase2_source_updated_at.is_not(None))
                .order_by(outputs_table.c.thread_id)
            )
            return [OutputIdentity(thread_id, int(version)) for thread_id, version in rows]

        return self._read(run)

    def load_stage1_outputs(self, refs: Sequence[Stage1OutputRef]) -> list[Stage1Output]:
        """Query behaviour: the hydrated rows matching exactly each ref's `(thread_id,
        source_updated_at)`; a row refreshed since the ref was read drops out. Sorted by id."""
        chosen = {ref.thread_id: ref.source_updated_at for ref in refs}
        return self._read(lambda conn: _read_exact(conn, chosen, hydrated_outputs(outer=False), output_record))

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
        stage1_in_flight = defer_to_stage1_in_flight and count_live_stage1_jobs(conn, now) > 0
        token = str(uuid.uuid4())
        running = running_values(worker_id, token, now, lease_seconds)
        job = global_job_row(conn)
        if job is None:
            if stage1_in_flight:
                return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_stage1_in_flight)
            conn.execute(
                insert(jobs_table).values(
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
            return Phase2ClaimResult(
                outcome=Phase2ClaimOutcome.skipped_retry_unavailable,
                reason=f"{describe_backoff(job.last_error, job.finished_at, job.retry_at)}: {BACKOFF_ADVICE}",
            )
        if job.status == JobStatus.running and job.lease_until is not None and (
            job.lease_until > now
        ) and not left_by_earlier_attempt:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_running)
        if not ignore_cooldown and (phase2_cooldown_ends_at(job, cooldown_seconds) or 0) > now:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_cooldown)
        if stage1_in_flight:
            return Phase2ClaimResult(outcome=Phase2ClaimOutcome.skipped_stage1_in_flight)
        taken = conn.execute(
            update(jobs_table)
            .where(
                jobs_table.c.kind == JobKind.consolidate_global.value,
                jobs_table.c.job_key == GLOBAL_JOB_KEY,
                *unchanged_job(job),
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

    def _fail_global(
        self,
        conditions: tuple[ColumnElement[bool], ...],
        reason: str,
        retry_delay_seconds: int,
        usage: dict[str, int] | None,
    ) -> bool:
        usage_assignments = token_usage_additions(usage)
        now = self._now()

        def run(conn: Connection) -> bool:
            failed = conn.execute(
                update(jobs_table)
                .where(*conditions)
                .values(failure_values(now, reason, retry_delay_seconds) | usage_assignments)
            ).rowcount
            return failed == 1

        return self._write(run, locks=(JobKind.consolidate_global,))


def _global_owner(ownership_token: str) -> tuple[ColumnElement[bool], ...]:
    return (
        jobs_table.c.kind == JobKind.consolidate_global.value,
        jobs_table.c.job_key == GLOBAL_JOB_KEY,
        jobs_table.c.status == JobStatus.running.value,
        jobs_table.c.ownership_token == ownership_token,
    )


def phase2_cooldown_ends_at(job: Any, cooldown_seconds: int) -> int | None:
    """When the cooldown after the global job's last success ends (epoch seconds), or None when
    its last run did not succeed or it never finished: the one rule the phase-2 claim applies
    (`job`: a `jobs` row or a `JobRecord`)."""
    if job is None or job.last_error is not None or job.finished_at is None:
        return None
    return int(job.finished_at) + cooldown_seconds


_REF_OUTPUT_COLUMNS = ("thread_id", "source_updated_at", "generated_at", "rollout_slug")
_REF_THREAD_COLUMNS = ("cwd", "rollout_path", "git_branch")
_REF_FIELDS = _REF_OUTPUT_COLUMNS + _REF_THREAD_COLUMNS


def _hydrated_output_refs() -> Any:
    joined = outputs_table.join(threads_table, threads_table.c.id == outputs_table.c.thread_id)
    return select(
        *(outputs_table.c[name] for name in _REF_OUTPUT_COLUMNS), *(threads_table.c[name] for name in _REF_THREAD_COLUMNS)
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
        and_(outputs_table.c.last_usage.is_not(None), outputs_table.c.last_usage >= cutoff),
        and_(outputs_table.c.last_usage.is_(None), outputs_table.c.source_updated_at >= cutoff),
    )
    ranked = (
        select(outputs_table.c.thread_id, outputs_table.c.source_updated_at)
        .where(_has_payload(), recently_relevant)
        .order_by(*PHASE2_RANKING)
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
    for chunk in chunks(sorted(chosen), IN_LIST_CHUNK):
        rows = conn.execute(query.where(outputs_table.c.thread_id.in_(chunk)))
        records.extend(
            (row.thread_id, to_record(row)) for row in rows if row.source_updated_at == chosen[row.thread_id]
        )
    return [record for _, record in sorted(records, key=lambda item: item[0])]


def _enabled_thread_ids(conn: Connection, thread_ids: Iterable[str]) -> set[str]:
    # The mode is checked here, not in SQL: with `memory_mode = 'enabled'` in the WHERE clause
    # SQLite (no statistics) walks the claim index over every enabled thread instead of
    # looking the ids up by primary key (measured: O(threads), 200 ms at 100,000 threads).
    enabled: set[str] = set()
    for chunk in chunks(sorted(set(thread_ids)), IN_LIST_CHUNK):
        rows = conn.execute(select(threads_table.c.id, threads_table.c.memory_mode).where(threads_table.c.id.in_(chunk)))
        enabled.update(row.id for row in rows if row.memory_mode == MemoryMode.enabled.value)
    return enabled


def enqueue_global_job(conn: Connection, watermark: int) -> None:
    """Spec 2.4 enqueue; the caller holds the global lock."""
    job = global_job_row(conn)
    if job is None:
        conn.execute(
            insert(jobs_table).values(
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
        update(jobs_table)
        .where(
            jobs_table.c.kind == JobKind.consolidate_global.value,
            jobs_table.c.job_key == GLOBAL_JOB_KEY,
        )
        .values(
            status=case(
                (jobs_table.c.status == JobStatus.running.value, JobStatus.running.value),
                else_=JobStatus.pending.value,
            ),
            retry_at=jobs_table.c.retry_at if is_running else None,
            retry_remaining=max(job.retry_remaining, DEFAULT_RETRY_REMAINING),
            input_watermark=(
                watermark if watermark > existing_watermark else existing_watermark + 1
            ),
        )
    )


def _has_payload() -> ColumnElement[bool]:
    return or_(
        func.trim(outputs_table.c.raw_memory, _BLANK_CHARACTERS) != "",
        func.trim(outputs_table.c.rollout_summary, _BLANK_CHARACTERS) != "",
    )
