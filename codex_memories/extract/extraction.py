"""Phase 1 for one claimed rollout: transcript in, a stage-1 result out (not yet finalized).

Contract: `extract_memory` reads the rollout (streaming, tolerant), keeps only model-visible
conversation, redacts it, spotlights it (each item says who wrote it; text the user did not write
is datamarked), fits the token budget, renders our prompts, calls the provider with strict
JSON-schema output, parses strictly, withholds every line whose words came from tool output
(`extract.provenance`; listed in `withheld_lines`) and redacts the fields again. The scope of each task
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

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from codex_memories.evidence.screen import MAX_REPORTED_FINDINGS, excerpt
from codex_memories.extract.provenance import withhold_tool_derived
from codex_memories.extract.scope_tagging import row_scope, tag_raw_memory
from codex_memories.forget.audit import record_actions
from codex_memories.forget.empty_reextraction import empty_reextraction_actions
from codex_memories.ingest.rollout_files import rollout_failure
from codex_memories.ingest.transcript import MemoryTranscript, build_memory_transcript, unmark
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
from codex_memories.scopes import normalise_git_origin, project_key, project_key_for_directory, repository_switch
from codex_memories.state.records import JobKind, JobStatus, Stage1ArrivedResult, Stage1Claim
from codex_memories.state.store import MemoryStore

UNKNOWN_CWD = "unknown"


class ExtractionResult(BaseModel):
    """What one extraction produced. Persisted by Prefect (per claim token) so a retried run
    reuses it."""

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
    transcript_tokens: int = 0  # `MemoryTranscript.tokens`: a count, or a byte bound for a short transcript
    truncated_tokens: int = 0
    lines_skipped: int = 0
    usage: dict[str, int] = {}
    # The model answer was paid for by an earlier run that died (or lost its lease) before
    # finalizing it; this run reused it instead of calling the model again.
    reused_arrived_result: bool = False
    # Lines of the answer withheld because their words came from tool output (redacted, capped
    # excerpts; `extract.provenance.withhold_tool_derived`).
    withheld_lines: list[str] = []

    @field_validator("reason")
    @classmethod
    def _redacted_reason(cls, reason: str | None) -> str | None:
        # Prefect persists the result before `finalize_extraction` runs, and a model's error or
        # malformed answer can quote the input (a field named by a schema error is the model's).
        return redact_secrets(reason) if reason else reason


# Called with a result as soon as the model's answer is parsed and redacted, before the caller
# can fail: the phase-1 task stores it, so a crash or an expired lease never pays twice.
OnArrival = Callable[[ExtractionResult], None]


def extract_memory(
    claim: Stage1Claim,
    provider: ExtractionProvider,
    *,
    model: str,
    token_budget: int,
    transcript: MemoryTranscript | None = None,
    arrived: Stage1ArrivedResult | None = None,
    on_arrival: OnArrival | None = None,
) -> ExtractionResult:
    """One claim's extraction. `transcript` is the claim's rollout transcript when it was built
    ahead (else it is built here); `arrived` an earlier run's unfinalized answer for the thread,
    used instead of a model call when it answered the very same request; `on_arrival` gets a
    new answer's result first (see `OnArrival`)."""
    base = {
        "thread_id": claim.thread_id,
        "ownership_token": claim.ownership_token,
        "source_updated_at": claim.source_updated_at,
        "rollout_path": claim.rollout_path,
        "provider": provider.name,
        "model": model,
    }
    switch = repository_switch(claim.cwd)
    if not switch.extraction_allowed:
        # The repository keeps its sessions out of the memory (issue 35.6): checked at every claim,
        # so a switch committed after the session was discovered still holds.
        return ExtractionResult(**base, outcome=Outcome.skipped_repository_opted_out, reason=switch.describe())
    try:
        if transcript is None:
            transcript = build_memory_transcript(Path(claim.rollout_path), token_budget=token_budget)
    except OSError as error:  # one file's named outcome: unreadable, too large, corrupt
        outcome, detail = rollout_failure(error)
        return ExtractionResult(**base, outcome=outcome, reason=f"cannot read rollout: {detail}")
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
    reused = reuse_arrived_result(claim, arrived, provider=provider.name, model=model, prompt_sha256=user_prompt.sha256)
    if reused is not None:
        return reused
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
    # Typed entries (type, weight, reason, expiry) go into raw_memory as bullet suffixes and each
    # task block gets its `scope:` line, so the stage-1 row keeps Codex's three fields; their text
    # is redacted with the rest below. Datamarks a model copied from its input go, and so does
    # every line whose words came from tool output rather than from the user or the agent's own
    # actions (`extract.provenance`): whatever it says, it never becomes a memory.
    claimed_project = claim_project_key(claim)
    raw_kept = withhold_tool_derived(unmark(typed_raw_memory(extraction)), transcript.items)
    summary_kept = withhold_tool_derived(unmark(extraction.rollout_summary), transcript.items)
    raw_memory = redact_secrets(tag_raw_memory(raw_kept.text, extraction.task_scopes, claimed_project))
    rollout_summary = redact_secrets(summary_kept.text)
    slug = redact_secrets(unmark(extraction.rollout_slug)) if extraction.rollout_slug else None
    withheld = describe_withheld(raw_kept.lines + summary_kept.lines)
    usage = response.usage.model_dump()
    if not raw_memory or not rollout_summary:
        result = ExtractionResult(
            **base, **transcript_facts, outcome=Outcome.succeeded_no_output, usage=usage, withheld_lines=withheld
        )
    else:
        result = ExtractionResult(
            **base,
            **transcript_facts,
            withheld_lines=withheld,
            outcome=Outcome.succeeded,
            raw_memory=raw_memory,
            rollout_summary=rollout_summary,
            rollout_slug=slug,
            scope=row_scope(raw_memory),
            project_key=redact_secrets(claimed_project) if claimed_project else None,
            usage=usage,
        )
    if on_arrival is not None:
        on_arrival(result)
    return result


