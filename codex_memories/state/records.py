"""Records that leave the state store. Callers never see ORM objects.

Times follow the spec: memory tables use Unix epoch seconds, `threads` uses milliseconds.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class MemoryMode(StrEnum):
    enabled = "enabled"
    disabled = "disabled"
    polluted = "polluted"


class JobKind(StrEnum):
    stage1 = "memory_stage1"
    consolidate_global = "memory_consolidate_global"


class JobStatus(StrEnum):
    pending = "pending"
    running = "running"
    done = "done"
    error = "error"


GLOBAL_JOB_KEY = "global"
# The unit of `max_unused_days`: the store's selection window and forgetting's ageing moment
# (`forget.selection_window.next_selection_ageing`) must count a day alike.
SECONDS_PER_DAY = 86_400


class ThreadRecord(_Record):
    """One rollout file as discovery sees it (our `threads` table, spec 2.2 columns we need)."""

    id: str
    rollout_path: str
    created_at_ms: int
    updated_at_ms: int
    source: str
    cwd: str | None = None
    originator: str | None = None
    cli_version: str | None = None
    model_provider: str | None = None
    forked_from_id: str | None = None
    first_user_message: str | None = None
    archived: bool = False
    archived_at_ms: int | None = None
    git_sha: str | None = None
    git_branch: str | None = None
    git_origin_url: str | None = None
    memory_mode: MemoryMode = MemoryMode.enabled
    used_external_context: bool = False
    # Incremental discovery: unchanged size and mtime mean the file is not read again.
    rollout_size: int = 0
    rollout_mtime_ns: int = 0
    # Set when the rollout file disappeared; forgetting route 4 acts on it.
    missing_since_ms: int | None = None


class Stage1Output(_Record):
    """A `stage1_outputs` row, hydrated with thread metadata when the query joins threads."""

    thread_id: str
    source_updated_at: int
    raw_memory: str
    rollout_summary: str
    rollout_slug: str | None = None
    generated_at: int
    usage_count: int | None = None
    last_usage: int | None = None
    selected_for_phase2: bool = False
    selected_for_phase2_source_updated_at: int | None = None
    cwd: str | None = None
    rollout_path: str | None = None
    git_branch: str | None = None
    # Issue 15: `user`, `project` or `mixed` (the task blocks' `scope:` lines folded), and the
    # key of the thread's project (`scopes.project_key`); None on rows older than migration 0003.
    scope: str | None = None
    project_key: str | None = None


class Stage1OutputRef(_Record):
    """A selected stage-1 output without its payloads: everything else its files are made of.

    Phase 2 selects these first; the payloads are loaded only when the selection differs from
    the one last written to the memory folder."""

    thread_id: str
    source_updated_at: int
    generated_at: int
    rollout_slug: str | None = None
    cwd: str | None = None
    rollout_path: str | None = None
    git_branch: str | None = None


class OutputIdentity(NamedTuple):
    """What phase 2's success mark matches a selected output by (spec 2.4: exactly this pair).
    A settled check's selection carries only these: it is never synced from, and a tuple costs
    a fraction of a model (4,096 refs were half of the early finish's time)."""

    thread_id: str
    source_updated_at: int


class Stage1ClaimOutcome(StrEnum):
    claimed = "claimed"
    skipped_up_to_date = "skipped_up_to_date"
    skipped_running = "skipped_running"
    skipped_retry_backoff = "skipped_retry_backoff"
    skipped_retry_exhausted = "skipped_retry_exhausted"


class Stage1ClaimResult(_Record):
    outcome: Stage1ClaimOutcome
    ownership_token: str | None = None


class Stage1Claim(_Record):
    """A claimed stage-1 job: everything an extraction needs, and the token to finalize it."""

    thread_id: str
    ownership_token: str
    source_updated_at: int
    rollout_path: str
    cwd: str | None = None
    git_branch: str | None = None
    source: str = "cli"
    git_origin_url: str | None = None  # stored redacted; `scopes.normalise_git_origin` drops the marker


class Stage1ClaimResume(_Record):
    """A claim of an earlier attempt of the same flow run, taken back by its retry
    (`MemoryStore.resume_stage1_claims`): `claim` is what the retry works on (its token may be
    new), None when the thread cannot be claimed now, for `outcome`."""

    outcome: Stage1ClaimOutcome
    claim: Stage1Claim | None = None


class Stage1ArrivedResult(_Record):
    """A model answer that arrived for a stage-1 job and was not finalized yet (its JSON is the
    extraction layer's redacted result; the store does not read it)."""

    thread_id: str
    source_updated_at: int
    provider: str
    model: str
    prompt_sha256: str
    result_json: str
    arrived_at: int


class Phase2ClaimOutcome(StrEnum):
    claimed = "claimed"
    skipped_running = "skipped_running"
    skipped_cooldown = "skipped_cooldown"
    skipped_retry_unavailable = "skipped_retry_unavailable"
    # Ours: stage-1 jobs are running under live leases; their outputs are not there to see yet.
    skipped_stage1_in_flight = "skipped_stage1_in_flight"


class Phase2ClaimResult(_Record):
    outcome: Phase2ClaimOutcome
    ownership_token: str | None = None
    input_watermark: int | None = None
    # Why a skip (`skipped_retry_unavailable`: the failure backed off from and until when).
    reason: str | None = None


class JobRecord(_Record):
    kind: str
    job_key: str
    status: str
    worker_id: str | None = None
    ownership_token: str | None = None
    started_at: int | None = None
    finished_at: int | None = None
    lease_until: int | None = None
    retry_at: int | None = None
    retry_remaining: int
    last_error: str | None = None
    input_watermark: int | None = None
    last_success_watermark: int | None = None
    # Token usage added up over every attempt of this job (our extension; NULL = never reported).
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_output_tokens: int | None = None
    total_tokens: int | None = None


TOKEN_USAGE_FIELDS: tuple[str, ...] = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
"""Keys accepted in a finalizer's `usage` dict; each maps to a nullable `jobs` column."""


class ForgetRoute(StrEnum):
    """Why something was forgotten (spec section 6, plus our manual sub-routes).

    The values are stored in `forget_audit.route` and are the forget flow's route names: never
    rename one without a migration of the stored rows."""

    retention_prune = "retention_prune"
    selection_window = "selection_window"
    empty_reextraction = "empty_reextraction"
    thread_deletion = "thread_deletion"
    pollution = "pollution"
    disabled = "disabled"
    extension_expiry = "extension_expiry"
    entry_expiry = "entry_expiry"
    manual_reset = "manual_reset"
    ad_hoc_note = "ad_hoc_note"
    user_edit = "user_edit"
    # Selective forgetting (issue 15): one project's memories, every memory line holding a text.
    project_deletion = "project_deletion"
    text_match = "text_match"
    # Issue 29: a line a consolidation wrote whose words came from tool output, never the
    # user's (`consolidate.provenance_check`); removed before the folder goes live.
    tool_output_provenance = "tool_output_provenance"


class ForgetAuditRecord(_Record):
    """One `forget_audit` row: what a forgetting route removed, and why."""

    id: int
    route: ForgetRoute
    target: str
    reason: str
    removed: Any
    created_at: int


class StatusSummary(_Record):
    """A snapshot of the state DB for `status` output and run artifacts."""

    threads_by_memory_mode: dict[str, int]
    archived_threads: int
    missing_threads: int
    jobs_by_kind_and_status: dict[str, dict[str, int]]
    stage1_outputs: int
    selected_for_phase2: int
    last_phase2_job: JobRecord | None
    token_totals: dict[str, int]
    token_totals_by_kind: dict[str, dict[str, int]]


class CoverageReason(StrEnum):
    """Where one session stands for extraction (`status`: seen, extracted, left out and why).

    The first that applies, in this order: a reason the session is left out for good, then
    whether it was extracted, then why it is not yet."""

    file_gone = "file_gone"
    archived = "archived"  # `codex-memories backfill` takes archived sessions
    memory_disabled = "memory_disabled"
    external_context = "external_context"  # polluted: it read external context
    not_interactive = "not_interactive"  # `codex exec`, sub-agents, ...: by source
    no_user_message = "no_user_message"
    extracted = "extracted"
    nothing_to_keep = "nothing_to_keep"  # read, and nothing in it was worth keeping
    failed = "failed"  # the last extraction failed; a later run retries it
    too_old = "too_old"  # older than max_rollout_age_days
    too_recent = "too_recent"  # idle for less than min_rollout_idle_hours
    waiting = "waiting"  # the next run takes it


class SessionCoverage(_Record):
    """How many sessions the state DB has seen, by `CoverageReason`, and the non-interactive ones
    by source (`exec`, `subagent`, ...)."""

    seen: int
    by_reason: dict[str, int]
    not_interactive_by_source: dict[str, int]
    min_rollout_idle_hours: int | None
    max_rollout_age_days: int | None


class Phase2InputsState(_Record):
    """What the phase-2 selection and the files it makes depend on, read in one aggregate query.

    `fingerprint` changes whenever a stage-1 output is added, refreshed or deleted, a usage is
    recorded, or a thread with an output changes mode, activity time or rollout path; the
    global job's input watermark is part of it (every enqueue moves it). `oldest_ranking_time`
    is the smallest `COALESCE(last_usage, source_updated_at)` still inside the
    `max_unused_days` window: the next output to age out of the selection does so at that time
    plus the window."""

    fingerprint: str
    oldest_ranking_time: int | None
