"""Phase 2: the singleton consolidation that writes the Codex memory folder.

Orchestration only: the numbered steps, each a task run whose error becomes that step's outcome
code (`phase2_support.stage_step`). Once the lease is held, every task takes the pass's context
(`runtime.Phase2Context`: the store, the memory root and the copy of it this pass writes, the
clock, the lease), built once per pass. Two guards, one truth: the state DB's global lease (with its
ownership token) decides who consolidates; Prefect agrees through a one-slot global concurrency
limit (`phase2_support.prefect_singleton_slot`, plus `concurrency_limit: 1` on the deployment),
which never makes a run hang. With `review = ask` the gated copy waits for a decision
(`phase2_review`). The run's final state says what it did (`codex_memories.reports.phase2_verdict`:
Failed on a failure, AwaitingReview while a proposal waits, Rejected when refused); a retried
flow run is not held back by the backoff or the lease its earlier attempt left.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.states import State

from codex_memories.consolidate.steps import Phase2Failure, Phase2Lease, SettledCheck
from codex_memories.memory_folder.workspace import WorkspaceDiff
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.reports.verdicts import phase2_verdict
from codex_memories.runtime import Phase2Context, phase2_context
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories.state.records import Phase2ClaimOutcome
from codex_memories_flows.flow_runs import final_state, retried_flow_run, run_overrides, tag_this_run
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
from codex_memories_tasks.injection_gate import injection_gate, quarantine_injection_sources, quarantine_refused_notes
from codex_memories_tasks.mark_failed import mark_failed
from codex_memories_tasks.mark_succeeded import mark_succeeded
from codex_memories_tasks.measure_storage import measure_storage
from codex_memories_tasks.prepare_workspace import prepare_workspace
from codex_memories_tasks.prune_extension_resources import prune_extension_resources
from codex_memories_tasks.rate_limit import check_rate_limits, release_phase2_lease
from codex_memories_tasks.refresh_recall_index import refresh_recall_index
from codex_memories_tasks.report import publish_phase2_report
from codex_memories_tasks.reset_baseline import reset_baseline
from codex_memories_tasks.review import proposal_waiting
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
        force: skip the cooldown since the last success and lift the backoff after a failure
            (never the lease).
        from_scratch: rebuild: consolidate into a fresh folder (only the extensions and the recall
            index kept from the old one) instead of on top of the last consolidation; the live
            folder serves the old one until the rebuilt one is published.
    """
    config = run_overrides(overrides).load()
    tag_this_run("phase2", provider=config.provider_name)
    report = run_phase2(config, force=force, from_scratch=from_scratch)
    return final_state(phase2_verdict(report), report)


def run_phase2(
    config: RuntimeConfig, *, force: bool = False, from_scratch: bool = False, wait_for_stage1: bool = True
) -> Phase2Report:
    """`wait_for_stage1=False`: do not wait for other runs' extractions in flight (a backfill's
    phase 2: those runs consolidate at their own end, or the next phase 2 does)."""
    report = _run_phase2_once(config, force=force, from_scratch=from_scratch, wait_for_stage1=wait_for_stage1)
    # A consolidation that missed stage-1 outputs (they arrived while it ran) started no cooldown
    # and left the job dirty: consolidate again now rather than leave them to the next schedule.
    for _ in range(PHASE2_MAX_PASSES - 1):
        if not report.work_left:
            break
        report = _run_phase2_once(config, force=force, wait_for_stage1=wait_for_stage1)
    return report


def _run_phase2_once(
    config: RuntimeConfig, *, force: bool, from_scratch: bool = False, wait_for_stage1: bool = True
) -> Phase2Report:
    report = Phase2Report(
        memory_root=config.settings.resolved_memory_root, provider=config.provider_name, provider_reason=config.provider_reason
    )
    report.warning = warn_about_codex_home(config)
    with prefect_singleton_slot():
        # 1. Claim the global lock (the DB lease; --force skips only the cooldown), after waiting
        #    a bounded time for stage-1 extractions in flight under live leases. A DB that cannot
        #    be reached is this step's own outcome, reported like any other.
        try:
            audit_start = stage_step(Outcome.failed_mark_forget_audit, mark_forget_audit, config)
            claim, worker = stage_step(Outcome.failed_claim, claim_lock, config, force, retried_flow_run(), wait_for_stage1)
        except Phase2Failure as failure:
            report.outcome, report.reason = failure.outcome, redact_secrets(failure.reason)
            publish_phase2_report(report)  # `stage_step` logged the failure with its outcome code
            return report
        if claim.outcome is not Phase2ClaimOutcome.claimed:
            report.outcome, report.reason = Outcome(claim.outcome.value), claim.reason
            publish_phase2_report(report)
            return report
        lease = Phase2Lease(claim.ownership_token or "", claim.input_watermark or 0, worker)
        # The pass's context lives while the lease is held; an interruption (Ctrl-C, SIGTERM)
        # gives the lease back on its way out.
        with phase2_context(config, lease, from_scratch=from_scratch) as context, lease_given_back_if_interrupted(context):
            try:
                _consolidate(context, report)
            except Phase2Failure as failure:
                # The reason goes to the run artifact and the logs as well as the DB: redacted here.
                report.outcome, report.reason = failure.outcome, redact_secrets(failure.reason)
                mark_failed(context, failure, report.usage or None)
    report.forget_audit = collect_forget_audit(config, audit_start)
    publish_phase2_report(report)
    get_run_logger().info(
        "phase 2: %s%s; selected %d; files changed %d (%d input(s) synced, %d written by the consolidator); token usage: %s",
        report.outcome.value if report.outcome else "unknown",
        f" ({report.reason})" if report.reason else "",
        report.selected,
        len(report.folder_changes()), len(report.diff_status), len(report.files_changed),
        {key: value for key, value in report.usage.items() if value} or "none",
    )
    return report


