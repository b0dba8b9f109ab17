"""Phase 2's report: the consolidation, the forgetting routes it ran, the gates, the conflicts it
resolved, as the run's artifact and the CLI's text; and the review artifact and form a reviewer
decides on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codex_memories.consolidate.conflicts import Conflict
from codex_memories.consolidate.provenance_check import ProvenanceFindings
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.reports.forget import render_forget_audit
from codex_memories.reports.markdown import cell
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute

if TYPE_CHECKING:
    from codex_memories.consolidate.outcome import ConsolidationOutcome


@dataclass
class Phase2Report:
    outcome: Outcome | None = None
    reason: str | None = None
    consolidator: str | None = None
    provider: str | None = None
    provider_reason: str | None = None
    # Codex's own memory pipeline would rewrite the folder we write (codex_home.codex_rewrite_warning).
    warning: str | None = None
    rate_limit: str | None = None
    selected: int = 0
    diff_status: list[str] = field(default_factory=list)
    forgotten: list[tuple[ForgetRoute, str]] = field(default_factory=list)  # (route, path)
    agent_steps: int = 0
    agent_tool_calls: int = 0
    agent_stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    files_changed: list[str] = field(default_factory=list)
    storage_bytes: int | None = None
    # What the last step did to the recall index ("N chunks", skipped or not rebuilt, and why).
    recall_index: str | None = None
    memory_root: str | None = None
    forget_audit: list[ForgetAuditRecord] = field(default_factory=list)
    # The provenance check: new lines checked, removed as copied from tool output (each one a
    # forget-audit row, route tool_output_provenance), unverified (None: it did not run).
    provenance: ProvenanceFindings | None = None
    # The injection gate's findings (redacted, capped excerpts) when it refused the folder.
    injection_findings: list[str] = field(default_factory=list)
    # Threads whose stage-1 memory the refused lines were traced to, quarantined (route pollution).
    quarantined_threads: list[str] = field(default_factory=list)
    # A failed run left the live folder as it found it: its copy was discarded (None: it failed
    # before consolidating).
    folder_restored: bool | None = None
    # Stage-1 outputs arrived while this run consolidated: the job stays dirty, no cooldown.
    work_left: bool = False
    # Contradicting memory entries in the inputs, each with the newer one that won (issue 15).
    conflicts: list[Conflict] = field(default_factory=list)

    def folder_changes(self) -> list[str]:
        """Every file this run changed in the folder (or its proposal): the inputs it synced and
        the files the consolidator wrote or deleted."""
        synced = {status.split(" ", 1)[-1] for status in self.diff_status}
        return sorted(synced | set(self.files_changed))

    def record_consolidation(self, outcome: ConsolidationOutcome) -> None:
        """What the report keeps of the consolidation (`consolidate.consolidators.ConsolidationOutcome`).
        Flat fields, not the record: the report crosses the hand-off wire and the CLI reads it
        without loading the consolidators."""
        self.consolidator, self.agent_stop_reason = outcome.consolidator, outcome.stop_reason
        self.agent_steps, self.agent_tool_calls = outcome.steps, outcome.tool_calls
        self.usage, self.files_changed = outcome.usage.model_dump(), list(outcome.files_changed)


def render_phase2_markdown(report: Phase2Report) -> str:
    outcome = report.outcome.value if report.outcome else "unknown"
    lines = ["# codex-memories phase 2", "", f"Outcome: `{outcome}`"]
    if report.warning:
        lines.append(f"**{report.warning}**")
    if report.reason:
        lines.append(f"Reason: {report.reason}")
    if report.provider:
        lines.append(f"Provider: `{report.provider}` ({report.provider_reason or 'no reason recorded'})")
    if report.rate_limit:
        lines.append(f"Rate-limit guard: {report.rate_limit}")
    if report.consolidator:
        lines.append(f"Consolidator: `{report.consolidator}`")
        if report.consolidator == "heuristic":
            lines.append("The memory folder was written by the offline heuristic consolidator (rule-based, no model).")
    lines += ["", f"Selected stage-1 outputs: {report.selected}"]
    if report.memory_root:
        lines.append(f"Memory root: `{report.memory_root}`")
    if report.storage_bytes is not None:
        lines.append(f"Memory storage: {report.storage_bytes} bytes")
    if report.recall_index is not None:
        lines.append(f"Recall index: {report.recall_index}")
    lines += ["", "## Workspace diff", ""]
    lines += [f"- {status}" for status in report.diff_status] or ["- none"]
    if report.forgotten:
        lines += ["", "## Forgotten", "", "| route | file |", "|---|---|"]
        lines += [f"| {route} | `{path}` |" for route, path in report.forgotten]
    lines += render_conflicts(report.conflicts)
    if report.agent_stop_reason:
        lines += [
            "",
            "## Consolidation",
            "",
            f"- stop reason: {report.agent_stop_reason}",
            f"- steps: {report.agent_steps}",
            f"- tool calls: {report.agent_tool_calls}",
        ]
        lines += [f"- {key}: {value}" for key, value in sorted(report.usage.items()) if value]
    if report.files_changed:
        lines += ["", "## Files changed by consolidation", ""]
        lines += [f"- `{path}`" for path in report.files_changed]
    if report.provenance:
        lines += ["", f"Provenance check: {report.provenance.summary()} (removed lines: forget audit, route `tool_output_provenance`)"]
    if report.injection_findings:
        lines += ["", "## Injection gate: refused lines (redacted)", ""]
        lines += [f"- {cell(finding)}" for finding in report.injection_findings]
    if report.quarantined_threads:
        lines += ["", "Quarantined (their stage-1 memory leaves the selection; the next run consolidates the rest):", ""]
        lines += [f"- `{thread_id}`" for thread_id in report.quarantined_threads]
    if report.folder_restored:
        lines += ["", "The memory folder is the one this run found: nothing it wrote went live."]
    if report.work_left:
        lines += ["", "Stage-1 outputs arrived while this run consolidated: the job stays dirty and no cooldown started."]
    lines += render_forget_audit(report.forget_audit)
    return "\n".join(lines) + "\n"


def render_conflicts(conflicts: Sequence[Conflict]) -> list[str]:
    """Contradicting entries, the newer kept and the older dropped (none: no section)."""
    if not conflicts:
        return []
    lines = ["", "## Conflicts (the newer entry wins)", "", "| subject | kept (newer) | dropped (older) |", "|---|---|---|"]
    for conflict in conflicts:
        kept, dropped = (
            cell(redact_secrets(f"{entry.text} (thread {entry.source}, {entry.updated_at or 'no date'}, cwd {entry.group})"))
            for entry in (conflict.winner, conflict.loser)
        )
        lines.append(f"| {cell(redact_secrets(conflict.subject))} | {kept} | {dropped} |")
    return lines


def render_phase2_text(report: Phase2Report) -> str:
    outcome = report.outcome.value if report.outcome else "unknown"
    text = f"phase 2: {outcome}"
    if report.warning:
        text = f"{report.warning}\n{text}"
    if report.reason:
        text += f" ({report.reason})"
    if report.diff_status:
        text += f"; {len(report.diff_status)} input change(s)"
    if report.agent_stop_reason:
        text += f"; {report.consolidator} consolidator {report.agent_stop_reason} in {report.agent_steps} step(s)"
    if report.provenance and (report.provenance.derived or report.provenance.unverified):
        text += f"\n  provenance: {report.provenance.summary()}"
    for finding in report.injection_findings:
        text += f"\n  refused: {finding}"
    if report.quarantined_threads:
        text += f"\n  quarantined thread(s): {', '.join(report.quarantined_threads)}"
    if report.folder_restored:
        text += "\n  memory folder left as this run found it"
    if report.work_left:
        text += "\n  stage-1 outputs arrived meanwhile: left dirty, no cooldown"
    for conflict in report.conflicts:
        text += redact_secrets(f"\n  conflict on {conflict.subject}: kept {conflict.winner.text!r}, dropped {conflict.loser.text!r}")
    return text


# ---- review = ask: the proposal as the reviewer sees it ---------------------------------------

# The decision form's description is stored with the flow run's input; the full diff (up to the
# proposal's own cap) is the review artifact.
REVIEW_FORM_DIFF_CHARS = 60_000


def render_review_artifact(diff: str, *, proposal_path: str, outputs: int, pausable: bool) -> str:
    """The review artifact: the redacted diff, and where the decision is made: this run's form
    when it waits for one, else `codex-memories review` (a run without a deployment cannot
    pause: nobody could resume it)."""
    if pausable:
        decide = (
            "This flow run is paused for the decision: approve or reject it in its form (the Resume "
            "button on the run's page), or with `codex-memories review --approve` / `--reject`."
        )
    else:
        decide = (
            "This flow run cannot pause for a decision (it is not a deployment's run, so nothing could "
            "resume it): decide with `codex-memories review --approve` or `--reject`."
        )
    return (
        "# codex-memories: consolidation waiting for review\n\n"
        f"Proposal `{proposal_path}` ({outputs} stage-1 outputs). {decide}\n\n{_fenced_diff(diff)}"
    )


def render_review_form(diff: str, *, outputs: int) -> str:
    """The decision form's description (markdown above the decision): what approving applies,
    the diff itself, shortened when long."""
    shown = diff if len(diff) <= REVIEW_FORM_DIFF_CHARS else diff[:REVIEW_FORM_DIFF_CHARS] + "\n[shortened here: the full diff is the run's review artifact]\n"
    return (
        f"Choose a decision: approve to apply this consolidation of {outputs} stage-1 outputs to the memory folder, "
        f"or reject to discard it (its inputs stay for the next run). The diff against the live folder (redacted):\n\n{_fenced_diff(shown)}"
    )


def _fenced_diff(diff: str) -> str:
    fence = "~~~~" if "```" in diff else "```"
    return f"{fence}diff\n{diff}\n{fence}\n"
