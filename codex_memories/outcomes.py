"""The one outcome vocabulary (ARCHITECTURE.md, spec section 12.1).

The same snake_case string appears in the state DB (`jobs.last_error`), log lines, Prefect state
messages and run artifacts. "Nothing changed" is a success, never an error.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    # Gates and claims (phase 1).
    skipped_feature_disabled = "skipped_feature_disabled"
    skipped_generation_disabled = "skipped_generation_disabled"
    skipped_no_candidates = "skipped_no_candidates"
    claimed = "claimed"
    skipped_up_to_date = "skipped_up_to_date"
    skipped_running = "skipped_running"
    skipped_retry_backoff = "skipped_retry_backoff"
    skipped_retry_exhausted = "skipped_retry_exhausted"
    # The rate-limit guard (spec 1.3): too little quota left; claims released, not failed.
    skipped_rate_limited = "skipped_rate_limited"

    # Stage-1 results.
    succeeded = "succeeded"
    succeeded_no_output = "succeeded_no_output"
    # The session's repository says "off" or "user-only" in its `.codex-memories.toml`
    # (`scopes.repository_switch`): no model call; stored as a no-output success, so the thread is
    # not claimed again until it changes and what it taught before goes (as for an empty output).
    skipped_repository_opted_out = "skipped_repository_opted_out"
    failed_rollout_unreadable = "failed_rollout_unreadable"
    # One rollout file that cannot be read as one (`ingest.rollout_files`): in discovery a file
    # outcome (counted in the run report), in extraction the job's failure.
    failed_rollout_too_large = "failed_rollout_too_large"
    failed_rollout_decompress = "failed_rollout_decompress"
    # Discovery: an entry named like a rollout that is no regular file (FIFO, socket, device,
    # symlink, folder), and a path no row can be keyed by (not UTF-8, or too long); left out and
    # counted.
    skipped_rollout_not_a_file = "skipped_rollout_not_a_file"
    skipped_rollout_unusable_path = "skipped_rollout_unusable_path"
    failed_model_request = "failed_model_request"
    failed_invalid_output = "failed_invalid_output"
    failed_quality_check = "failed_quality_check"
    failed_lost_ownership = "failed_lost_ownership"

    # Phase 2 (spec 12.1).
    skipped_cooldown = "skipped_cooldown"
    skipped_retry_unavailable = "skipped_retry_unavailable"
    # Ours: where the forget audit stood when the run started could not be read (the report lists
    # the rows written after it).
    failed_mark_forget_audit = "failed_mark_forget_audit"
    failed_claim = "failed_claim"
    failed_prepare_workspace = "failed_prepare_workspace"
    failed_sandbox_policy = "failed_sandbox_policy"
    failed_load_stage1_outputs = "failed_load_stage1_outputs"
    failed_sync_workspace_inputs = "failed_sync_workspace_inputs"
    # Ours: one code per step of ours around the sync (`flows/phase2.py`), so a red run names the
    # step that failed: the refused notes' quarantine, forgetting routes 6 (extension resources)
    # and 8 (typed entries past their date), and the later-words conflicts.
    failed_quarantine_refused_notes = "failed_quarantine_refused_notes"
    failed_prune_extension_resources = "failed_prune_extension_resources"
    failed_expire_typed_entries = "failed_expire_typed_entries"
    failed_find_entry_conflicts = "failed_find_entry_conflicts"
    failed_workspace_status = "failed_workspace_status"
    failed_workspace_diff_file = "failed_workspace_diff_file"
    failed_spawn_agent = "failed_spawn_agent"
    failed_agent = "failed_agent"
    failed_invalid_artifacts = "failed_invalid_artifacts"
    # Ours: the provenance check could not run (its findings are a report, never a failure).
    failed_provenance_check = "failed_provenance_check"
    # Ours: the consolidated files hold lines that look injected (spec 12.1 has no gate).
    failed_injection_gate = "failed_injection_gate"
    # Ours: the sources of the refused lines could not be traced or quarantined.
    failed_quarantine_injection_sources = "failed_quarantine_injection_sources"
    # Ours: another run's stage-1 extractions are in flight under live leases; the global job
    # stays dirty for the next run (no consolidation, no cooldown).
    skipped_stage1_in_flight = "skipped_stage1_in_flight"
    # Ours: the live memory folder changed (a note, a user's edit) while phase 2 consolidated a
    # copy of it; nothing was published, the lease is given back and another pass runs.
    skipped_live_folder_changed = "skipped_live_folder_changed"
    # Ours, review = ask: the consolidation is a proposal on disk waiting for `codex-memories
    # review` (the run could not pause); a run that finds one waiting does not consolidate again;
    # a rejected or unanswered proposal is discarded (inputs kept for the next run); a proposal
    # that could not be kept or decided is its own failure.
    proposed_awaiting_review = "proposed_awaiting_review"
    skipped_review_pending = "skipped_review_pending"
    skipped_review_rejected = "skipped_review_rejected"
    skipped_review_timeout = "skipped_review_timeout"
    failed_review = "failed_review"
    failed_confirm_ownership = "failed_confirm_ownership"
    failed_workspace_commit = "failed_workspace_commit"
    failed_forget_audit = "failed_forget_audit"
    succeeded_no_workspace_changes = "succeeded_no_workspace_changes"

    @property
    def is_failure(self) -> bool:
        return self.value.startswith("failed_")


def failure_reason(outcome: Outcome, detail: str | None = None) -> str:
    """The `jobs.last_error` text: the outcome code first, then an optional human detail."""
    if not detail:
        return outcome.value
    return f"{outcome.value}: {detail}"