def _consolidate(context: Phase2Context, report: Phase2Report) -> None:
    # 2. Nothing that decides the selection changed since the last success (time passing
    #    included) and the folder is still its baseline: finish now, before any workspace work.
    #    Otherwise the full run, whose success keeps what it settled on for the next.
    settled = check_settled(context)
    if settled.selection is not None and not context.from_scratch:
        report.selected, report.storage_bytes = len(settled.selection.refs), settled.storage_bytes
        _finish(context, settled.selection, report, Outcome.succeeded_no_workspace_changes)
        return
    # 3. One proposal at a time: a new consolidation would bury the one waiting for a decision.
    if proposal_waiting(context):
        release_phase2_lease(context)
        report.outcome = Outcome.skipped_review_pending
        report.reason = "a consolidation is waiting for review: `codex-memories review`, then --approve or --reject"
        return
    # 4. Prepare the workspace (the copy this pass writes): layout, symlink hygiene, ad-hoc seed,
    #    git baseline.
    stage_step(Outcome.failed_prepare_workspace, prepare_workspace, context)
    # 4a. A live note the injection gate refuses goes to the quarantine (audited), so the rest
    #     consolidates instead of every run failing on it while it is served.
    stage_step(Outcome.failed_quarantine_refused_notes, quarantine_refused_notes, context)
    # 5. Select the top-N stage-1 outputs.
    selection = stage_step(Outcome.failed_load_stage1_outputs, select, context)
    report.selected = len(selection.refs)
    # 6. Sync raw_memories.md and rollout_summaries/ from the selection.
    synced = stage_step(Outcome.failed_sync_workspace_inputs, sync, context, selection)
    # 7. Prune expired extension resources.
    expired = stage_step(Outcome.failed_prune_extension_resources, prune_extension_resources, context)
    # 8. Expire temporary memory entries past their date (route entry_expiry).
    expired_entries = stage_step(Outcome.failed_expire_typed_entries, expire_typed_entries, context, selection)
    report.forgotten = [(item.route, item.target) for item in [*synced.forgotten, *expired, *expired_entries]]
    # 9. Diff against the baseline.
    diff, unchanged = stage_step(Outcome.failed_workspace_status, git_diff, context)
    report.diff_status = [f"{change.status} {change.path}" for change in diff.changes]
    # 10. No change and valid artifacts: no model call. A copy made only to prepare the folder or
    #     re-record its inputs equals its baseline: it goes live as it is.
    if unchanged:
        if context.workspace.writable and not stage_step(Outcome.failed_confirm_ownership, confirm_ownership, context):
            report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before publishing"
            return
        stage_step(Outcome.failed_workspace_commit, reset_baseline, context)
        outcome = Outcome.succeeded_no_workspace_changes
    else:
        try:
            if not _consolidate_and_publish(context, report, diff, selection):
                return
        except Phase2Failure:
            # Nothing a failed or refused run wrote went live: its copy is discarded, the live
            # folder is the last good one.
            report.folder_restored = not context.workspace.published
            raise
        outcome = Outcome.succeeded
    _succeed(context, report, selection, settled, outcome)


