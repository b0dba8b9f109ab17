"""Forgetting: the DB side of the forget routes (retention, a thread's memory or the whole
thread, polluted threads, the reset, text matches rewritten or expired entries removed).

Each change that touches an output phase 2 last selected enqueues phase 2, so the memory folder
made from it is rebuilt. Part of `MemoryStore` (see `store.py` for the transaction and clock
contract).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, and_, delete, func, select, update

from codex_memories.state._base import (
    StoreBase,
    arrived_table,
    harvest_table,
    hydrated_outputs,
    is_selected_for_phase2,
    jobs_table,
    output_record,
    outputs_table,
    threads_table,
)
from codex_memories.state.phase2 import PHASE2_INPUT_SELECTION_PAGE_SIZE, enqueue_global_job
from codex_memories.state.records import SECONDS_PER_DAY, JobKind, MemoryMode, Stage1Output
from codex_memories.state.stage1 import forget_arrived_result


class ForgettingStore(StoreBase):
    """What the forget routes remove or rewrite."""

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
        cutoff = self._now() - max_unused_days * SECONDS_PER_DAY
        last_touched = func.coalesce(outputs_table.c.last_usage, outputs_table.c.source_updated_at)
        prunable = and_(outputs_table.c.selected_for_phase2 == 0, last_touched < cutoff)

        def run(conn: Connection) -> list[str]:
            ordered = list(
                conn.execute(
                    select(outputs_table.c.thread_id)
                    .where(prunable)
                    .order_by(
                        last_touched.asc(),
                        outputs_table.c.source_updated_at.asc(),
                        outputs_table.c.thread_id.asc(),
                    )
                    .limit(limit)
                ).scalars()
            )
            if not ordered:
                return []
            deleted = set(
                conn.execute(
                    delete(outputs_table)
                    .where(outputs_table.c.thread_id.in_(ordered), prunable)
                    .returning(outputs_table.c.thread_id)
                ).scalars()
            )
            return [thread_id for thread_id in ordered if thread_id in deleted]

        return self._write(run)

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
                hydrated_outputs(outer=True).order_by(outputs_table.c.thread_id)
            )
            try:
                return [output_record(row) for row in result if holds(row.raw_memory, row.rollout_summary, row.rollout_slug)]
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
            was_selected = is_selected_for_phase2(conn, thread_id)
            changed = conn.execute(
                update(outputs_table)
                .where(outputs_table.c.thread_id == thread_id, outputs_table.c.source_updated_at == source_updated_at)
                .values(raw_memory=raw_memory, rollout_summary=rollout_summary, rollout_slug=rollout_slug)
            ).rowcount
            if changed and was_selected:
                enqueue_global_job(conn, now)
            return bool(changed)

        return self._write(run, locks=(JobKind.consolidate_global,))

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
                update(outputs_table)
                .where(outputs_table.c.thread_id == thread_id, outputs_table.c.source_updated_at == source_updated_at)
                .values(raw_memory=raw_memory, rollout_summary=rollout_summary)
            ).rowcount > 0

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
            return _delete_memory_rows(conn, thread_id, now) > 0

        return self._write(run, locks=(JobKind.stage1, JobKind.consolidate_global))

    def delete_thread(self, thread_id: str) -> int:
        """Query behaviour (forgetting route 4, whole thread):
        - everything `delete_thread_memory` does, plus the `threads` row and the citation
          harvest offset of its rollout file;
        - returns the number of `threads` rows deleted (0 or 1).
        """
        now = self._now()

        def run(conn: Connection) -> int:
            _delete_memory_rows(conn, thread_id, now)
            rollout_path = conn.execute(
                select(threads_table.c.rollout_path).where(threads_table.c.id == thread_id)
            ).scalar_one_or_none()
            if rollout_path is not None:
                conn.execute(delete(harvest_table).where(harvest_table.c.rollout_path == rollout_path))
            return conn.execute(delete(threads_table).where(threads_table.c.id == thread_id)).rowcount

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
                update(threads_table)
                .where(
                    threads_table.c.id == thread_id,
                    threads_table.c.memory_mode != MemoryMode.polluted.value,
                )
                .values(memory_mode=MemoryMode.polluted.value)
            ).rowcount
            if is_selected_for_phase2(conn, thread_id):
                enqueue_global_job(conn, now)
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
            counts = {"stage1_outputs": conn.execute(delete(outputs_table)).rowcount}
            conn.execute(delete(arrived_table))  # unfinalized answers are memory data too
            for kind in (JobKind.stage1, JobKind.consolidate_global):
                counts[kind.value] = conn.execute(
                    delete(jobs_table).where(jobs_table.c.kind == kind.value)
                ).rowcount
            return counts

        return self._write(run, locks=(JobKind.stage1, JobKind.consolidate_global))


def _delete_memory_rows(conn: Connection, thread_id: str, now: int) -> int:
    was_selected = is_selected_for_phase2(conn, thread_id)
    deleted_output = conn.execute(
        delete(outputs_table).where(outputs_table.c.thread_id == thread_id)
    ).rowcount
    deleted_job = conn.execute(
        delete(jobs_table).where(
            jobs_table.c.kind == JobKind.stage1.value, jobs_table.c.job_key == thread_id
        )
    ).rowcount
    forget_arrived_result(conn, thread_id)  # an unfinalized answer is that memory too
    if deleted_output and was_selected:
        enqueue_global_job(conn, now)
    return deleted_output + deleted_job
