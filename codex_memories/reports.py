"""Run reports: what each flow run publishes as a Prefect markdown artifact and prints, and the
verdict its final state carries.

Pure rendering: counts per outcome code, each failure with its reason, discovery and quality
facts, token usage. The same outcome strings as the DB and the logs. The verdicts
(`phase1_verdict`, `phase2_verdict`, `backfill_verdict`) decide, from a report alone, whether the
run did its job: the flows turn them into Prefect states (`docs/prefect.md` has the table).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from codex_memories.consolidate.conflicts import Conflict
from codex_memories.consolidate.provenance_check import ProvenanceFindings
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute

if TYPE_CHECKING:
    from codex_memories.consolidate.outcome import ConsolidationOutcome


@dataclass
class ExtractionLine:
    thread_id: str
    outcome: Outcome
    reason: str | None = None
    transcript_tokens: int = 0
    truncated_tokens: int = 0
    # Lines of the model's answer withheld because their words came from tool output.
    withheld_lines: list[str] = field(default_factory=list)


def describe_extraction(result: Any, *, token_budget: int) -> str:
    """One line for an extraction's task run: the outcome (with its reason), what was sent, and
    whose model answered (`result` is an `extract.extraction.ExtractionResult`)."""
    reason = f": {redact_secrets(result.reason)}" if result.reason else ""
    sent = f"{result.transcript_tokens} transcript tokens sent (budget {token_budget})"
    if result.truncated_tokens:
        sent += f", about {result.truncated_tokens} left out of the middle"
    if result.provider == "heuristic":
        source = "offline heuristic extractor, no model"
    else:
        source = f"{result.provider} model {result.model}"
        if result.reused_arrived_result:
            source += ", its answer reused from an earlier run"
    return f"{result.outcome.value}{reason}; {sent}; {source}"


@dataclass
class Phase1Report:
    gate: Outcome | None = None
    provider: str | None = None
    model: str | None = None
    provider_reason: str | None = None
    # Codex's own memory pipeline would rewrite the folder we write (codex_home.codex_rewrite_warning).
    warning: str | None = None
    # The rate-limit guard's figure when it stopped claims (spec 1.3), e.g. "primary 90.0% used ...".
    rate_limit: str | None = None
    discovery: dict[str, Any] = field(default_factory=dict)
    pruned_thread_ids: list[str] = field(default_factory=list)
    claimed: int = 0
    extractions: list[ExtractionLine] = field(default_factory=list)
    quality: list[dict[str, Any]] = field(default_factory=list)
    usage: Counter[str] = field(default_factory=Counter)
    forget_audit: list[ForgetAuditRecord] = field(default_factory=list)
    # The part of `usage` that earlier runs paid for: answers that arrived before they died (or
    # lost their lease) and that this run finalized instead of calling the model again.
    usage_reused: Counter[str] = field(default_factory=Counter)
    # `rollout_token_budget`: what a transcript may send (the truncation section says it).
    token_budget: int | None = None
    # Where the model requests went (`model_endpoint`), for the message of a run they failed in.
    endpoint: str | None = None
    # `concurrency`: extractions in flight at once (the run's own limit, not a Prefect limit).
    concurrency: int | None = None
    # Files discovery could not read as a session, each (path, "<outcome>: <reason>"): named, not
    # only counted (a file with no readable session_meta would otherwise be a thread never claimed).
    unreadable_files: list[tuple[str, str]] = field(default_factory=list)

    def outcome_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter(line.outcome.value for line in self.extractions)
        if self.gate is not None:
            counts[self.gate.value] += 1
        elif not self.claimed and not self.extractions:  # threads skipped at their claim were candidates
            counts[Outcome.skipped_no_candidates.value] += 1
        return counts

    def failures(self) -> list[ExtractionLine]:
        return [line for line in self.extractions if line.outcome.is_failure]


# Where the openai client sends requests when no base_url is set.
OPENAI_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def model_endpoint(provider: str | None, base_url: str | None) -> str | None:
    """The model endpoint a provider's requests go to, as a person names it (None: no model)."""
    if provider == "openai":
        return base_url or OPENAI_DEFAULT_ENDPOINT
    if provider == "codex":
        return "the Codex CLI (`codex exec`) and its model provider"
    return None


