"""Phase 2: the singleton consolidation that writes the Codex memory folder.

Orchestration only: the numbered steps, each a task run whose error becomes that step's outcome
code (`phase2_support.stage_step`). Two guards, one truth: the state DB's global lease (with its
ownership token) decides who consolidates; Prefect agrees through a one-slot global concurrency
limit (`phase2_support.prefect_singleton_slot`, plus `concurrency_limit: 1` on the deployment),
which never makes a run hang. With `review = ask` the gated copy waits for a decision
(`phase2_review`). The run's final state says what it did (`codex_memories.reports.phase2_verdict`:
Failed on a failure, AwaitingReview while a proposal waits, Rejected when refused); a retried
flow run is not held back by the backoff or the lease its earlier attempt left.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.states import State

from codex_memories.consolidate.review import load_proposal
from codex_memories.consolidate.staging import StagedWorkspace
from codex_memories.consolidate.steps import (
    Phase2Failure,
    Phase2Lease,
    mark_failed,
    memory_storage_bytes,
)
from codex_memories.consolidate.workspace import WorkspaceDiff
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.reports import Phase2Report, phase2_verdict
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories.state.records import Phase2ClaimOutcome
from codex_memories.storage import LocalWorkspace
from codex_memories_flows.flow_runs import final_state, retried_flow_run, run_overrides
from codex_memories_flows.phase2_review import review_proposal
from codex_memories_flows.phase2_support import prefect_singleton_slot, stage_step
from codex_memories_tasks.audit_manual_changes import audit_manual_changes
from codex_memories_tasks.check_provenance import check_provenance
from codex_memories_tasks.check_settled import check_settled, record_settled
from codex_memories_tasks.claim_lock import claim_lock, lease_given_back_if_interrupted
from codex_memories_tasks.collect_forget_audit import collect_forget_audit, mark_forget_audit
from codex_memories_tasks.confirm_ownership import confirm_ownership
from codex_memories_tasks.consolidate import consolidate
from codex_memories_tasks.expire_typed_entries import expire_typed_entries
from codex_memories_tasks.find_entry_conflicts import find_entry_conflicts
from codex_memories_tasks.git_diff import git_diff, write_workspace_diff
from codex_memories_tasks.injection_gate import injection_gate, quarantine_injection_sources
from codex_memories_tasks.mark_succeeded import mark_succeeded
from codex_memories_tasks.prepare_workspace import prepare_workspace
from codex_memories_tasks.prune_extension_resources import prune_extension_resources
from codex_memories_tasks.rate_limit import check_rate_limits, release_phase2_lease
from codex_memories_tasks.refresh_recall_index import refresh_recall_index
from codex_memories_tasks.report import publish_phase2_report
from codex_memories_tasks.reset_baseline import reset_baseline
from codex_memories_tasks.select import select
from codex_memories_tasks.sync import sync
from codex_memories_tasks.validate_artifacts import validate_artifacts
from codex_memories_tasks.warn_about_codex_home import warn_about_codex_home

# Consolidations one flow run may make when stage-1 outputs keep arriving while it consolidates.
PHASE2_MAX_PASSES = 3



@flow(name="memories-phase2")
def phase2(overrides: SettingsOverrides | None = None, force: bool = False, from_scratch: bool = False) -> State:
    """Consolidate the selected stage-1 memories into the memory folder; one run at a time.

    Args:
        overrides: settings for this run on top of the deployment's default overrides, the
            worker's environment, our TOML file and the defaults (Codex home, state DB, memory
            root, provider, model, review, ...); a field given replaces that field only.
        force: skip the cooldown since the last success (never the lease).
        from_scratch: rebuild: consolidate into a fresh folder (only the extensions and the recall
            index kept from the old one) instead of on top of the last consolidation; the live
            folder serves the old one until the rebuilt one is published.
    """
    report = run_phase2(run_overrides(overrides).load(), force=force, from_scratch=from_scratch)
    return final_state(phase2_verdict(report), report)


def run_phase2(config: RuntimeConfig, *, force: bool = False, from_scratch: bool = False) -> Phase2Report:
    report = _run_phase2_once(config, force=force, from_scratch=from_scratch)
    # A consolidation that missed stage-1 outputs (they arrived while it ran) started no cooldown
    # and left the job dirty: consolidate again now rather than leave them to the next schedule.
    for _ in range(PHASE2_MAX_PASSES - 1):
        if not report.work_left:
            break
        report = _run_phase2_once(config, force=force)
    return report


def _run_phase2_once(config: RuntimeConfig, *, force: bool, from_scratch: bool = False) -> Phase2Report:
    report = Phase2Report(
        memory_root=config.settings.resolved_memory_root, provider=config.provider_name, provider_reason=config.provider_reason
    )
    report.warning = warn_about_codex_home(config)
    with prefect_singleton_slot():
        # 1. Claim the global lock (the DB lease; --force skips only the cooldown), after waiting
        #    a bounded time for stage-1 extractions in flight under live leases. A DB that cannot
        #    be reached is this step's own outcome, reported like any other.
        try:
            audit_start = stage_step(Outcome.failed_claim, mark_forget_audit, config)
            claim, worker = stage_step(Outcome.failed_claim, claim_lock, config, force, retried_flow_run())
        except Phase2Failure as failure:
            report.outcome, report.reason = failure.outcome, redact_secrets(failure.reason)
            publish_phase2_report(report)  # `_step` logged the failure with its outcome code
            return report
        if claim.outcome is not Phase2ClaimOutcome.claimed:
            report.outcome = Outcome(claim.outcome.value)
            publish_phase2_report(report)
            return report
        lease = Phase2Lease(claim.ownership_token or "", claim.input_watermark or 0, worker)
        # An interruption (Ctrl-C, SIGTERM) gives the lease back on its way out.
        with lease_given_back_if_interrupted(config, lease):
            # 1a. Nothing that decides the selection changed since the last success (time passing
            #     included) and the folder is still its baseline: finish now, before any workspace
            #     work. Otherwise the full run, whose success keeps what it settled on for the next.
            settled = check_settled(config, lease)
            try:
                if settled.selection is not None and not from_scratch:
                    report.selected, report.storage_bytes = len(settled.selection.refs), settled.storage_bytes
                    _finish(config, lease, settled.selection, report, Outcome.succeeded_no_workspace_changes)
                else:
                    _consolidate_under_lease(config, lease, report, from_scratch=from_scratch)
                    if report.outcome in (Outcome.succeeded, Outcome.succeeded_no_workspace_changes) and not report.work_left:
                        record_settled(config, settled, report.storage_bytes or 0)
            except Phase2Failure as failure:
                # The reason goes to the run artifact and the logs as well as the DB: redacted here.
                report.outcome, report.reason = failure.outcome, redact_secrets(failure.reason)
                mark_failed(
                    open_store(config.settings.resolved_db_url),
                    lease=lease,
                    outcome=failure.outcome,
                    reason=failure.reason,
                    retry_delay_seconds=(
                        config.settings.phase2_retry_delay_seconds
                        if failure.retry_delay_seconds is None
                        else failure.retry_delay_seconds
                    ),
                    usage=report.usage or None,
                )
    report.forget_audit = collect_forget_audit(config, audit_start)
    publish_phase2_report(report)
    get_run_logger().info(
        "phase 2: %s%s; selected %d; files changed %d; token usage: %s",
        report.outcome.value if report.outcome else "unknown",
        f" ({report.reason})" if report.reason else "",
        report.selected,
        len(report.files_changed),
        {key: value for key, value in report.usage.items() if value} or "none",
    )
    return report


def _consolidate_under_lease(
    config: RuntimeConfig, lease: Phase2Lease, report: Phase2Report, *, from_scratch: bool = False
) -> None:
    local_root = memory_root(config).local_path
    if config.settings.review == "ask" and local_root is not None and load_proposal(local_root) is not None:
        # One proposal at a time: a new consolidation would bury the one waiting for a decision.
        release_phase2_lease(config, lease)
        report.outcome = Outcome.skipped_review_pending
        report.reason = "a consolidation is waiting for review: `codex-memories review`, then --approve or --reject"
        return
    scratch = _scratch_dir(config)
    if from_scratch and scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
        raise Phase2Failure(Outcome.failed_prepare_workspace, "a rebuild needs a local memory root (not an object-store URL)")
    # Readers read the live folder at any time: phase 2 writes a copy of it (a local mirror of an
    # object-store root, a staging copy beside a local root) and publishes it in one step.
    workspace = (
        LocalWorkspace(memory_root(config), scratch)
        if scratch is not None
        else StagedWorkspace(memory_root(config), lease.ownership_token, from_scratch=from_scratch)
    )
    try:
        _consolidate_in_workspace(config, lease, report, workspace)
    finally:
        # Whatever this run did not publish (a failed, refused or settled run's copy) goes; the
        # live folder is the one it found.
        workspace.discard()
        if scratch is not None:
            # The object store holds the result (or the next run starts over): the local mirror
            # of this run is only a temporary copy.
            shutil.rmtree(scratch, ignore_errors=True)


def _consolidate_in_workspace(
    config: RuntimeConfig, lease: Phase2Lease, report: Phase2Report, workspace: LocalWorkspace
) -> None:
    # 2. Prepare the workspace: layout, symlink hygiene, ad-hoc seed, git baseline.
    stage_step(Outcome.failed_prepare_workspace, prepare_workspace, workspace)
    # 3. Select the top-N stage-1 outputs.
    selection = stage_step(Outcome.failed_load_stage1_outputs, select, config, lease)
    report.selected = len(selection.refs)
    # 4. Sync raw_memories.md and rollout_summaries/ from the selection.
    synced = stage_step(Outcome.failed_sync_workspace_inputs, sync, workspace, selection, config)
    # 5. Prune expired extension resources.
    expired = stage_step(Outcome.failed_sync_workspace_inputs, prune_extension_resources, workspace, config)
    # 5a. Expire temporary memory entries past their date (route entry_expiry).
    expired_entries = stage_step(Outcome.failed_sync_workspace_inputs, expire_typed_entries, workspace, selection, config)
    report.forgotten = [(item.route, item.target) for item in [*synced.forgotten, *expired, *expired_entries]]
    # 6. Diff against the baseline.
    diff, settled = stage_step(Outcome.failed_workspace_status, git_diff, workspace)
    report.diff_status = [f"{change.status} {change.path}" for change in diff.changes]
    # 7. No change and valid artifacts: finish without any model call. A copy made only to
    #    prepare the folder or re-record its inputs equals its baseline: it goes live as it is.
    if settled:
        if workspace.writable and not stage_step(Outcome.failed_confirm_ownership, confirm_ownership, config, lease):
            report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before publishing"
            return
        stage_step(Outcome.failed_workspace_commit, reset_baseline, workspace)
        report.storage_bytes = memory_storage_bytes(workspace.path)
        _finish(config, lease, selection, report, Outcome.succeeded_no_workspace_changes)
        return
    try:
        _consolidate_and_publish(config, lease, report, workspace, diff, selection)
    except Phase2Failure:
        # Nothing a failed or refused run wrote went live: its copy is discarded, the live folder
        # is the last good one.
        report.folder_restored = not getattr(workspace, "published", False)
        raise


def _consolidate_and_publish(
    config: RuntimeConfig, lease: Phase2Lease, report: Phase2Report, workspace: LocalWorkspace,
    diff: WorkspaceDiff, selection: Any,
) -> None:
    # 8. Write the diff file the consolidator reads first.
    stage_step(Outcome.failed_workspace_diff_file, write_workspace_diff, workspace, diff)
    # 8b. Contradicting memory entries, the newer winning: listed in the run artifact.
    report.conflicts = stage_step(Outcome.failed_sync_workspace_inputs, find_entry_conflicts, workspace)
    # 8a. Rate-limit guard (spec 1.3): too little quota left means the agent does not start;
    #     the lease is given back (no failure, no backoff) for the next run.
    guard = check_rate_limits(config)
    if not guard.allowed:
        release_phase2_lease(config, lease)
        report.outcome, report.reason, report.rate_limit = Outcome.skipped_rate_limited, guard.reason, guard.reason
        return
    # 9. Consolidate (the lease is renewed meanwhile; a lost lease stops it).
    step = stage_step(Outcome.failed_spawn_agent, consolidate, workspace, config, lease)
    report.consolidator, report.agent_stop_reason = step.consolidator, step.stop_reason
    report.agent_steps, report.agent_tool_calls = step.steps, step.tool_calls
    report.usage, report.files_changed = step.usage, step.files_changed
    if step.ownership_lost:
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost while consolidating"
        return  # another worker owns the job now: leave the DB and the baseline alone
    if not step.completed:
        raise Phase2Failure(Outcome.failed_agent, f"consolidation stopped: {step.stop_reason}")
    # 10. Validate the artifacts (symlinks are removed and fatal).
    problems = stage_step(Outcome.failed_invalid_artifacts, validate_artifacts, workspace)
    if problems:
        raise Phase2Failure(Outcome.failed_invalid_artifacts, "; ".join(problems))
    # 10a. Provenance: a new line whose words came only from tool output in its sessions leaves
    #      the files (audited, route tool_output_provenance); the rest goes on to the gate.
    report.provenance = stage_step(Outcome.failed_injection_gate, check_provenance, workspace, selection, config)
    # 11. The injection gate: no line that looks injected goes live. The stage-1 outputs a
    #     refused line came from are quarantined (route pollution), so the next run, without
    #     backoff, consolidates the rest; with no source found the run backs off as any failure.
    findings = stage_step(Outcome.failed_injection_gate, injection_gate, workspace)
    if findings:
        verdict = stage_step(Outcome.failed_injection_gate, quarantine_injection_sources, workspace, findings, selection, config)
        report.injection_findings, report.quarantined_threads = verdict.report_lines, verdict.quarantined
        raise verdict.failure()
    # 12. Confirm ownership before anything irreversible.
    if not stage_step(Outcome.failed_confirm_ownership, confirm_ownership, config, lease):
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before the baseline reset"
        return
    # 12a. Ask mode: the gated copy is a proposal; it goes live only once approved.
    if config.settings.review == "ask" and not review_proposal(config, lease, report, workspace, diff, selection):
        return
    # 12b. A note or an edit that reached the live folder while this run worked on its copy
    #      must not be overwritten: leave the folder to the next pass, which sees it.
    if _left_for_next_pass(config, lease, report, workspace):
        return
    # 13. Audit the ad-hoc notes and user edits this consolidation integrated (route 7).
    stage_step(Outcome.failed_forget_audit, audit_manual_changes, workspace, diff, config)
    # 14. Reset the baseline in the copy and publish it (push the mirror, or make the staging
    #     copy the live folder in one step).
    if not stage_step(Outcome.failed_workspace_commit, reset_baseline, workspace):
        _left_for_next_pass(config, lease, report, workspace, published=False)
        return
    # 15. Mark success: exact-snapshot selection flags and the watermark.
    report.storage_bytes = memory_storage_bytes(workspace.path)
    _finish(config, lease, selection, report, Outcome.succeeded)
    # 16. Refresh the recall index the hooks and the memory tools search (derived data: a
    #     failure is reported, never a failed consolidation).
    if report.outcome is Outcome.succeeded:
        report.recall_index = refresh_recall_index(workspace)


def _left_for_next_pass(
    config: RuntimeConfig, lease: Phase2Lease, report: Phase2Report, workspace: LocalWorkspace, *, published: bool = True
) -> bool:
    """When the live folder changed since it was copied, give the lease back (no failure, no
    cooldown) and ask for another pass. True when the folder was left."""
    changed = workspace.changed_meanwhile() if isinstance(workspace, StagedWorkspace) else []
    if published and not changed:
        return False
    release_phase2_lease(config, lease)
    report.outcome, report.work_left = Outcome.skipped_live_folder_changed, True
    report.reason = redact_secrets(
        "the memory folder changed while this run consolidated a copy of it"
        + (f" ({', '.join(changed[:5])})" if changed else "")
        + ": nothing was published; the next pass consolidates the change"
    )
    return True


def _finish(config: RuntimeConfig, lease: Phase2Lease, selection: Any, report: Phase2Report, outcome: Outcome) -> None:
    mark = mark_succeeded(config, lease, selection, report.usage or None)
    if mark.owned:
        report.outcome, report.work_left = outcome, mark.work_left
    else:
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before marking success"


def _scratch_dir(config: RuntimeConfig) -> Path | None:
    """A local mirror for object-store roots; unused (None) for local roots."""
    if "://" not in config.settings.resolved_memory_root:
        return None
    return Path(tempfile.mkdtemp(prefix="codex-memories-workspace-"))
