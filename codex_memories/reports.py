"""Run reports: what each flow run publishes as a Prefect markdown artifact and prints.

Pure rendering: counts per outcome code, each failure with its reason, discovery and quality
facts, token usage. The same outcome strings as the DB and the logs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codex_memories.outcomes import Outcome


@dataclass
class ExtractionLine:
    thread_id: str
    outcome: Outcome
    reason: str | None = None
    transcript_tokens: int = 0
    truncated_tokens: int = 0


@dataclass
class Phase1Report:
    gate: Outcome | None = None
    provider: str | None = None
    model: str | None = None
    discovery: dict[str, Any] = field(default_factory=dict)
    pruned_thread_ids: list[str] = field(default_factory=list)
    claimed: int = 0
    extractions: list[ExtractionLine] = field(default_factory=list)
    quality: list[dict[str, Any]] = field(default_factory=list)
    usage: Counter[str] = field(default_factory=Counter)

    def outcome_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter(line.outcome.value for line in self.extractions)
        if self.gate is not None:
            counts[self.gate.value] += 1
        elif not self.claimed:
            counts[Outcome.skipped_no_candidates.value] += 1
        return counts

    def failures(self) -> list[ExtractionLine]:
        return [line for line in self.extractions if line.outcome.is_failure]


def render_phase1_markdown(report: Phase1Report) -> str:
    lines = ["# codex-memories phase 1", ""]
    if report.provider:
        lines.append(f"Provider: `{report.provider}`, model `{report.model}`.")
        if report.provider == "heuristic":
            lines.append("Memories were extracted by the offline heuristic extractor (rule-based, no model).")
        lines.append("")
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
    if report.pruned_thread_ids:
        lines += ["", f"## Forgotten by retention prune ({len(report.pruned_thread_ids)})", ""]
        lines += [f"- `{thread_id}`" for thread_id in report.pruned_thread_ids]
    truncated = [line for line in report.extractions if line.truncated_tokens]
    if truncated:
        lines += ["", "## Truncated transcripts", ""]
        lines += [
            f"- `{line.thread_id}`: {line.truncated_tokens} tokens cut from the middle, "
            f"{line.transcript_tokens} sent"
            for line in truncated
        ]
    if report.quality:
        lines += ["", "## Data quality (great-expectations)", "", "| expectation | success | unexpected |", "|---|---|---|"]
        for item in report.quality:
            lines.append(
                f"| {item.get('expectation')} | {item.get('success')} | {item.get('unexpected_count', 0)} |"
            )
    if report.usage:
        lines += ["", "## Token usage", ""]
        lines += [f"- {key}: {value}" for key, value in sorted(report.usage.items())]
    return "\n".join(lines) + "\n"


def render_phase1_text(report: Phase1Report) -> str:
    """The short report the CLI prints."""
    counts = report.outcome_counts()
    parts = [f"{outcome}={count}" for outcome, count in sorted(counts.items())]
    text = "phase 1: " + (", ".join(parts) if parts else "nothing to do")
    for line in report.failures():
        text += f"\n  {line.thread_id}: {line.outcome.value}: {line.reason or ''}"
    return text