def render_phase1_markdown(report: Phase1Report) -> str:
    lines = ["# codex-memories phase 1", ""]
    if report.warning:
        lines += [f"**{report.warning}**", ""]
    if report.provider == "heuristic":
        lines.append("Provider: `heuristic`: memories were extracted by the offline heuristic extractor (rule-based, no model).")
    elif report.provider:
        lines.append(f"Provider: `{report.provider}`, model `{report.model}`.")
    if report.provider:
        if report.provider_reason:
            lines.append(f"Provider choice: {report.provider_reason}.")
        lines.append("")
    if report.concurrency:
        lines += [f"Extractions at once: at most {report.concurrency} (setting `concurrency`).", ""]
    if report.rate_limit:
        lines += [f"Rate-limit guard: `skipped_rate_limited`: {report.rate_limit}.", ""]
    lines += ["## Outcomes", "", "| outcome | count |", "|---|---|"]
    for outcome, count in sorted(report.outcome_counts().items()):
        lines.append(f"| `{outcome}` | {count} |")
    failures = report.failures()
    if failures:
        lines += ["", "## Failures", "", "| thread | outcome | reason |", "|---|---|---|"]
        for line in failures:
            reason = (line.reason or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{line.thread_id}` | `{line.outcome.value}` | {reason} |")
    if report.discovery:
        lines += ["", "## Discovery", "", "| fact | value |", "|---|---|"]
        for key, value in report.discovery.items():
            lines.append(f"| {key} | {value} |")
    if report.unreadable_files:
        lines += ["", f"## Files that could not be read ({len(report.unreadable_files)})", "", "| file | reason |", "|---|---|"]
        for path, reason in report.unreadable_files:
            lines.append(f"| `{_table_cell(path)}` | {_table_cell(reason)} |")
    if report.pruned_thread_ids:
        lines += ["", f"## Forgotten by retention prune ({len(report.pruned_thread_ids)})", ""]
        lines += [f"- `{thread_id}`" for thread_id in report.pruned_thread_ids]
    truncated = [line for line in report.extractions if line.truncated_tokens]
    if truncated:
        budget = f" (budget {report.token_budget} tokens per transcript)" if report.token_budget else ""
        lines += ["", f"## Truncated transcripts{budget}", ""]
        lines += [
            f"- `{line.thread_id}`: {line.transcript_tokens} tokens sent, the start and the end; about "
            f"{line.truncated_tokens} left out of the middle (an estimate)"
            for line in truncated
        ]
    withheld = [line for line in report.extractions if line.withheld_lines]
    if withheld:
        lines += ["", "## Lines withheld: their words came from tool output, not from the user", ""]
        for line in withheld:
            lines.append(f"- `{line.thread_id}`:")
            lines += [f"  - {text}" for text in line.withheld_lines]
    if report.quality:
        lines += ["", "## Data quality (great-expectations)", "", "| expectation | success | unexpected |", "|---|---|---|"]
        for item in report.quality:
            lines.append(
                f"| {item.get('expectation')} | {item.get('success')} | {item.get('unexpected_count', 0)} |"
            )
    if report.usage:
        lines += ["", "## Token usage", "", "| tokens | model calls of this run | reused (paid by an earlier run) | phase 1 total |", "|---|---|---|---|"]
        for key, value in sorted(report.usage.items()):
            reused = report.usage_reused.get(key, 0)
            lines.append(f"| {key} | {value - reused} | {reused} | {value} |")
    lines += render_forget_audit(report.forget_audit)
    return "\n".join(lines) + "\n"


def render_phase1_text(report: Phase1Report) -> str:
    """The short report the CLI prints."""
    counts = report.outcome_counts()
    parts = [f"{outcome}={count}" for outcome, count in sorted(counts.items())]
    text = "phase 1: " + (", ".join(parts) if parts else "nothing to do")
    if report.warning:
        text += f"\n  {report.warning}"
    if report.provider:
        text += f"\n  provider {report.provider}: {report.provider_reason or ''}"
    if report.rate_limit:
        text += f"\n  rate limited: {report.rate_limit}"
    for line in report.failures():
        text += f"\n  {line.thread_id}: {line.outcome.value}: {line.reason or ''}"
    for path, reason in report.unreadable_files[:UNREADABLE_FILES_SHOWN]:
        text += f"\n  not read: {_one_line(path)}: {_one_line(reason)}"
    if len(report.unreadable_files) > UNREADABLE_FILES_SHOWN:
        text += f"\n  not read: {len(report.unreadable_files) - UNREADABLE_FILES_SHOWN} more file(s), listed in the run's artifact"
    return text


# The unreadable files the CLI's short report names; the artifact lists every one.
UNREADABLE_FILES_SHOWN = 20


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _table_cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|").replace("`", "'")


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
        lines += [f"- {_cell(finding)}" for finding in report.injection_findings]
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
            _cell(redact_secrets(f"{entry.text} (thread {entry.source}, {entry.updated_at or 'no date'}, cwd {entry.group})"))
            for entry in (conflict.winner, conflict.loser)
        )
        lines.append(f"| {_cell(redact_secrets(conflict.subject))} | {kept} | {dropped} |")
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