def _consolidate_and_publish(context: Phase2Context, report: Phase2Report, diff: WorkspaceDiff, selection: Any) -> bool:
    """Steps 11 to 22: True when the consolidated copy went live (the run goes on to mark success)."""
    # 11. Write the diff file the consolidator reads first.
    stage_step(Outcome.failed_workspace_diff_file, write_workspace_diff, context, diff)
    # 12. Contradicting memory entries, the newer winning: listed in the run artifact.
    report.conflicts = stage_step(Outcome.failed_find_entry_conflicts, find_entry_conflicts, context)
    # 13. Rate-limit guard (spec 1.3): too little quota left means the agent does not start;
    #     the lease is given back (no failure, no backoff) for the next run.
    guard = check_rate_limits(context.config)
    if not guard.allowed:
        release_phase2_lease(context)
        report.outcome, report.reason, report.rate_limit = Outcome.skipped_rate_limited, guard.reason, guard.reason
        return False
    # 14. Consolidate (the lease is renewed meanwhile; a lost lease stops it).
    consolidation = stage_step(Outcome.failed_spawn_agent, consolidate, context)
    report.record_consolidation(consolidation)
    if consolidation.ownership_lost:
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost while consolidating"
        return False  # another worker owns the job now: leave the DB and the baseline alone
    if not consolidation.completed:
        raise Phase2Failure(Outcome.failed_agent, f"consolidation stopped: {consolidation.stop_reason}")
    # 15. Validate the artifacts (symlinks are removed and fatal).
    problems = stage_step(Outcome.failed_invalid_artifacts, validate_artifacts, context)
    if problems:
        raise Phase2Failure(Outcome.failed_invalid_artifacts, "; ".join(problems))
    # 16. Provenance: a new line whose words came only from tool output in its sessions leaves
    #     the files (audited, route tool_output_provenance); the rest goes on to the gate.
    report.provenance = stage_step(Outcome.failed_provenance_check, check_provenance, context, selection)
    # 17. The injection gate: no line that looks injected goes live. The stage-1 outputs a
    #     refused line came from are quarantined (route pollution), so the next run, without
    #     backoff, consolidates the rest; with no source found the run backs off as any failure.
    findings = stage_step(Outcome.failed_injection_gate, injection_gate, context)
    if findings:
        verdict = stage_step(Outcome.failed_quarantine_injection_sources, quarantine_injection_sources, context, findings, selection)
        report.injection_findings, report.quarantined_threads = verdict.report_lines, verdict.quarantined
        raise verdict.failure()
    # 18. Confirm ownership before anything irreversible.
    if not stage_step(Outcome.failed_confirm_ownership, confirm_ownership, context):
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before the baseline reset"
        return False
    # 19. Ask mode: the gated copy is a proposal; it goes live only once approved.
    if context.config.settings.review == "ask" and not review_proposal(context, report, diff, selection):
        return False
    # 20. A note or an edit that reached the live folder while this run worked on its copy
    #     must not be overwritten: leave the folder to the next pass, which sees it.
    if _left_for_next_pass(context, report):
        return False
    # 21. Audit the ad-hoc notes and user edits this consolidation integrated (route 7).
    stage_step(Outcome.failed_forget_audit, audit_manual_changes, context, diff)
    # 21a. The recall index, built in the copy: it goes live with the folder, so a run cut off
    #      right after publishing still leaves one the prompt hook can use (issue 36.6).
    report.recall_index = refresh_recall_index(context)
    # 22. Reset the baseline in the copy and publish it (push the mirror, or make the staging
    #     copy the live folder in one step).
    if not stage_step(Outcome.failed_workspace_commit, reset_baseline, context):
        _left_for_next_pass(context, report, published=False)
        return False
    return True


def _succeed(context: Phase2Context, report: Phase2Report, selection: Any, settled: SettledCheck, outcome: Outcome) -> None:
    """Steps 23 to 25, once the folder is live."""
    # 23. Mark success: exact-snapshot selection flags and the watermark.
    report.storage_bytes = measure_storage(context)
    _finish(context, selection, report, outcome)
    # 24. The recall index after publishing (derived data: a failure is reported, never a failed
    #     consolidation): step 21a's went live with the copy, and this only checks it; a publish
    #     that copied file by file (new mtimes) makes it stale, and this rebuilds it.
    if report.outcome is Outcome.succeeded:
        report.recall_index = refresh_recall_index(context)
    # 25. Keep what this success settled on, for step 2 of the next run.
    if report.outcome in (Outcome.succeeded, Outcome.succeeded_no_workspace_changes) and not report.work_left:
        record_settled(context, settled, report.storage_bytes or 0)


def _left_for_next_pass(context: Phase2Context, report: Phase2Report, *, published: bool = True) -> bool:
    """When the live folder changed since it was copied, give the lease back (no failure, no
    cooldown) and ask for another pass. True when the folder was left."""
    changed = context.workspace.changed_meanwhile()
    if published and not changed:
        return False
    release_phase2_lease(context)
    report.outcome, report.work_left = Outcome.skipped_live_folder_changed, True
    report.reason = redact_secrets(
        "the memory folder changed while this run consolidated a copy of it"
        + (f" ({', '.join(changed[:5])})" if changed else "")
        + ": nothing was published; the next pass consolidates the change"
    )
    return True


def _finish(context: Phase2Context, selection: Any, report: Phase2Report, outcome: Outcome) -> None:
    mark = mark_succeeded(context, selection, report.usage or None)
    if mark.owned:
        report.outcome, report.work_left = outcome, mark.work_left
    else:
        report.outcome, report.reason = Outcome.failed_confirm_ownership, "lease lost before marking success"
