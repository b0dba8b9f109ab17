"""Tasks: the backfill candidates of a source, and one batch's claims (`codex_memories.ingest.backfill`).

Inputs: the discovered thread ids and the day window, then a batch of threads. Outputs: the
candidate records; the batch's claims and the skipped threads with their outcome; the same for
threads another run held, claimed again (`claim_held_threads`, never cached). Side effect:
`jobs` rows leased (no idle/age windows: a backfill is an explicit request). Both are persisted
per flow run (the batch's by its threads), so a retried flow run works through the same batches
with the same claims, which the flow then takes back (`codex_memories_tasks.claim.resume_claims`).
"""

import hashlib
from typing import Any

from prefect import task
from prefect.context import TaskRunContext

from codex_memories.ingest.backfill import BatchClaim, DayWindow, claim_backfill_batch
from codex_memories.runtime import open_store
from codex_memories.settings import INTERACTIVE_SESSION_SOURCES, RuntimeConfig
from codex_memories.state.records import ThreadRecord
from codex_memories_tasks.claim import worker_id


def _candidates_key(context: TaskRunContext, _parameters: dict[str, Any]) -> str:
    return f"backfill-candidates-{context.task_run.flow_run_id}"


def _batch_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    threads = ",".join(thread.id for thread in parameters["threads"])
    return f"backfill-claims-{context.task_run.flow_run_id}-{hashlib.sha256(threads.encode()).hexdigest()}"


@task(name="list-backfill-candidates", cache_key_fn=_candidates_key, persist_result=True)
def list_backfill_candidates(config: RuntimeConfig, thread_ids: list[str], window: DayWindow) -> list[ThreadRecord]:
    """The source's threads still to extract: enabled, interactive, in the window, not done."""
    return open_store(config.settings.resolved_db_url).list_stage1_backfill_candidates(
        allowed_sources=list(INTERACTIVE_SESSION_SOURCES),
        thread_ids=thread_ids,
        since_ms=window.since_ms,
        until_ms=window.until_ms,
    )


@task(name="claim-backfill-batch", cache_key_fn=_batch_key, persist_result=True)
def claim_backfill(config: RuntimeConfig, threads: list[ThreadRecord]) -> BatchClaim:
    return _claim(config, threads)


@task(name="claim-held-backfill-threads", cache_policy=None)
def claim_held_threads(config: RuntimeConfig, threads: list[ThreadRecord]) -> BatchClaim:
    """Threads another run held when their batch was claimed, claimed again now. Never cached:
    a retried flow run asks the DB again instead of replaying the skip."""
    return _claim(config, threads)


def _claim(config: RuntimeConfig, threads: list[ThreadRecord]) -> BatchClaim:
    settings = config.settings
    return claim_backfill_batch(
        open_store(settings.resolved_db_url),
        threads,
        worker_id=worker_id(),
        lease_seconds=settings.stage1_lease_seconds,
        max_running_jobs=backfill_running_cap(config),
    )


def backfill_running_cap(config: RuntimeConfig) -> int:
    """The team-wide cap of live stage-1 leases a backfill claims against: `backfill_max_running`,
    never below one batch. (It was one batch: a single run's batch then filled the cap and every
    other run, on any worker, waited for it, so a second worker added nothing.)"""
    settings = config.settings
    return max(settings.backfill_max_running, settings.backfill_batch_size, config.memories.max_rollouts_per_startup)