class AuditLine(Protocol):
    """A forget-audit row as stored (`ForgetAuditRecord`) or as just written (`ForgetAction`)."""

    @property
    def route(self) -> Any: ...
    @property
    def target(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def removed(self) -> Any: ...


def render_forget_audit(rows: Sequence[AuditLine]) -> list[str]:
    """The forget-audit rows written during a run, as a markdown section (none: no section)."""
    if not rows:
        return []
    lines = ["", f"## Forget audit ({len(rows)} row(s) written during this run)", ""]
    lines += ["| route | target | reason | removed |", "|---|---|---|---|"]
    for row in rows:
        removed = json.dumps(row.removed, sort_keys=True)
        lines.append(f"| `{str(row.route)}` | `{row.target}` | {_cell(row.reason)} | {_cell(removed)} |")
    return lines


@dataclass
class ForgetReport:
    """What one run of the `forget` flow did."""

    route: str
    target: str | None
    forget_audit: list[AuditLine] = field(default_factory=list)


def render_forget_markdown(report: ForgetReport) -> str:
    lines = ["# codex-memories forget", "", f"Route: `{report.route}`"]
    if report.target:
        lines.append(f"Target: `{report.target}`")
    if not report.forget_audit:
        lines += ["", "Nothing to forget: no audit row was written."]
    lines += render_forget_audit(report.forget_audit)
    lines += ["", "The memory folder loses what these rows removed at the next phase 2."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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


# ---- verdicts: the final state of a flow run ---------------------------------------------------

# Prefect state names beyond the type's own: each is shown on the run's badge and can be filtered
# on, and Prefect emits it as the event `prefect.flow-run.<name>` that automations trigger on.
PARTIAL = "Partial"
AWAITING_REVIEW = "AwaitingReview"
REJECTED = "Rejected"
BACKING_OFF = "BackingOff"
INCOMPLETE = "Incomplete"

# The phase-2 outcomes that end a run waiting for, or refused by, a reviewer.
_REVIEW_WAITING = frozenset({Outcome.proposed_awaiting_review, Outcome.skipped_review_pending})
_REVIEW_REFUSED = frozenset({Outcome.skipped_review_rejected, Outcome.skipped_review_timeout})
_SUCCEEDED = frozenset({Outcome.succeeded.value, Outcome.succeeded_no_output.value, Outcome.skipped_repository_opted_out.value})


class RunNotDone(Exception):
    """The data of the final state of a run that did not do its job (failed or cancelled).

    A deployment's run ends by raising its final state's data when that state is not Completed;
    Prefect can raise only an exception (any other data became a `TypeError` whose message dumped
    the whole report, with a traceback). This one says the verdict in one line and carries the
    report for the caller that reads it back (`flows.flow_runs.report_of`); the run-log filter
    (`flows.log_filters`) logs it as that one line, without a traceback."""

    def __init__(self, verdict: RunVerdict, report: Any) -> None:
        super().__init__(f"{verdict.name}: {verdict.message}")
        self.verdict = verdict
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with the flow run's result (cloudpickle): the default would rebuild it from
        # its message alone.
        return (RunNotDone, (self.verdict, self.report))


@dataclass(frozen=True)
class RunVerdict:
    """Did the run do its job: the type of its final state (`completed`, `failed`, `cancelled`),
    the state's name and its message (the outcome counts, or the outcome and its reason)."""

    state: Literal["completed", "failed", "cancelled"]
    name: str
    message: str


def phase1_verdict(report: Phase1Report) -> RunVerdict:
    """Failed when claimed extractions failed: named `Partial` when others succeeded, `Failed`
    when none did; named `Incomplete` when threads another run held were left unextracted
    (`skipped_running`: a backfill's wait ran out, or a retried run could not take a claim
    back). Completed otherwise (nothing to do, a gate, a rate-limit stop included); a
    run the rate-limit guard stopped half way says "partial" in its message."""
    counts = report.outcome_counts()
    text = format_counts(counts)
    failed = sum(count for outcome, count in counts.items() if Outcome(outcome).is_failure)
    if failed:
        succeeded = sum(counts[outcome] for outcome in _SUCCEEDED)
        next_step = _after_model_failures(report, counts)
        if succeeded:
            return RunVerdict("failed", PARTIAL, f"partial: {failed} of {failed + succeeded} extractions failed ({text}){next_step}")
        return RunVerdict("failed", "Failed", f"every extraction failed ({text}){next_step}")
    held = counts[Outcome.skipped_running.value]
    if held:
        # Threads another run held past the run's wait: not extracted, so not a success.
        return RunVerdict(
            "failed", INCOMPLETE, f"incomplete: {held} thread(s) held by another run were not extracted ({text}); "
            "a later run or a Retry of this one takes them"
        )
    if counts[Outcome.skipped_rate_limited.value] and report.claimed:
        return RunVerdict("completed", "Completed", f"partial, stopped by the rate-limit guard ({text})")
    return RunVerdict("completed", "Completed", text)


def _after_model_failures(report: Phase1Report, counts: Counter[str]) -> str:
    """What a run whose model requests failed says next: the endpoint and the next step."""
    if not counts[Outcome.failed_model_request.value]:
        return ""
    where = f" at {report.endpoint}" if report.endpoint else ""
    return (
        f": the model{where} did not answer; fix it, then Retry this run "
        "(only the failed extractions run again, nothing answered is paid twice)"
    )


def phase2_verdict(report: Phase2Report) -> RunVerdict:
    """Failed on a `failed_*` outcome, and named `BackingOff` while a failure's backoff holds
    phase 2 back (`skipped_retry_unavailable`); `AwaitingReview` (completed) while a proposal waits for a
    decision; `Rejected` (cancelled) when the reviewer said no or did not answer in time;
    Completed otherwise, skips included (a skip is a decision of the DB lease, the cooldown or
    the rate-limit guard, not a fault)."""
    outcome = report.outcome
    text = outcome.value if outcome is not None else "unknown"
    message = f"{text}: {report.reason}" if report.reason else text
    if outcome is None or outcome.is_failure:
        return RunVerdict("failed", "Failed", message)
    if outcome is Outcome.skipped_retry_unavailable:
        # Not a success: the memory folder stays behind its inputs until the failure's cause is
        # fixed; the message says which failure, until when, and what lifts it.
        return RunVerdict("failed", BACKING_OFF, message)
    if outcome in _REVIEW_WAITING:
        return RunVerdict("completed", AWAITING_REVIEW, message)
    if outcome in _REVIEW_REFUSED:
        return RunVerdict("cancelled", REJECTED, message)
    return RunVerdict("completed", "Completed", message)


def backfill_verdict(phase1: Phase1Report, phase2_outcome: str | None, phase2_reason: str | None) -> RunVerdict:
    """A backfill is its extractions (as `phase1_verdict`) and its one phase 2 (as
    `phase2_verdict`): it fails when either fails, `Partial` when some extractions succeeded."""
    extraction = phase1_verdict(phase1)
    if phase2_outcome is None:  # a gate stopped the backfill before its phase 2
        return extraction
    consolidation = phase2_verdict(Phase2Report(outcome=Outcome(phase2_outcome), reason=phase2_reason))
    message = f"extractions: {extraction.message}; phase 2: {consolidation.message}"
    if extraction.state == "failed":
        return RunVerdict("failed", extraction.name, message)
    if consolidation.state == "failed":
        extracted = sum(phase1.outcome_counts()[outcome] for outcome in _SUCCEEDED)
        return RunVerdict("failed", PARTIAL if extracted else "Failed", message)
    return RunVerdict(consolidation.state, consolidation.name, message)


def format_counts(counts: Counter[str]) -> str:
    """`outcome=count, ...`, failures first, as the CLI prints them."""
    ordered = sorted(counts.items(), key=lambda item: (not Outcome(item[0]).is_failure, item[0]))
    return ", ".join(f"{outcome}={count}" for outcome, count in ordered) or "nothing to do"
