"""Backfill: old and archived rollouts (or any folder, or an s3:// prefix) become memories.

Orchestration only (`codex_memories.ingest.backfill` says what a source is and what is claimed). The
idle and age windows do not apply; the source and memory-mode rules do. Batches of
`batch_size` claims go through phase 1's own extraction, quality and finalize steps (at most
`concurrency` extractions at once). Resumable: threads already extracted at their version are not
candidates, so a re-run continues, and a finished backfill re-run extracts nothing; a retried
flow run (the UI's Retry) works through its own candidates and batches again, taking back its
claims as phase 1 does. Threads another run holds (its lease, or the team-wide cap of running
extractions) are claimed again as they free up, for a bounded wait (step 6b). Ends with one
phase 2, which skips the cooldown (a backfill is an explicit request; never the lease) and does
not wait for other runs' extractions in flight (they consolidate at their end). The run
ends Failed when extractions or the phase 2 failed, named Incomplete when held threads were left
(`codex_memories.reports.verdicts.backfill_verdict`).

Parameters are settings overrides and the source; none is secret (object-store credentials come
from the worker's AWS environment).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping

from prefect import flow, get_run_logger
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner

from codex_memories.ingest.backfill import BatchClaim, day_window, older_than_selection_window, resolve_source
from codex_memories.ingest.transcript import KeptLines
from codex_memories.llm.rate_limits import GuardDecision
from codex_memories.outcomes import Outcome
from codex_memories.reports.backfill import BackfillReport
from codex_memories.reports.phase1 import ExtractionLine, model_endpoint
from codex_memories.reports.verdicts import backfill_verdict
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories.state.records import Stage1Claim, ThreadRecord
from codex_memories_flows.flow_runs import final_state, run_overrides, tag_this_run
from codex_memories_flows.phase1 import MAX_EXTRACTION_WORKERS, extract_claims, take_back_claims
from codex_memories_flows.phase2 import run_phase2
from codex_memories_tasks.backfill_report import (
    publish_backfill_report,
    start_backfill_progress,
    update_backfill_progress,
)
from codex_memories_tasks.claim_backfill import claim_backfill, claim_held_threads, list_backfill_candidates
from codex_memories_tasks.discover_backfill_source import discover_backfill_source
from codex_memories_tasks.fetch_backfill_source import fetch_backfill_source
from codex_memories_tasks.gates import check_phase1_gates
from codex_memories_tasks.harvest_citations import harvest_citations
from codex_memories_tasks.rate_limit import check_rate_limits


@flow(
    name="memories-backfill",
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_EXTRACTION_WORKERS),
    log_prints=False,
)
def backfill(
    source: str | None = None,
    since: str | None = None,
    until: str | None = None,
    overrides: SettingsOverrides | None = None,
) -> State[BackfillReport]:
    """Extract old and archived sessions in batches, then run one phase 2.

    Args:
        source: `archived` (default: $CODEX_HOME/archived_sessions), a local folder, or s3://bucket/prefix.
        since: only sessions last active on or after this day (YYYY-MM-DD, UTC).
        until: only sessions last active on or before this day (YYYY-MM-DD, UTC).
        overrides: settings for this run on top of the deployment's default overrides, the
            worker's environment, our TOML file and the defaults (Codex home, state DB, memory
            root, provider, models, batch size, ...); a field given replaces that field only.
    """
    config = run_overrides(overrides).load()
    tag_this_run("backfill", provider=config.provider_name)
    report = run_backfill(config, source=source, since=since, until=until)
    return final_state(backfill_verdict(report.phase1, report.phase2_outcome, report.phase2_reason), report)


def run_backfill(
    config: RuntimeConfig, *, source: str | None = None, since: str | None = None, until: str | None = None
) -> BackfillReport:
    logger = get_run_logger()
    batch_size = config.settings.backfill_batch_size
    report = BackfillReport(source=source or "archived", since=since, until=until, batch_size=batch_size)
    report.phase1.provider, report.phase1.model = config.provider_name, config.extract_model
    report.phase1.token_budget = config.settings.rollout_token_budget
    report.phase1.provider_reason = config.provider_reason
    report.phase1.concurrency = config.settings.concurrency
    report.phase1.endpoint = model_endpoint(config.provider_name, config.settings.base_url)

    # 1. Gate: generate_memories, as for phase 1.
    report.phase1.gate = check_phase1_gates(config)
    if report.phase1.gate is not None:
        publish_backfill_report(report)
        return report

    # 2. Resolve the source and the day window (a bad one fails the run before any work).
    resolved = resolve_source(source, config.settings)
    window = day_window(since, until)
    report.source = resolved.description

    # 3. Object-store sources: copy the rollouts into the backfill cache (retried on S3 hiccups).
    if resolved.object_store_url is not None:
        report.fetched = fetch_backfill_source(resolved, config)

    # 4. Discover the source's threads (archived ones as archived); harvest their citations.
    discovery = discover_backfill_source(config, resolved)
    report.phase1.discovery = {
        **discovery.facts(),
        "threads found": len(discovery.thread_ids),
        "threads kept at their Codex-home path": discovery.known_elsewhere,
    }
    harvest_citations(config, discovery.read_paths, discovery.read_scans)

    # 5. Candidates: enabled, interactive, in the window, not yet extracted at their version.
    candidates = list_backfill_candidates(config, discovery.thread_ids, window)
    report.candidates = len(candidates)
    report.max_unused_days = config.memories.max_unused_days
    report.older_than_selection_window = older_than_selection_window(
        candidates, max_unused_days=report.max_unused_days, now_ms=int(time.time() * 1000)
    )
    if report.older_than_selection_window:
        logger.warning(
            "%d backfilled thread(s) are older than max_unused_days=%d: phase 2 will not select their "
            "memories and the retention prune will remove them (raise max_unused_days, up to 365, to keep them)",
            report.older_than_selection_window, report.max_unused_days,
        )
    progress_id = start_backfill_progress(len(candidates))
    logger.info("backfill of %s: %d thread(s) to extract", resolved.description, len(candidates))

    # 6. Per batch: claim, then phase 1's extract / quality / finalize steps; report progress.
    done, stopped = 0, False
    held: list[str] = []
    for start in range(0, len(candidates), batch_size):
        # Rate-limit guard before each claim batch (spec 1.3): the rest waits for the next run.
        guard = check_rate_limits(config)
        if not guard.allowed:
            report.phase1.rate_limit, stopped = guard.reason, True
            break
        batch = claim_backfill(config, candidates[start : start + batch_size])
        claims, not_taken_back = take_back_claims(config, batch.claims)
        report.batches += 1
        lines, held_here = _extract_batch(config, report, claims, not_taken_back + _skip_lines(batch), guard, discovery.kept_lines())
        held += held_here
        done = min(start + batch_size, len(candidates))
        update_backfill_progress(progress_id, done, len(candidates))
        logger.info(
            "backfill batch %d: %d/%d thread(s) done; this batch: %s%s",
            report.batches, done, len(candidates),
            dict(Counter(line.outcome.value for line in lines)) or "nothing claimed",
            f"; {len(held_here)} held by another run (taken later)" if held_here else "",
        )
        if report.phase1.rate_limit:
            stopped = True
            break  # the guard stopped this batch's waves: no further batch this run

    # 6b. Threads another run held (its lease, or the team-wide cap of running extractions) are
    #     never a success: claimed again as they free up, for up to `backfill_held_wait_seconds`;
    #     those still held then stay `skipped_running` and the run ends Incomplete, naming them.
    if held:
        by_id = {thread.id: thread for thread in candidates}
        held_threads = [by_id[thread_id] for thread_id in held]
        still_held = held_threads if stopped else _wait_for_held_threads(config, report, held_threads, discovery.kept_lines())
        report.phase1.extractions += [
            ExtractionLine(thread.id, Outcome.skipped_running, reason=_held_reason(config, stopped=bool(report.phase1.rate_limit)))
            for thread in still_held
        ]

    # 7. One phase 2 for everything the batches produced. It does not wait for extractions other
    #    runs have in flight: those runs consolidate at their own end (a backfill) or the next
    #    phase 2 does (phase 1's); waiting kept a finished run, and its worker slot, idle for up
    #    to `phase2_stage1_wait_seconds` while other backfills ran or a dead worker's leases
    #    lived, and the dead worker's retried runs waited for that slot.
    phase2 = run_phase2(config, force=True, wait_for_stage1=False)
    report.phase2_outcome = phase2.outcome.value if phase2.outcome else None
    report.phase2_reason = phase2.reason

    # 8. Report.
    publish_backfill_report(report)
    logger.info("backfill outcomes: %s; phase 2: %s", dict(report.phase1.outcome_counts()), report.phase2_outcome)
    return report


def _skip_lines(batch: BatchClaim) -> list[ExtractionLine]:
    return [ExtractionLine(thread_id, Outcome(outcome.value)) for thread_id, outcome in batch.skipped]


def _extract_batch(
    config: RuntimeConfig,
    report: BackfillReport,
    claims: list[Stage1Claim],
    skipped: list[ExtractionLine],
    guard: GuardDecision,
    kept_lines: Mapping[str, KeptLines],
) -> tuple[list[ExtractionLine], list[str]]:
    """Phase 1's extract / quality / finalize steps on one batch's claims, into the report (the
    lines added are returned); the threads another run held (`skipped_running`) are returned,
    not reported: step 6b takes them."""
    lines = [line for line in skipped if line.outcome is not Outcome.skipped_running]
    if claims:
        extracted = extract_claims(claims, config, guard, kept_lines=kept_lines)
        report.phase1.rate_limit = extracted.rate_limit or report.phase1.rate_limit
        report.phase1.claimed += len(claims)
        lines = extracted.lines + lines
        report.phase1.quality += extracted.quality
        report.phase1.usage += Counter(extracted.usage)
    report.phase1.extractions += lines
    return lines, [line.thread_id for line in skipped if line.outcome is Outcome.skipped_running]


# How often a backfill waiting for held threads asks the state DB again when none was claimable.
HELD_POLL_SECONDS = 10.0


def _wait_for_held_threads(
    config: RuntimeConfig, report: BackfillReport, held: list[ThreadRecord], kept_lines: Mapping[str, KeptLines]
) -> list[ThreadRecord]:
    """Claim the held threads again, a batch at a time, extracting what is claimed, until none is
    held or no claim succeeded for `backfill_held_wait_seconds`; returns those still held. A
    thread the other run finished meanwhile is reported as the claim says (`skipped_up_to_date`)."""
    settings = config.settings
    logger = get_run_logger()
    logger.info("backfill: %d thread(s) were held by another run; waiting up to %.0f s to take them", len(held), settings.backfill_held_wait_seconds)
    deadline = time.monotonic() + settings.backfill_held_wait_seconds
    queue = list(held)
    while queue:
        guard = check_rate_limits(config)
        if not guard.allowed:
            report.phase1.rate_limit = guard.reason
            break
        chunk, rest = queue[: settings.backfill_batch_size], queue[settings.backfill_batch_size :]
        batch = claim_held_threads(config, chunk)
        still = set(_extract_batch(config, report, batch.claims, _skip_lines(batch), guard, kept_lines)[1])
        queue = rest + [thread for thread in chunk if thread.id in still]  # the ones just tried go last
        if batch.claims or len(still) < len(chunk):
            deadline = time.monotonic() + settings.backfill_held_wait_seconds  # progress: the wait starts again
            continue
        if report.phase1.rate_limit or time.monotonic() >= deadline:
            break
        time.sleep(min(HELD_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    logger.info("backfill: %d held thread(s) left after the wait", len(queue))
    return queue


def _held_reason(config: RuntimeConfig, *, stopped: bool) -> str:
    waited = (
        "the rate-limit guard stopped the run before it could take it" if stopped
        else f"for the whole wait of {config.settings.backfill_held_wait_seconds:.0f} s"
    )
    return (
        f"held by another run (its lease, or the team-wide cap of running extractions); {waited}: "
        "a later backfill or a Retry of this run takes it"
    )
