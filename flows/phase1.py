"""Phase 1: Codex rollout files become stage-1 memories.

Orchestration only; every decision lives in `codex_memories`. Parameters are settings overrides
(none of them secret: API keys come from the environment or our settings file, never from a
flow parameter, which Prefect would store), merged with the deployment's defaults. The run ends
Failed when claimed extractions failed (named Partial when others succeeded), with the outcome
counts in the state message (`codex_memories.reports.phase1_verdict`). A retried flow run (the
UI's Retry) gets its claims back, reads back the extractions that finished and runs the ones that
did not or failed: the fixed cause is retried, nothing answered is paid for again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from prefect import Task, flow, get_run_logger
from prefect.futures import PrefectFuture, as_completed
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

import codex_memories_flows  # noqa: F401 - a deployment's file entrypoint: installs the run-log filter
from codex_memories import progress
from codex_memories.extract.collector import frozen_old_objects
from codex_memories.extract.extraction import ExtractionResult, failed_extraction
from codex_memories.extract.prefetch import TranscriptPrefetch, prepare_quality_check, transcript_pool
from codex_memories.extract.waves import WaveGuard
from codex_memories.ingest.transcript import KeptLines
from codex_memories.llm.rate_limits import GuardDecision
from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import ExtractionLine, Phase1Report, model_endpoint
from codex_memories.reports.verdicts import phase1_verdict
from codex_memories.runtime import rate_limit_decision
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories.state.records import Stage1ArrivedResult, Stage1Claim
from codex_memories_flows.flow_runs import final_state, retried_flow_run, run_overrides, tag_this_run
from codex_memories_tasks.audit_pollution import audit_polluted_threads
from codex_memories_tasks.check_memory_folder import check_memory_folder
from codex_memories_tasks.claim import claim_stage1_jobs, given_back_if_interrupted, resume_claims
from codex_memories_tasks.collect_forget_audit import collect_forget_audit, mark_forget_audit
from codex_memories_tasks.discover import discover
from codex_memories_tasks.extract import extract_rollout, find_arrived_extractions
from codex_memories_tasks.finalize import finalize_extractions
from codex_memories_tasks.forget_deleted_threads import forget_deleted_threads
from codex_memories_tasks.gates import check_phase1_gates
from codex_memories_tasks.harvest_citations import harvest_citations
from codex_memories_tasks.honour_forget_ledger import honour_forget_ledger
from codex_memories_tasks.quality import check_extraction_quality
from codex_memories_tasks.rate_limit import check_rate_limits, release_claims
from codex_memories_tasks.record_project_keys import record_project_keys
from codex_memories_tasks.report import publish_phase1_report
from codex_memories_tasks.retention import prune_retention
from codex_memories_tasks.warn_about_codex_home import warn_about_codex_home

# The pool is sized for the largest allowed `concurrency`; the flow keeps at most `concurrency`
# extractions in flight (measured: Prefect's global and tag concurrency limits poll for slots
# and cost 10x). Several flow runs together are bounded by the state DB's running cap instead.
MAX_EXTRACTION_WORKERS = 64


@flow(
    name="memories-phase1",
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_EXTRACTION_WORKERS),
    log_prints=False,
)
def phase1(overrides: SettingsOverrides | None = None) -> State[Phase1Report]:
    """Discover rollouts, claim idle recent threads and extract a stage-1 memory from each.

    Args:
        overrides: settings for this run on top of the deployment's default overrides, the
            worker's environment, our TOML file and the defaults (Codex home, state DB, memory
            root, provider, model, concurrency, ...); a field given replaces that field only.
    """
    config = run_overrides(overrides).load()
    tag_this_run("phase1", provider=config.provider_name)
    report = run_phase1(config)
    return final_state(phase1_verdict(report), report)


def run_phase1(config: RuntimeConfig) -> Phase1Report:
    """The numbered steps of phase 1, callable from any flow (phase1, run, backfill)."""
    report = Phase1Report(
        provider=config.provider_name, model=config.extract_model, provider_reason=config.provider_reason,
        token_budget=config.settings.rollout_token_budget, concurrency=config.settings.concurrency,
        endpoint=model_endpoint(config.provider_name, config.settings.base_url),
    )
    audit_start = mark_forget_audit(config)
    logger = get_run_logger()
    # The transcript worker process starts now, so it is warm when the claims come (step 7).
    transcript_pool()
    report.warning = warn_about_codex_home(config)

    # 1. Gate: generate_memories (ours; Codex's [features] memories no longer gates phase 1).
    report.gate = check_phase1_gates(config)
    if report.gate is not None:
        logger.info("gates: %s", report.gate.value)
        publish_phase1_report(report)
        return report

    # 1b. The memory folder takes writes and was built with this state DB (a fresh or different
    #     DB would re-extract every session into it): checked before anything changes.
    check_memory_folder(config)

    # 2. Retention prune (forgetting route 1), before anything else, as Codex does.
    report.pruned_thread_ids = prune_retention(config)

    # 3. Discovery: rollout files -> threads.
    discovery = discover(config)
    report.discovery = discovery.facts()
    report.unreadable_files = list(discovery.unreadable)
    logger.info("discovery: %s", report.discovery)

    # 3b. Which folder is which project, from the sessions' git records: the read path's answer
    # when a folder's git config cannot be read (moved, mounted elsewhere, in a container).
    report.discovery["folders with a recorded project"] = record_project_keys(config)

    # 4. Forget what discovery found deleted (route 4) and audit what it found polluted (route 5).
    report.discovery["memories forgotten (rollout deleted)"] = len(forget_deleted_threads(config))
    audit_polluted_threads(config, discovery.polluted_thread_ids)
    # 4b. What the folder's forget ledger names stays forgotten, whatever this DB remembers.
    report.discovery["memories forgotten (forget ledger)"] = len(honour_forget_ledger(config))

    # 5. Harvest memory citations from the rollouts discovery read: usage counts for phase 2.
    harvest = harvest_citations(config, discovery.read_paths, discovery.read_scans)
    report.discovery["citation blocks harvested"] = harvest.citation_blocks
    report.discovery["citation uses recorded"] = harvest.usage_recorded

    # 6a. Rate-limit guard (spec 1.3): too little quota left means no claims this run.
    guard = check_rate_limits(config)
    if not guard.allowed:
        report.gate, report.rate_limit = Outcome.skipped_rate_limited, guard.reason
        publish_phase1_report(report)
        return report

    # 6. Claim: interactive, enabled, idle and recent threads, up to the per-run cap (a retried
    #    flow run gets its earlier attempt's claims back).
    claims, not_taken_back = take_back_claims(config, claim_stage1_jobs(config))
    report.claimed = len(claims)
    logger.info(
        "claimed %d thread(s), at most %d extraction(s) at once (%s)", report.claimed, config.settings.concurrency,
        "offline heuristic extractor, no model" if report.provider == "heuristic" else f"provider {report.provider}, model {report.model}",
    )

    # 7-9. Extract (at most `concurrency` at once), check the batch's quality, finalize each job.
    extracted = extract_claims(claims, config, guard, kept_lines=discovery.kept_lines())
    report.extractions, report.quality, report.usage = extracted.lines + not_taken_back, extracted.quality, extracted.usage
    report.usage_reused = extracted.usage_reused
    report.rate_limit = extracted.rate_limit

    # 9b. The new stage-1 outputs lose the lines holding a text the forget ledger names.
    if claims:
        honour_forget_ledger(config, [claim.thread_id for claim in claims])

    # 10. Report, with the forget-audit rows this run wrote.
    report.forget_audit = collect_forget_audit(config, audit_start)
    publish_phase1_report(report)
    logger.info(
        "phase 1 outcomes: %s; token usage: %s (of which reused from answers earlier runs paid for: %s)",
        dict(report.outcome_counts()), dict(report.usage) or "none", dict(report.usage_reused) or "none",
    )
    return report


def take_back_claims(config: RuntimeConfig, claims: list[Stage1Claim]) -> tuple[list[Stage1Claim], list[ExtractionLine]]:
    """In a retried flow run, the claims of its earlier attempt (read back from Prefect's cache)
    taken back: a job that attempt failed gets a new token, so its extraction runs again; one
    that cannot be claimed now is a line with the claim's outcome. Unchanged in a first run."""
    if not claims or retried_flow_run() is None:
        return claims, []
    kept: list[Stage1Claim] = []
    lines: list[ExtractionLine] = []
    for claim, resumed in zip(claims, resume_claims(config, claims), strict=True):
        if resumed.claim is not None:
            kept.append(resumed.claim)
        else:
            lines.append(ExtractionLine(claim.thread_id, Outcome(resumed.outcome.value), reason="not claimable in the retry"))
    get_run_logger().info("retried run: %d of %d claim(s) taken back", len(kept), len(claims))
    return kept, lines


@dataclass
class ExtractedBatch:
    lines: list[ExtractionLine]
    quality: list[dict[str, Any]]
    usage: Counter[str]
    rate_limit: str | None = None
    usage_reused: Counter[str] | None = None


def extract_claims(
    claims: list[Stage1Claim],
    config: RuntimeConfig,
    guard: GuardDecision | None = None,
    *,
    kept_lines: Mapping[str, KeptLines] | None = None,
) -> ExtractedBatch:
    """Steps 7-9 of phase 1, shared with the backfill flow (which calls them once per batch).
    `guard` is the rate-limit decision taken just before claiming: the guard between waves starts
    from its snapshot instead of rescanning the rollouts. `kept_lines`, by rollout path, is what
    this run's discovery learnt of where long rollouts keep their transcript lines."""
    # 7. Extract: one task per claim, at most `concurrency` at once (the quality check's
    #    great-expectations import, ~3 s of CPU, happens meanwhile in the worker process if any).
    if claims:
        prepare_quality_check()
    progress.start("extract", len(claims))
    extract = extract_rollout.with_options(
        retries=config.settings.model_retries,
        retry_delay_seconds=_backoff(config),
    )
    # 7a. Answers that arrived for an earlier run of these threads (killed, or its lease expired)
    #     are reused instead of paid again; transcripts are built ahead, in a worker process.
    arrived = find_arrived_extractions(config, claims) if claims else {}
    prefetch = TranscriptPrefetch(
        claims,
        token_budget=config.settings.rollout_token_budget,
        ahead=2 * config.settings.concurrency,
        executor=transcript_pool(),
        kept_lines=kept_lines,
    )
    # The objects the run holds so far stay out of the collector's full passes while slots turn
    # over (`codex_memories.extract.collector`).
    with given_back_if_interrupted(config, claims), frozen_old_objects():
        futures, stopped_by = _submit_bounded(extract, claims, config, prefetch=prefetch, arrived=arrived, before_batch=guard)
        # The rate-limit guard stopped the waves: the claims never sent go back, unfailed.
        sent, unsent = claims[: len(futures)], claims[len(futures) :]
        if unsent:
            release_claims(config, unsent)
        results = _collect(sent, futures)

        # 8. Data quality on the batch (great-expectations).
        verdict = check_extraction_quality(results)

        # 9. Finalize each job with one of the three outcomes.
        lines = finalize_extractions(results, verdict.failed_expectations, config)
    reason = stopped_by.reason if stopped_by is not None else None
    lines += [ExtractionLine(thread_id=claim.thread_id, outcome=Outcome.skipped_rate_limited, reason=reason) for claim in unsent]
    usage = sum((Counter(result.usage) for result in results), Counter())
    reused = sum((Counter(result.usage) for result in results if result.reused_arrived_result), Counter())
    return ExtractedBatch(lines=lines, quality=verdict.summary, usage=usage, rate_limit=reason, usage_reused=reused)


def _backoff(config: RuntimeConfig) -> list[float]:
    first = config.settings.model_retry_delay_seconds
    return [first * 2**attempt for attempt in range(max(config.settings.model_retries, 1))]


def _submit_bounded(
    extract: Task[..., ExtractionResult],
    claims: list[Stage1Claim],
    config: RuntimeConfig,
    *,
    prefetch: TranscriptPrefetch | None = None,
    arrived: dict[str, Stage1ArrivedResult] | None = None,
    before_batch: GuardDecision | None = None,
) -> tuple[list[PrefectFuture[ExtractionResult]], GuardDecision | None]:
    """Submit claims, never more than `concurrency` in flight; results keep claim order. Between
    waves (each slot freed after the first `concurrency`) the rate-limit guard may stop it; the
    decision that stopped it is returned with the futures of the claims sent. Each claim goes
    with its prefetched transcript and an earlier run's answer for it, when there are."""
    limit = config.settings.concurrency
    futures: list[PrefectFuture[ExtractionResult]] = []
    in_flight: set[PrefectFuture[ExtractionResult]] = set()
    # Between waves the guard runs in this thread, not as a task run per freed slot (step 6a
    # ran the task before claiming): it gates the next submission (`codex_memories.extract.waves`).
    waves = WaveGuard(config.settings.codex_home_path, partial(rate_limit_decision, config), before_batch=before_batch)
    for claim in claims:
        if len(in_flight) >= limit:
            finished = next(as_completed(list(in_flight)))
            in_flight.discard(finished)
            guard = waves.check()  # rate-limit guard between waves
            if not guard.allowed:
                get_run_logger().warning("skipped_rate_limited: %s", guard.reason)
                return futures, guard
        # `quote`: Prefect walks every task parameter, item by item, when it creates the task run
        # and again when it starts it; for the configuration and a transcript that was most of a
        # task's Prefect overhead (py-spy, benchmarks/README.md "Phase-1 efficiency"). The task
        # gets the objects themselves; the claim stays plain (the task run's name comes from it).
        extras: dict[str, Any] = {}
        if prefetch is not None:
            extras["transcript"] = quote(prefetch.take(claim))
        if arrived and claim.thread_id in arrived:
            extras["arrived"] = quote(arrived[claim.thread_id])
        future = extract.submit(claim, config=quote(config), **extras)
        futures.append(future)
        in_flight.add(future)
    return futures, None


def _collect(
    claims: list[Stage1Claim], futures: list[PrefectFuture[ExtractionResult]]
) -> list[ExtractionResult]:
    """One failed rollout never fails the flow: an extraction that raised past its retries
    becomes a named failure outcome for that rollout alone."""
    results = []
    for claim, future in zip(claims, futures, strict=True):
        value: Any = future.result(raise_on_failure=False)
        if isinstance(value, ExtractionResult):
            results.append(value)
        else:
            reason = f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else str(value)
            results.append(failed_extraction(claim, Outcome.failed_model_request, reason))
    return results
