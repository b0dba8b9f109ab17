"""The backfill run's progress artifact and its final markdown report.

Inputs: counts, or the finished `BackfillReport`. Side effects: Prefect artifacts only (a
progress artifact updated per batch, then the report). No DB or file writes. Not tasks, like
`report.py`: created in the flow run's context, they belong to the flow run, not to a task run.
"""

from uuid import UUID

from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact

from codex_memories.reports.backfill import BackfillReport, render_backfill_markdown

PROGRESS_ARTIFACT_KEY = "memories-backfill-progress"
REPORT_ARTIFACT_KEY = "memories-backfill"


def start_backfill_progress(total: int) -> UUID:
    return create_progress_artifact(
        progress=0.0 if total else 100.0,
        key=PROGRESS_ARTIFACT_KEY,
        description=f"Backfill: threads extracted (of {total})",
    )


def update_backfill_progress(artifact_id: UUID, done: int, total: int) -> float:
    percent = 100.0 if total == 0 else round(100.0 * done / total, 1)
    update_progress_artifact(artifact_id=artifact_id, progress=percent)
    return percent


def publish_backfill_report(report: BackfillReport) -> str:
    markdown = render_backfill_markdown(report)
    create_markdown_artifact(markdown=markdown, key=REPORT_ARTIFACT_KEY, description="Backfill outcomes")
    return markdown
