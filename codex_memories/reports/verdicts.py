"""Did the run do its job: a report's verdict (`phase1_verdict`, `phase2_verdict`,
`backfill_verdict`), which the flows turn into Prefect states (`docs/prefect.md` has the table),
and `RunNotDone`, the data of a final state that is not Completed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import Phase1Report
from codex_memories.reports.phase2 import Phase2Report

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
