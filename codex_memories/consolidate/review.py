"""Review before apply (`review = ask`): a consolidation becomes a proposal that goes live only once approved.

Contract:
- A proposal is a complete staging copy (validated and gated like any consolidation, its baseline
  not yet reset) kept beside the live folder as `<parent>/.<name>.proposal`: outside the live
  tree, so the read path never sees it. Its metadata (`.codex-memories/proposal.json` inside it)
  holds what the DB needs to mark the consolidation succeeded later: the selection snapshot
  (thread id, `source_updated_at`), the new watermark, the input watermark of the run's claim,
  the token usage, the ownership token the run held, the live baseline commit it was made from,
  the live folder's file snapshot, the workspace changes (for the forget audit) and the paused
  flow run's id when a run waits for the decision in Prefect. One proposal at a time: a run that
  finds one waiting does not consolidate again (`skipped_review_pending`).
- `save_proposal` writes the metadata into the copy, then renames the copy into place (one
  rename: a proposal is there whole or not at all).
- `proposal_diff` is the unified diff of the proposal against the live baseline, redacted and
  capped: what approving would change.
- `approve_proposal` (the decision made without a paused run) claims the global phase-2 lease,
  refuses (`ReviewRefused`, the lease given back, nothing changed) when the live baseline is not
  the one the proposal was made from or the live folder changed since, else audits the integrated
  notes and edits, resets the proposal's baseline, publishes it atomically
  (`staging.publish`) and marks the selection consolidated exactly as a successful phase 2 does.
  `reject_proposal` deletes the proposal and touches nothing else: the live folder, its baseline
  and the DB stay as they were, so the next phase 2 consolidates the same inputs again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from codex_memories.consolidate.steps import Phase2Lease, Selection, SuccessMark, mark_succeeded
from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.manual import manual_change_actions
from codex_memories.memory_folder.staging import (
    StagedWorkspace,
    TreeSnapshot,
    changed_since,
    discard,
    proposal_path,
    publish,
    resolve_live_folder,
)
from codex_memories.memory_folder.workspace import (
    Change,
    baseline_commit,
    remove_workspace_diff_file,
    reset_baseline,
    workspace_diff,
)
from codex_memories.paths import WORKSPACE_STATE_DIR
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder
from codex_memories.state.records import Phase2ClaimOutcome, Stage1OutputRef
from codex_memories.state.store import MemoryStore

PROPOSAL_METADATA = f"{WORKSPACE_STATE_DIR}/proposal.json"
PROPOSAL_VERSION = 1
REVIEW_DIFF_MAX_BYTES = 1_000_000
REVIEW_WORKER_ID = "codex-memories review"


class ReviewRefused(RuntimeError):
    """The decision cannot be carried out as asked (no proposal, a stale one, phase 2 busy)."""


@dataclass
class Proposal:
    """The metadata of a proposal waiting for review (see the module docstring)."""

    created_at: str
    ownership_token: str
    input_watermark: int
    new_watermark: int
    selection: list[dict[str, int | str]]
    usage: dict[str, int]
    base_commit: str | None
    snapshot: dict[str, list[int]]
    changes: list[list[str]]
    flow_run_id: str | None = None
    version: int = PROPOSAL_VERSION
    path: Path | None = field(default=None, compare=False)

    @property
    def selection_refs(self) -> list[Stage1OutputRef]:
        return [Stage1OutputRef.model_validate(ref) for ref in self.selection]

    def tree_snapshot(self) -> TreeSnapshot:
        return TreeSnapshot(files={path: (size, mtime, inode) for path, (size, mtime, inode) in self.snapshot.items()})

    def to_json(self) -> bytes:
        data = asdict(self)
        data.pop("path")
        return json.dumps(data, sort_keys=True, indent=1).encode("utf-8")


def save_proposal(
    workspace: StagedWorkspace,
    *,
    lease: Phase2Lease,
    selection: Selection,
    usage: dict[str, int] | None,
    changes: list[Change],
    flow_run_id: str | None,
    now: datetime | None = None,
) -> Proposal:
    """Keep the workspace's staging copy as the proposal (replacing any older one)."""
    proposal = Proposal(
        created_at=(now or datetime.now(UTC)).isoformat(timespec="seconds"),
        ownership_token=lease.ownership_token,
        input_watermark=lease.input_watermark,
        new_watermark=selection.new_watermark,
        selection=[ref.model_dump() for ref in selection.refs],
        usage=dict(usage or {}),
        base_commit=workspace.base_commit,
        snapshot={path: list(stats) for path, stats in workspace.snapshot.files.items()},
        changes=[[change.status, change.path] for change in changes],
        flow_run_id=flow_run_id,
    )
    remove_workspace_diff_file(workspace.path)  # the consolidator's input, not part of the proposal
    SandboxedFolder(workspace.path).write_bytes(PROPOSAL_METADATA, proposal.to_json())
    target = proposal_path(workspace.live)
    discard(target)
    workspace.move_to(target)
    workspace.kept = True
    proposal.path = target
    return proposal


