"""Phase 2 steps: one global consolidation at a time writes the Codex memory folder.

Each function is one step of the `phase2` flow; each failure site raises `Phase2Failure`
carrying its own outcome code (spec 12.1), which the flow stores in `jobs.last_error`.
The DB lease (ownership token) is the authority: it is re-checked before anything
irreversible, and the baseline is never reset without a confirmed lease.

Idempotency: inputs are regenerated from the DB every run, so "no git diff" means nothing new;
such a run finishes as `succeeded_no_workspace_changes` without any model call.

Nothing hostile or half-written goes live: phase 2 writes a copy, never the folder readers
read. A local root is worked on through a `staging.StagedWorkspace` (a staging copy beside the
live folder, made only once a step is about to write; a no-change run copies nothing) and an
object-store root through its local mirror. The consolidated files pass validation and the
injection gate in that copy; only then, with the lease confirmed, does `publish_workspace` make it
the live folder in one step. A run that fails or is refused discards its copy: the live folder is
the one it found, byte for byte.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from codex_memories.consolidate.conflicts import Conflict
from codex_memories.consolidate.consolidators import Consolidator, build_consolidation_prompt
from codex_memories.consolidate.heuristic import find_input_conflicts
from codex_memories.consolidate.injection_gate import check_injection_gate, gated_files, redact_gated_files
from codex_memories.consolidate.injection_sources import describe_traced, trace_findings
from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.evidence.screen import MAX_REPORTED_FINDINGS, InjectionFinding
from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.entry_expiry import expire_entries, synced_inputs_hold_expired_entry
from codex_memories.forget.extension_expiry import expire_extension_resources, expired_extension_resources
from codex_memories.forget.ledger import ForgetLedger
from codex_memories.forget.routes import MomentInputs, next_change_at
from codex_memories.forget.selection_window import next_selection_ageing, selection_window_actions
from codex_memories.forget.threads import pollute_thread
from codex_memories.memory_folder.inputs import (
    SettledRecord,
    SyncResult,
    forget_settled_record,
    forget_synced_inputs,
    output_ref,
    read_settled_record,
    rebuild_raw_memories,
    record_synced_inputs,
    sync_rollout_summaries,
    synced_inputs_unchanged,
    write_settled_record,
)
from codex_memories.memory_folder.staging import live_tree_is_clean
from codex_memories.memory_folder.workspace import (
    BaselineStatus,
    WorkspaceDiff,
    clean_baseline_commit,
    prepare_workspace,
    reset_baseline,
    validate_artifacts,
    workspace_diff,
)
from codex_memories.outcomes import Outcome, failure_reason
from codex_memories.paths import RAW_MEMORIES_FILE
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder
from codex_memories.state import GLOBAL_JOB_KEY, JobKind
from codex_memories.state.records import OutputIdentity, Phase2ClaimOutcome, Phase2ClaimResult, Stage1OutputRef
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalWorkspace, open_memory_root


class Phase2Failure(Exception):
    """A phase-2 step failed; `outcome` is the stable code stored in `jobs.last_error`."""

    def __init__(self, outcome: Outcome, reason: str, *, retry_delay_seconds: int | None = None) -> None:
        super().__init__(f"{outcome.value}: {reason}")
        self.outcome = outcome
        self.reason = reason
        # None: the configured backoff. 0: the next run may retry at once, because this one
        # changed its inputs (a quarantined source), so retrying is not the same run again.
        self.retry_delay_seconds = retry_delay_seconds


@dataclass(frozen=True)
class Phase2Lease:
    ownership_token: str
    input_watermark: int
    worker_id: str


@dataclass
class Selection:
    """The selected stage-1 outputs, without payloads (loaded only if the sync needs them)."""

    # Identities only in the selection of a settled check (step 2, the early finish), which goes straight to the
    # success mark and is never synced from.
    refs: list[Stage1OutputRef] | list[OutputIdentity]
    new_watermark: int


@dataclass
class SyncReport:
    summaries: SyncResult
    raw_memories_changed: bool
    # Forgetting route 2: the summaries that left the selection, already audited.
    forgotten: list[ForgetAction] = field(default_factory=list)
    # True when the files were already exactly what this selection makes (nothing loaded).
    reused: bool = False


STAGE1_WAIT_POLL_SECONDS = 1.0


def claim_global_lock(
    store: MemoryStore,
    *,
    worker_id: str,
    lease_seconds: int,
    cooldown_seconds: int,
    force: bool,
    stage1_wait_seconds: float = 0.0,
    retried_flow_run: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Phase2ClaimResult:
    """`force` skips the cooldown only; a live lease or a retry backoff still wins, unless an
    earlier attempt of `retried_flow_run` (this flow run, retried) left it.

    While stage-1 extractions are in flight under live leases (another run's, typically), the
    claim is retried for up to `stage1_wait_seconds`: a consolidation that started now would not
    see their outputs. After that the skip stands (`skipped_stage1_in_flight`) and the job stays
    dirty for the next run; no cooldown starts."""
    deadline = clock() + stage1_wait_seconds
    while True:
        result = store.try_claim_global_phase2_job(
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            cooldown_seconds=cooldown_seconds,
            ignore_cooldown=force,
            defer_to_stage1_in_flight=True,
            retried_flow_run=retried_flow_run,
        )
        if result.outcome is not Phase2ClaimOutcome.skipped_stage1_in_flight or clock() >= deadline:
            return result
        sleep(min(STAGE1_WAIT_POLL_SECONDS, max(0.0, deadline - clock())))


@dataclass(frozen=True)
class SettledCheck:
    """Phase 2 step 2, the early finish: can this run finish now, before any workspace work?

    `selection` is set when it can: nothing that decides the selection changed since the last
    success (the inputs' fingerprint is the one kept then, and no output or extension resource
    has aged out since), and the folder is exactly the baseline that success left. Otherwise
    `reason` says why the full run is needed, and `fingerprint` (the inputs as this run found them
    at its start) is what a success of the full run keeps for the next one."""

    fingerprint: str | None  # None: not checked (an object-store root)
    next_ageing_at: int | None  # when the oldest selectable output leaves the max_unused_days window
    selection: Selection | None = None
    storage_bytes: int = 0
    reason: str = ""

    @property
    def settled(self) -> bool:
        return self.selection is not None


def settled_fingerprint(inputs_fingerprint: str, *, max_outputs: int, max_unused_days: int) -> str:
    """The DB side and the two settings the selection depends on, in one digest."""
    text = f"{max_outputs}|{max_unused_days}|{inputs_fingerprint}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_settled(
    root_dir: Path | None,
    store: MemoryStore,
    *,
    lease: Phase2Lease,
    max_outputs: int,
    max_unused_days: int,
    now: int,
) -> SettledCheck:
    """One aggregate query, one small JSON file and one `git status`; see `SettledCheck`. The
    `git status` runs while the query and the file are read: it answers last and the two other
    answers decide first whether it is needed."""
    if root_dir is None:
        return SettledCheck(fingerprint=None, next_ageing_at=None, reason="object-store root")
    status = BaselineStatus.start(root_dir)
    try:
        state = store.get_phase2_inputs_state(max_unused_days=max_unused_days)
        record = read_settled_record(root_dir)
    except BaseException:
        status.cancel()
        raise
    fingerprint = settled_fingerprint(state.fingerprint, max_outputs=max_outputs, max_unused_days=max_unused_days)
    ageing = next_selection_ageing(state.oldest_ranking_time, max_unused_days=max_unused_days)

    def full_run(reason: str) -> SettledCheck:
        status.cancel()
        return SettledCheck(fingerprint=fingerprint, next_ageing_at=ageing, reason=reason)

    if record is None:
        return full_run("no record of a settled folder")
    if record.fingerprint != fingerprint:
        return full_run("the stage-1 outputs, their usage, their threads or the selection settings changed")
    if record.next_change_at is not None and now >= record.next_change_at:
        return full_run("a memory or an extension resource has aged out since the last success")
    if status.commit() != record.baseline_commit:
        return full_run("the memory folder differs from its baseline")
    newest = max((version for _, version in record.selected), default=0)
    return SettledCheck(
        fingerprint=fingerprint,
        next_ageing_at=ageing,
        selection=Selection(refs=record.selected, new_watermark=max(lease.input_watermark, newest)),
        storage_bytes=record.storage_bytes,
    )


def record_settled(root_dir: Path, store: MemoryStore, check: SettledCheck, *, storage_bytes: int) -> bool:
    """After a successful run: keep what it settled on for `check_settled`. False (and no
    record) when there is nothing trustworthy to keep: no fingerprint, or a folder that is not
    its baseline (the next run then does the full work)."""
    if check.fingerprint is None:
        return False
    commit = clean_baseline_commit(root_dir)
    if commit is None:
        forget_settled_record(root_dir)
        return False
    write_settled_record(
        root_dir,
        SettledRecord(
            fingerprint=check.fingerprint,
            baseline_commit=commit,
            next_change_at=next_change_at(MomentInputs(root_dir=root_dir, selection_ageing_at=check.next_ageing_at)),
            selected=store.get_phase2_selected_snapshots(),
            storage_bytes=storage_bytes,
        ),
    )
    return True


def pull_and_prepare_workspace(workspace: LocalWorkspace, *, from_scratch: bool = False) -> list[str]:
    """Mirror an object-store root locally, or stage a local root that needs preparing (a ready
    one stays unstaged and untouched), then `workspace.prepare_workspace` on the copy. Returns the
    symlinks removed (left out of the copy). A rebuild (`from_scratch`) needs a local root."""
    if from_scratch and workspace.is_mirror:
        raise Phase2Failure(Outcome.failed_prepare_workspace, "a rebuild needs a local memory root (not an object-store URL)")
    workspace.pull()
    if not workspace.writable:
        return []
    return [*workspace.skipped_links, *prepare_workspace(workspace.path).removed_symlinks]


def select_inputs(
    store: MemoryStore, *, lease: Phase2Lease, max_outputs: int, max_unused_days: int
) -> Selection:
    refs = store.get_phase2_input_refs(n=max_outputs, max_unused_days=max_unused_days)
    newest = max((ref.source_updated_at for ref in refs), default=0)
    return Selection(refs=refs, new_watermark=max(lease.input_watermark, newest))


def sync_inputs(workspace: LocalWorkspace, selection: Selection, store: MemoryStore) -> SyncReport:
    """Write raw_memories.md and rollout_summaries/ from the selection (spec 8.2, 8.3).

    Summaries that fall out of the selection are deleted here and audited as forgetting route 2
    (or the file side of routes 1, 3, 4 and 5, whose DB rows are already gone or disabled).
    When the files are exactly what this selection made last time
    (`inputs.synced_inputs_unchanged`), nothing is staged, loaded or written: the common
    no-change run stays cheap and copies nothing."""
    if synced_inputs_unchanged(workspace.path, selection.refs):
        return SyncReport(summaries=SyncResult(written=[], deleted=[], unchanged=[]), raw_memories_changed=False, reused=True)
    workspace.stage()
    root_dir = workspace.path
    forget_synced_inputs(root_dir)  # a sync cut short must not look finished to the next run
    # Whatever the state DB holds, a thread, project or text the folder's forget ledger names is
    # not written into the folder (a fresh or restored state DB may still hold it).
    outputs = store.load_stage1_outputs(selection.refs)
    kept = ForgetLedger.load(open_memory_root(root_dir)).honoured(outputs)
    summaries = sync_rollout_summaries(root_dir, kept)
    raw_changed = rebuild_raw_memories(root_dir, kept)
    record_synced_inputs(root_dir, [output_ref(output) for output in outputs])
    forgotten = record_actions(store, selection_window_actions(summaries.deleted))
    return SyncReport(summaries=summaries, raw_memories_changed=raw_changed, forgotten=forgotten)


def prune_extension_resources(workspace: LocalWorkspace, store: MemoryStore, *, now: datetime) -> list[ForgetAction]:
    """Forgetting route 6: delete extension resources older than the 7-day TTL, audited; the
    workspace is staged first only when anything expired (the live folder is only read until then)."""
    if not workspace.writable and not expired_extension_resources(workspace.path, now):
        return []
    workspace.stage()
    return record_actions(store, expire_extension_resources(workspace.path, now))


def expire_typed_entries(workspace: LocalWorkspace, selection: Selection, store: MemoryStore, *, now: datetime) -> list[ForgetAction]:
    """Forgetting route `entry_expiry`: temporary entries past their date leave the selected rows
    and the synced inputs, audited; the workspace is staged first only when an entry expired.
    The marker of the synced inputs is refreshed so the next unchanged selection still skips the
    sync."""
    if not workspace.writable and not synced_inputs_hold_expired_entry(workspace.path, now):
        return []
    workspace.stage()
    forgotten = record_actions(store, expire_entries(workspace.path, store, selection.refs, now))
    if forgotten:
        record_synced_inputs(workspace.path, list(selection.refs))
    return forgotten


def find_entry_conflicts(root_dir: Path) -> list[Conflict]:
    """Contradicting entries in the synced `raw_memories.md`, newest winning (the run artifact
    lists them; the heuristic consolidator drops the losers, the model consolidators are told to)."""
    try:
        text = SandboxedFolder(root_dir).read_bytes(RAW_MEMORIES_FILE).decode("utf-8")
    except FileNotFoundError:
        return []
    return find_input_conflicts(text)


def diff_and_settle(workspace: LocalWorkspace) -> tuple[WorkspaceDiff, bool]:
    """The diff against the baseline and whether the workspace is settled (no change, valid).

    An unstaged live folder is checked read-only; when it is not settled it is staged here and
    diffed in the copy, so every later step writes the copy."""
    if not workspace.writable:
        if live_tree_is_clean(workspace.path) and not validate_artifacts(workspace.path):
            return WorkspaceDiff(changes=[], unified_diff=""), True
        workspace.stage()
    diff = workspace_diff(workspace.path)
    # Settled: no change since the baseline, and artifacts that Codex's read path accepts.
    return diff, not diff.changes and not validate_artifacts(workspace.path)


def gate_consolidated_files(root_dir: Path) -> list[InjectionFinding]:
    """The consolidated files redacted (`redact_gated_files`: whatever the consolidator quoted or
    wrote), then the injection gate over memory_summary.md, MEMORY.md and skills/ (empty: they
    may go live)."""
    redact_gated_files(root_dir)
    return check_injection_gate(root_dir)


@dataclass
class GateVerdict:
    """What a refused consolidation tells the run: the artifact lines, the DB reason, the
    threads quarantined (forgetting route 5, `pollution`) and whether to back off."""

    findings: int
    report_lines: list[str]
    quarantined: list[str]
    reason: str

    def failure(self) -> Phase2Failure:
        # Sources quarantined: the next run consolidates without them, so no backoff. None found
        # (the consolidator wrote it): the same inputs would fail the same way, back off.
        return Phase2Failure(
            Outcome.failed_injection_gate, self.reason, retry_delay_seconds=0 if self.quarantined else None
        )


QUARANTINE_REASON = "injection gate: {count} refused line(s) traced to this session's memory ({rules})"


def quarantine_injection_sources(
    root_dir: Path, findings: list[InjectionFinding], selection: Selection, store: MemoryStore
) -> GateVerdict:
    """Trace each refused line to the selected stage-1 outputs it came from and quarantine those
    threads (memory mode `polluted`, audited): they leave every later selection, their stage-1
    row stays for inspection. Nothing is quarantined when no source matches."""
    outputs = store.load_stage1_outputs(selection.refs) if selection.refs else []
    traced = trace_findings(findings, gated_files(root_dir), outputs)
    by_thread: dict[str, list[InjectionFinding]] = {}
    for item in traced:
        for thread_id in item.thread_ids:
            by_thread.setdefault(thread_id, []).append(item.finding)
    actions: list[ForgetAction] = []
    for thread_id, refused in sorted(by_thread.items()):
        rules = ", ".join(sorted({finding.rule for finding in refused}))
        # An automatic route: it writes nothing into the user's repositories (forget.team_files).
        actions += pollute_thread(store, thread_id, reason=QUARANTINE_REASON.format(count=len(refused), rules=rules), team_files=False)
    record_actions(store, actions)
    quarantined = sorted(by_thread)
    places = ", ".join(sorted({f"{finding.path} [{finding.rule}]" for finding in findings}))
    reason = f"{len(findings)} line(s) look injected: {places}"
    if quarantined:
        untraced = sum(1 for item in traced if not item.thread_ids)
        reason += (
            f"; quarantined the stage-1 memory of thread(s) {', '.join(quarantined)} (route pollution);"
            f" {untraced} line(s) without a source; the next run consolidates the rest"
        )
    else:
        reason += "; no stage-1 source found (the consolidator wrote it)"
    return GateVerdict(len(findings), describe_traced(traced, MAX_REPORTED_FINDINGS), quarantined, reason)


class LeaseHeartbeat:
    """Renews the phase-2 lease in the background while the agent runs.

    `still_owner()` turns false the moment a renewal fails or is refused; the agent checks it
    before every step and stops, so a worker that lost its lease never writes on."""

    def __init__(self, store: MemoryStore, *, ownership_token: str, lease_seconds: int, period_seconds: float) -> None:
        self._store = store
        self._token = ownership_token
        self._lease_seconds = lease_seconds
        self._period = period_seconds
        self._lost = threading.Event()
        self._stop = threading.Event()
        self.renewals = 0
        self.error: str | None = None

    def still_owner(self) -> bool:
        return not self._lost.is_set()

    def beat(self) -> bool:
        try:
            owned = self._store.heartbeat_global_phase2_job(
                ownership_token=self._token, lease_seconds=self._lease_seconds
            )
        except Exception as error:  # noqa: BLE001 - a DB outage means we cannot prove ownership
            self.error = f"{type(error).__name__}: {error}"
            owned = False
        if owned:
            self.renewals += 1
        else:
            self._lost.set()
        return owned

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            if not self.beat():
                return

    @contextmanager
    def running(self) -> Iterator[LeaseHeartbeat]:
        thread = threading.Thread(target=self._loop, name="phase2-heartbeat", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=10)


def publish_workspace(workspace: LocalWorkspace) -> bool:
    """Reset the single-commit baseline in the copy, then publish it (push the mirror, or make the
    staging copy the live folder). False when a local live folder changed since it was copied:
    nothing was published and the copy is left to be discarded."""
    if not workspace.writable:
        return True  # nothing was staged: the live folder already is this state
    reset_baseline(workspace.path)
    workspace.push()
    publish = getattr(workspace, "publish_result", None)
    return publish is None or publish.published


@dataclass(frozen=True)
class SuccessMark:
    owned: bool  # False: the lease was lost, nothing was recorded
    # Stage-1 work arrived while this run consolidated: the job stays dirty, no cooldown starts.
    work_left: bool = False


def mark_succeeded(
    store: MemoryStore,
    *,
    lease: Phase2Lease,
    selection: Selection,
    usage: dict[str, int] | None,
) -> SuccessMark:
    owned = store.mark_global_phase2_job_succeeded(
        ownership_token=lease.ownership_token,
        completed_watermark=selection.new_watermark,
        selected=selection.refs,
        usage=usage,
        claimed_input_watermark=lease.input_watermark,
    )
    if not owned:
        return SuccessMark(owned=False)
    job = store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    # Only the dirty finish leaves `pending` without a `finished_at` (a later enqueue keeps it).
    return SuccessMark(owned=True, work_left=job is not None and job.status == "pending" and job.finished_at is None)


def mark_failed(
    store: MemoryStore,
    *,
    lease: Phase2Lease,
    failure: Phase2Failure,
    default_retry_delay_seconds: int,
    usage: dict[str, int] | None = None,
) -> bool:
    """Record the failure with its backoff (the configured one unless the failure names its own);
    falls back to the unowned variant when the token was cleared."""
    text = redact_secrets(failure_reason(failure.outcome, failure.reason))
    retry_delay_seconds = default_retry_delay_seconds if failure.retry_delay_seconds is None else failure.retry_delay_seconds
    if store.mark_global_phase2_job_failed(
        ownership_token=lease.ownership_token, reason=text, retry_delay_seconds=retry_delay_seconds, usage=usage
    ):
        return True
    return store.mark_global_phase2_job_failed_if_unowned(
        ownership_token=lease.ownership_token, reason=text, retry_delay_seconds=retry_delay_seconds, usage=usage
    )


def run_consolidation(root_dir: Path, consolidator: Consolidator, *, heartbeat: LeaseHeartbeat) -> ConsolidationOutcome:
    """Run the consolidator inside the memory root while the heartbeat keeps the lease; its
    outcome says which consolidator it was and whether the lease was lost meanwhile."""
    prompt = build_consolidation_prompt(root_dir)
    with heartbeat.running():
        result = consolidator.consolidate(root_dir, prompt=prompt, should_continue=heartbeat.still_owner)
    return replace(result, consolidator=consolidator.name, ownership_lost=not heartbeat.still_owner())
