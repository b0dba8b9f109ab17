"""Phase 1 for one claimed rollout: transcript in, a stage-1 result out (not yet finalized).

Contract: `extract_memory` reads the rollout (streaming, tolerant), keeps only model-visible
conversation, redacts it, fits the token budget, renders our prompts, calls the provider with
strict JSON-schema output, parses strictly and redacts the fields again. It never writes the
DB: `finalize_extraction` does, with the claim's ownership token, after the batch quality check;
when an empty re-extraction deletes a thread's stage-1 row it also records forgetting route 3
(`forget.empty_reextraction`).

Transient model errors (connection, timeout, 429, 5xx) propagate as `TransientModelError` so the
caller can retry them (Prefect task retries); every other failure is returned as a named outcome
with a reason. Oversized transcripts are truncated, never failed for size.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from codex_memories.forget.audit import record_actions
from codex_memories.forget.empty_reextraction import empty_reextraction_actions
from codex_memories.ingest.rollouts import build_memory_transcript
from codex_memories.llm.base import (
    ExtractionProvider,
    ExtractionRequest,
    InvalidModelOutput,
    ModelRequestError,
)
from codex_memories.llm.schema import typed_raw_memory
from codex_memories.outcomes import Outcome, failure_reason
from codex_memories.prompts import render_stage_one_prompts
from codex_memories.redact import redact_secrets
from codex_memories.state.records import Stage1Claim
from codex_memories.state.store import MemoryStore


class ExtractionResult(BaseModel):
    """What one extraction produced. Persisted by Prefect so a retried run reuses it."""

    model_config = ConfigDict(frozen=True)

    thread_id: str
    ownership_token: str
    source_updated_at: int
    rollout_path: str
    outcome: Outcome
    reason: str | None = None
    raw_memory: str = ""
    rollout_summary: str = ""
    rollout_slug: str | None = None
    provider: str | None = None
    model: str | None = None
    prompt_sha256: str | None = None
    transcript_tokens: int = 0
    truncated_tokens: int = 0
    lines_skipped: int = 0
    usage: dict[str, int] = {}


def extract_memory(
    claim: Stage1Claim,
    provider: ExtractionProvider,
    *,
    model: str,
    token_budget: int,
) -> ExtractionResult:
    base = {
        "thread_id": claim.thread_id,
        "ownership_token": claim.ownership_token,
        "source_updated_at": claim.source_updated_at,
        "rollout_path": claim.rollout_path,
        "provider": provider.name,
        "model": model,
    }
    try:
        transcript = build_memory_transcript(Path(claim.rollout_path), token_budget=token_budget)
    except OSError as error:
        return ExtractionResult(
            **base,
            outcome=Outcome.failed_rollout_unreadable,
            reason=f"cannot read rollout: {error.strerror or error}",
        )
    transcript_facts = {
        "transcript_tokens": transcript.tokens,
        "truncated_tokens": transcript.truncated_tokens,
        "lines_skipped": transcript.stats.lines_skipped,
    }
    if not transcript.items:
        # Nothing model-visible survived filtering: there is nothing to remember, and no reason
        # to spend a model call finding that out.
        return ExtractionResult(
            **base,
            **transcript_facts,
            outcome=Outcome.succeeded_no_output,
            reason="no model-visible conversation in the rollout",
        )

    system_prompt, user_prompt = render_stage_one_prompts(
        rollout_path=claim.rollout_path,
        rollout_cwd=claim.cwd or "unknown",
        rollout_transcript=transcript.text,
        rollout_updated_at=datetime.fromtimestamp(claim.source_updated_at, UTC).isoformat(),
    )
    request = ExtractionRequest(
        thread_id=claim.thread_id,
        rollout_path=claim.rollout_path,
        cwd=claim.cwd,
        model=model,
        system_prompt=system_prompt,
        user_prompt=user_prompt,
        transcript_items=transcript.items,
        session_time=datetime.fromtimestamp(claim.source_updated_at, UTC),
    )
    base["prompt_sha256"] = user_prompt.sha256
    try:
        response = provider.extract(request)
    except ModelRequestError as error:
        return ExtractionResult(
            **base, **transcript_facts, outcome=Outcome.failed_model_request, reason=str(error)
        )
    except InvalidModelOutput as error:
        return ExtractionResult(
            **base, **transcript_facts, outcome=Outcome.failed_invalid_output, reason=str(error)
        )

    extraction = response.extraction
    # Typed entries (type, weight, reason, expiry) go into raw_memory as bullet suffixes, so the
    # stage-1 row keeps Codex's three fields; their text is redacted with the rest below.
    raw_memory = redact_secrets(typed_raw_memory(extraction))
    rollout_summary = redact_secrets(extraction.rollout_summary)
    slug = redact_secrets(extraction.rollout_slug) if extraction.rollout_slug else None
    usage = response.usage.model_dump()
    if not raw_memory or not rollout_summary:
        return ExtractionResult(
            **base, **transcript_facts, outcome=Outcome.succeeded_no_output, usage=usage
        )
    return ExtractionResult(
        **base,
        **transcript_facts,
        outcome=Outcome.succeeded,
        raw_memory=raw_memory,
        rollout_summary=rollout_summary,
        rollout_slug=slug,
        usage=usage,
    )


def failed_extraction(claim: Stage1Claim, outcome: Outcome, reason: str) -> ExtractionResult:
    """A result for an extraction that raised past its retries (e.g. the model stayed down)."""
    return ExtractionResult(
        thread_id=claim.thread_id,
        ownership_token=claim.ownership_token,
        source_updated_at=claim.source_updated_at,
        rollout_path=claim.rollout_path,
        outcome=outcome,
        reason=reason,
    )


def finalize_extraction(
    store: MemoryStore,
    result: ExtractionResult,
    *,
    failed_expectations: list[str],
    retry_delay_seconds: int,
) -> tuple[Outcome, str | None]:
    """Write one of the three spec 1.10 outcomes with the claim's token.

    Returns the final outcome and its reason. A finalizer that matches no row means another
    worker stole the lease: nothing changed, and the outcome says so.
    """
    # Reasons go to the DB, the logs and the run artifact: redacted once, here, for all three.
    outcome = result.outcome
    reason = redact_secrets(result.reason) if result.reason else None
    if outcome is Outcome.succeeded and failed_expectations:
        outcome = Outcome.failed_quality_check
        reason = "failed expectations: " + ", ".join(failed_expectations)

    if outcome is Outcome.succeeded:
        written = store.mark_stage1_job_succeeded(
            thread_id=result.thread_id,
            ownership_token=result.ownership_token,
            source_updated_at=result.source_updated_at,
            raw_memory=result.raw_memory,
            rollout_summary=result.rollout_summary,
            rollout_slug=result.rollout_slug,
            usage=result.usage or None,
        )
    elif outcome is Outcome.succeeded_no_output:
        previous = store.get_stage1_output(result.thread_id)
        written = store.mark_stage1_job_succeeded_no_output(
            thread_id=result.thread_id,
            ownership_token=result.ownership_token,
            usage=result.usage or None,
        )
        if written:
            # Forgetting route 3: an empty re-extraction removed what this thread taught us.
            record_actions(store, empty_reextraction_actions(result.thread_id, previous))
    else:
        written = store.mark_stage1_job_failed(
            thread_id=result.thread_id,
            ownership_token=result.ownership_token,
            reason=failure_reason(outcome, reason),
            retry_delay_seconds=retry_delay_seconds,
            usage=result.usage or None,
        )
    if not written:
        return Outcome.failed_lost_ownership, "the job's lease was taken by another worker"
    return outcome, reason
