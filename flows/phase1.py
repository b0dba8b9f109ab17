"""Phase 1: Codex rollout files become stage-1 memories.

Orchestration only; every decision lives in `codex_memories`. Parameters are settings overrides
(none of them secret: API keys come from the environment or our settings file, never from a
flow parameter, which Prefect would store).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from prefect import Task, flow, get_run_logger
from prefect.futures import PrefectFuture, as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from codex_memories import progress

from codex_memories.extract import quality
from codex_memories.extract.extraction import ExtractionResult, failed_extraction
from codex_memories.outcomes import Outcome
from codex_memories.reports import ExtractionLine, Phase1Report
from codex_memories.settings import RuntimeConfig, load_runtime_config
from codex_memories.state.records import Stage1Claim
from codex_memories_tasks.audit_pollution import audit_polluted_threads
from codex_memories_tasks.claim import claim_stage1_jobs
from codex_memories_tasks.collect_forget_audit import collect_forget_audit
from codex_memories_tasks.discover import discover
from codex_memories_tasks.extract import extract_rollout
from codex_memories_tasks.finalize import finalize_extractions
from codex_memories_tasks.forget_deleted_threads import forget_deleted_threads
from codex_memories_tasks.gates import check_phase1_gates
from codex_memories_tasks.harvest_citations import harvest_citations
from codex_memories_tasks.quality import check_extraction_quality
from codex_memories_tasks.report import publish_phase1_report
from codex_memories_tasks.retention import prune_retention

# The pool is sized for the largest allowed `concurrency`; the flow keeps at most `concurrency`
# extractions in flight (measured: Prefect's global and tag concurrency limits poll for slots
# and cost 10x). Several flow runs together are bounded by the state DB's running cap instead.
MAX_EXTRACTION_WORKERS = 64


@flow(
    name="memories-phase1",
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_EXTRACTION_WORKERS),
    log_prints=False,
)
def phase1(
    codex_home: str | None = None,
    db_url: str | None = None,
    memory_root: str | None = None,
    provider: Literal["auto", "openai", "heuristic"] | None = None,
    base_url: str | None = None,
    api_mode: Literal["responses", "chat"] | None = None,
    config_file: str | None = None,
    extract_model: str | None = None,
    max_rollouts_per_startup: int | None = None,
    ignore_age_windows: bool | None = None,
    concurrency: int | None = None,
) -> Phase1Report:
    """Discover rollouts, claim idle recent threads and extract a stage-1 memory from each.

    Args:
        codex_home: Codex home to read (sessions/, archived_sessions/, config.toml).
        db_url: SQLAlchemy URL of the state DB (PostgreSQL for several workers).
        memory_root: memory folder, a path or s3://bucket/prefix.
        provider: auto, openai or heuristic (offline).
        base_url: an OpenAI-compatible server's URL (vLLM, Ollama, a gateway).
        api_mode: `responses` (default) or `chat` for servers without /v1/responses.
        config_file: our own TOML settings file (default $CODEX_HOME/codex-memories.toml).
        extract_model: the phase-1 model.
        max_rollouts_per_startup: threads claimed per run (1..128).
        ignore_age_windows: claim regardless of the idle and age windows.
        concurrency: extractions at once (1..64).
    """
    config = load_runtime_config(
        codex_home=codex_home,
        db_url=db_url,
        memory_root=memory_root,
        provider=provider,
        base_url=base_url,
        api_mode=api_mode,
        config_file=config_file,
        extract_model=extract_model,
        max_rollouts_per_startup=max_rollouts_per_startup,
        ignore_age_windows=ignore_age_windows,
        concurrency=concurrency,
    )
    return run_phase1(config)



def run_phase1(config: RuntimeConfig) -> Phase1Report:
    """The numbered steps of phase 1, callable from any flow (phase1, run, backfill)."""
    report = Phase1Report(provider=config.provider_name, model=config.extract_model)
    started_at = int(time.time())

    # 1. Gates: the feature flag and generate_memories.
    report.gate = check_phase1_gates(config)
    if report.gate is not None:
        publish_phase1_report(report)
        return report

    # 2. Retention prune (forgetting route 1), before anything else, as Codex does.
    report.pruned_thread_ids = prune_retention(config)

    # 3. Discovery: rollout files -> threads.
    discovery = discover(config)
    report.discovery = {
        "files seen": discovery.files_seen,
        "files read": discovery.files_read,
        "files unchanged": discovery.files_unchanged,
        "archived files": discovery.archived_files,
        "non-interactive sessions": discovery.non_interactive,
        "damaged lines skipped": discovery.lines_skipped,
        "unreadable files": len(discovery.unreadable),
        "newly polluted threads": len(discovery.polluted_thread_ids),
        "rollouts that disappeared": len(discovery.missing_thread_ids),
        **{f"damaged lines skipped: {reason}": count for reason, count in sorted(discovery.skipped_by_reason.items())},
    }

    # 4. Forget what discovery found deleted (route 4) and audit what it found polluted (route 5).
    report.discovery["memories forgotten (rollout deleted)"] = len(forget_deleted_threads(config))
    audit_polluted_threads(config, discovery.polluted_thread_ids)

    # 5. Harvest memory citations from the rollouts discovery read: usage counts for phase 2.
    harvest = harvest_citations(config, discovery.read_paths)
    report.discovery["citation blocks harvested"] = harvest.citation_blocks
    report.discovery["citation uses recorded"] = harvest.usage_recorded

    # 6. Claim: interactive, enabled, idle and recent threads, up to the per-run cap.
    claims = claim_stage1_jobs(config)
    report.claimed = len(claims)

    # 7-9. Extract (at most `concurrency` at once), check the batch's quality, finalize each job.
    extracted = extract_claims(claims, config)
    report.extractions, report.quality, report.usage = extracted.lines, extracted.quality, extracted.usage

    # 10. Report, with the forget-audit rows this run wrote.
    report.forget_audit = collect_forget_audit(config, started_at)
    publish_phase1_report(report)
    get_run_logger().info("phase 1 outcomes: %s", dict(report.outcome_counts()))
    return report


@dataclass
class ExtractedBatch:
    lines: list[ExtractionLine]
    quality: list[dict[str, Any]]
    usage: Counter[str]


def extract_claims(claims: list[Stage1Claim], config: RuntimeConfig) -> ExtractedBatch:
    """Steps 7-9 of phase 1, shared with the backfill flow (which calls them once per batch)."""
    # 7. Extract: one task per claim, at most `concurrency` at once (the quality check's
    #    great-expectations import, ~3 s, happens meanwhile in the background).
    if claims:
        quality.prewarm()
    progress.start("extract", len(claims))
    extract = extract_rollout.with_options(
        retries=config.settings.model_retries,
        retry_delay_seconds=_backoff(config),
    )
    futures = _submit_bounded(extract, claims, config)
    results = _collect(claims, futures)

    # 8. Data quality on the batch (great-expectations).
    verdict = check_extraction_quality(results)

    # 9. Finalize each job with one of the three outcomes.
    lines = finalize_extractions(results, verdict.failed_expectations, config)
    usage = sum((Counter(result.usage) for result in results), Counter())
    return ExtractedBatch(lines=lines, quality=verdict.summary, usage=usage)


def _backoff(config: RuntimeConfig) -> list[float]:
    first = config.settings.model_retry_delay_seconds
    return [first * 2**attempt for attempt in range(max(config.settings.model_retries, 1))]


def _submit_bounded(
    extract: Task[..., ExtractionResult], claims: list[Stage1Claim], config: RuntimeConfig
) -> list[PrefectFuture[ExtractionResult]]:
    """Submit every claim, never more than `concurrency` in flight; results keep claim order."""
    limit = config.settings.concurrency
    futures: list[PrefectFuture[ExtractionResult]] = []
    in_flight: set[PrefectFuture[ExtractionResult]] = set()
    for claim in claims:
        if len(in_flight) >= limit:
            finished = next(as_completed(list(in_flight)))
            in_flight.discard(finished)
        future = extract.submit(claim, config=config)
        futures.append(future)
        in_flight.add(future)
    return futures


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