def load_proposal(root_dir: Path) -> Proposal | None:
    """The proposal waiting beside the memory root, or None."""
    path = proposal_path(root_dir)
    if not path.is_dir():
        return None
    try:
        data = json.loads(SandboxedFolder(path).read_bytes(PROPOSAL_METADATA).decode("utf-8"))
    except FileNotFoundError:
        return None
    if data.get("version") != PROPOSAL_VERSION:
        raise ReviewRefused(f"the proposal at {path} has an unknown format (version {data.get('version')!r})")
    return Proposal(**data, path=path)


def proposal_diff(proposal: Proposal, max_bytes: int = REVIEW_DIFF_MAX_BYTES) -> str:
    """What approving would change, as a unified diff against the live baseline; redacted, capped."""
    if proposal.path is None:
        raise ValueError("the proposal has no directory")
    diff = workspace_diff(proposal.path)
    status = "".join(f"{change.status} {change.path}\n" for change in diff.changes) or "no change\n"
    text = redact_secrets(status + "\n" + diff.unified_diff)
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", "ignore") + f"\n[diff truncated at {max_bytes} bytes]\n"


def forget_proposal_metadata(proposal_dir: Path) -> None:
    SandboxedFolder(proposal_dir).delete(PROPOSAL_METADATA, missing_ok=True)


def reject_proposal(root_dir: Path) -> Proposal:
    """Delete the waiting proposal; nothing else changes."""
    proposal = load_proposal(root_dir)
    if proposal is None or proposal.path is None:
        raise ReviewRefused("no proposal is waiting for review")
    discard(proposal.path)
    return proposal


def check_applies(proposal: Proposal, live: Path) -> None:
    """`ReviewRefused` unless the live folder is still the one the proposal was made from."""
    current = baseline_commit(live) if live.is_dir() else None
    if current != proposal.base_commit:
        raise ReviewRefused(
            f"the memory folder's baseline is {current or 'missing'}, not {proposal.base_commit or 'missing'} "
            "the proposal was made from: reject it and run phase 2 again"
        )
    changed = changed_since(live, proposal.tree_snapshot())
    if changed:
        raise ReviewRefused(
            f"the memory folder changed since the proposal was made ({', '.join(changed[:5])}): "
            "reject it and run phase 2 again"
        )


@dataclass(frozen=True)
class Approval:
    proposal: Proposal
    mark: SuccessMark
    audited: list[ForgetAction]


def approve_proposal(store: MemoryStore, root_dir: Path, *, lease_seconds: int) -> Approval:
    """Apply the waiting proposal as a successful phase 2 (see the module docstring)."""
    live = resolve_live_folder(root_dir)
    proposal = load_proposal(live)
    if proposal is None or proposal.path is None:
        raise ReviewRefused("no proposal is waiting for review")
    check_applies(proposal, live)
    claim = store.try_claim_global_phase2_job(worker_id=REVIEW_WORKER_ID, lease_seconds=lease_seconds, ignore_cooldown=True)
    if claim.outcome is not Phase2ClaimOutcome.claimed or not claim.ownership_token:
        waiting = f" (flow run {proposal.flow_run_id} may be paused for this review: decide in its Prefect form)" if proposal.flow_run_id else ""
        raise ReviewRefused(f"phase 2 is busy ({claim.outcome.value}){waiting}; try again when it has finished")
    token = claim.ownership_token
    try:
        check_applies(proposal, live)  # again, now that no phase 2 can start
        audited = record_actions(
            store, manual_change_actions(proposal.path, [Change(status, path) for status, path in proposal.changes])
        )
        forget_proposal_metadata(proposal.path)
        reset_baseline(proposal.path)
        result = publish(proposal.path, live, proposal.tree_snapshot())
        if not result.published:
            # Its baseline is reset already: it can no longer be applied on top of the live one.
            discard(proposal.path)
            raise ReviewRefused(
                f"the memory folder changed while applying ({', '.join(result.changed_meanwhile[:5])}): "
                "the proposal was discarded; run phase 2 again"
            )
    except BaseException:
        store.release_global_phase2_job(ownership_token=token)
        raise
    # The lease of this approval, with the input watermark of the run that made the proposal: work
    # that arrived since leaves the job dirty, as in a normal phase 2.
    mark = mark_succeeded(
        store,
        lease=Phase2Lease(token, proposal.input_watermark, REVIEW_WORKER_ID),
        selection=Selection(refs=proposal.selection_refs, new_watermark=proposal.new_watermark),
        usage=proposal.usage or None,
    )
    return Approval(proposal=proposal, mark=mark, audited=audited)
