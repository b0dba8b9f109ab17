"""Phase 1 for one claimed rollout: transcript in, a stage-1 result out (not yet finalized).

Contract: `extract_memory` reads the rollout (streaming, tolerant), keeps only model-visible
conversation, redacts it, fits the token budget, renders our prompts, calls the provider with
strict JSON-schema output, parses strictly and redacts the fields again. The scope of each task
block (the model's `task_scopes`) and the key of the thread's project (`claim_project_key`) are
written into the raw memory as `scope:` / `project_key:` lines (`extract.scope_tagging`) and
carried in the result for the `stage1_outputs.scope` / `project_key` columns. It never writes the
DB: `finalize_extraction` does, with the claim's ownership token, after the batch quality check;
when an empty re-extraction deletes a thread's stage-1 row it also records forgetting route 3
(`forget.empty_reextraction`).

Transient model errors (connection, timeout, 429, 5xx) propagate as `TransientModelError` so the
caller can retry them (Prefect task retries); every other failure is returned as a named outcome
with a reason. Oversized transcripts are truncated, never failed for size.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

UNKNOWN_CWD = "unknown"

from codex_memories.extract.scope_tagging import row_scope, tag_raw_memory
from codex_memories.forget.audit import record_actions
from codex_memories.forget.empty_reextraction import empty_reextraction_actions
from codex_memories.ingest.rollouts import build_memory_transcript
from codex_memories.llm.base import (
    ExtractionProvider,
    ExtractionRequest,
    InvalidModelOutput,
    ModelRequestError,
)
from codex_memories.outcomes import Outcome, failure_reason
from codex_memories.prompts import render_stage_one_prompts
from codex_memories.redact import redact_secrets
from codex_memories.scopes import normalise_git_origin, project_key, project_key_for_directory
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
    scope: str | None = None
    project_key: str | None = None
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
    )
    request = ExtractionRequest(
        thread_id=claim.thread_id,
        rollout_path=claim.rollout_path,
        cwd=claim.cwd,
        model=model,
        system_prompt=system_prompt,
        user_prompt=user_prompt,
        transcript_items=transcript.items,
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
    project_key = claim_project_key(claim)
    raw_memory = redact_secrets(tag_raw_memory(extraction.raw_memory, extraction.task_scopes, project_key))
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
        scope=row_scope(raw_memory),
        project_key=redact_secrets(project_key) if project_key else None,
        usage=usage,
    )


def claim_project_key(claim: Stage1Claim) -> str | None:
    """The key of the project the claimed thread worked in: its recorded git origin, else what
    the cwd's repository says on this machine (origin in its config, else its root), else the
    cwd as recorded. None without a cwd."""
    origin = normalise_git_origin(claim.git_origin_url)
    if origin is not None:
        return origin
    cwd = (claim.cwd or "").strip()
    if not cwd or cwd == UNKNOWN_CWD:
        return None
    if Path(cwd).is_absolute() and Path(cwd).is_dir():
        return project_key_for_directory(cwd)
    return project_key(cwd=cwd)


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
            scope=result.scope,
            project_key=result.project_key,
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
