"""A backfill run's report: its source, window and batches, what was fetched, what phase 2 did, and
phase 1's report of the extractions (`render_backfill_markdown`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codex_memories.ingest.backfill import FetchReport
from codex_memories.reports.phase1 import Phase1Report, render_phase1_markdown


@dataclass
class BackfillReport:
    """What one backfill run did; `phase1` holds the discovery counts and extraction outcomes."""

    source: str = ""
    since: str | None = None
    until: str | None = None
    batch_size: int = 0
    fetched: FetchReport | None = None
    candidates: int = 0
    batches: int = 0
    phase1: Phase1Report = field(default_factory=Phase1Report)
    phase2_outcome: str | None = None
    phase2_reason: str | None = None
    # Candidates whose last activity is older than [memories] max_unused_days: see
    # `older_than_selection_window`.
    older_than_selection_window: int = 0
    max_unused_days: int = 0


def render_backfill_markdown(report: BackfillReport) -> str:
    window = f"{report.since or 'the beginning'} to {report.until or 'today'} (UTC days, on last activity)"
    lines = [
        "# codex-memories backfill",
        "",
        f"Source: `{report.source}`; window: {window}; batch size {report.batch_size}.",
        "",
        f"{report.candidates} thread(s) to extract in {report.batches} batch(es).",
    ]
    if report.fetched is not None:
        lines.append(
            f"Object store: {report.fetched.objects_seen} rollout object(s), "
            f"{len(report.fetched.downloaded)} downloaded, {report.fetched.unchanged} already cached."
        )
    if report.older_than_selection_window:
        lines.append(
            f"Note: {report.older_than_selection_window} of these are older than max_unused_days="
            f"{report.max_unused_days}: phase 2 does not select them and the retention prune removes "
            "them; raise max_unused_days (up to 365) to keep older memories."
        )
    phase2 = report.phase2_outcome or "not run"
    lines += [f"Phase 2: `{phase2}`{': ' + report.phase2_reason if report.phase2_reason else ''}.", ""]
    body = render_phase1_markdown(report.phase1).split("\n", 1)
    lines.append(body[1] if len(body) > 1 else "")
    return "\n".join(lines)
