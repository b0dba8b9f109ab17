"""Phase 1's report: each extraction's outcome line, the run's counts and facts, as the run's
artifact (`render_phase1_markdown`) and the CLI's short text (`render_phase1_text`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets
from codex_memories.reports.forget import render_forget_audit
from codex_memories.reports.markdown import one_line, table_cell
from codex_memories.state.records import ForgetAuditRecord


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
            lines.append(f"| `{table_cell(path)}` | {table_cell(reason)} |")
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
        text += f"\n  not read: {one_line(path)}: {one_line(reason)}"
    if len(report.unreadable_files) > UNREADABLE_FILES_SHOWN:
        text += f"\n  not read: {len(report.unreadable_files) - UNREADABLE_FILES_SHOWN} more file(s), listed in the run's artifact"
    return text


# The unreadable files the CLI's short report names; the artifact lists every one.
UNREADABLE_FILES_SHOWN = 20