def describe_withheld(lines: list[str], limit: int = MAX_REPORTED_FINDINGS) -> list[str]:
    """Withheld lines as a report shows them: redacted, capped excerpts, then a count of the rest."""
    described = [excerpt(line) for line in lines[:limit]]
    if len(lines) > limit:
        described.append(f"... and {len(lines) - limit} more")
    return described


def arrived_result_json(result: ExtractionResult) -> str:
    """What the store keeps of an answer that arrived (fields already redacted by
    `extract_memory`; the ownership token is the paying run's and is not kept)."""
    return result.model_dump_json(exclude={"ownership_token", "reused_arrived_result"})


def reuse_arrived_result(
    claim: Stage1Claim,
    arrived: Stage1ArrivedResult | None,
    *,
    provider: str,
    model: str,
    prompt_sha256: str,
) -> ExtractionResult | None:
    """The earlier answer as this claim's result, when it answered exactly this request: same
    rollout version, provider, model and prompt (else None, and the model is called). The
    result keeps its outcome and token usage, so finalizing it accounts the paid call once."""
    if arrived is None or arrived.thread_id != claim.thread_id:
        return None
    same_request = (
        arrived.source_updated_at == claim.source_updated_at
        and arrived.provider == provider
        and arrived.model == model
        and arrived.prompt_sha256 == prompt_sha256
    )
    if not same_request:
        return None
    fields = json.loads(arrived.result_json)
    fields.update(ownership_token=claim.ownership_token, rollout_path=claim.rollout_path, reused_arrived_result=True)
    return ExtractionResult.model_validate(fields)


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
    if Path(cwd).is_absolute() and _is_directory(cwd):
        return project_key_for_directory(cwd)
    return project_key(cwd=cwd)


def _is_directory(path: str) -> bool:
    """Whether a recorded cwd is a folder here; a path the system cannot even look up (a name
    past 255 bytes, a loop) is none."""
    try:
        return Path(path).is_dir()
    except OSError:
        return False


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

    Returns the final outcome and its reason. Idempotent per claim: a job that already holds
    this outcome under the claim's token is reported as it is, not written again. A finalizer
    that matches no row otherwise means another worker stole the lease: nothing changed, and the
    outcome says so.
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
    elif outcome in (Outcome.succeeded_no_output, Outcome.skipped_repository_opted_out):
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
    if not written and not _written_by_this_claim(store, result, outcome):
        return Outcome.failed_lost_ownership, "the job's lease was taken by another worker"
    return outcome, reason


def _written_by_this_claim(store: MemoryStore, result: ExtractionResult, outcome: Outcome) -> bool:
    """The job already holds this outcome under this claim's token: an earlier attempt of the
    same flow run finalized it (a retried run finalizes its whole batch again), so nothing is
    written twice and the outcome stands."""
    job = store.get_job(JobKind.stage1, result.thread_id)
    finished = JobStatus.error if outcome.is_failure else JobStatus.done
    return job is not None and job.ownership_token == result.ownership_token and job.status == finished
