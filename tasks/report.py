"""Tasks: publish each flow run's markdown artifact (`codex_memories.reports`).

Input: the run's report. Output: the artifact id. Side effect: one Prefect artifact per run
(`memories-phase1`, `memories-phase2`, `memories-forget`).
"""

from prefect import task
from prefect.artifacts import create_markdown_artifact

from codex_memories.reports import (
    ForgetReport,
    Phase1Report,
    Phase2Report,
    render_forget_markdown,
    render_phase1_markdown,
    render_phase2_markdown,
)


@task(name="publish-phase1-report", cache_policy=None)
def publish_phase1_report(report: Phase1Report) -> str:
    markdown = render_phase1_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-phase1", description="Phase-1 outcomes")
    return markdown


@task(name="publish-phase2-report", cache_policy=None)
def publish_phase2_report(report: Phase2Report) -> str:
    markdown = render_phase2_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-phase2", description="Phase-2 consolidation")
    return markdown


@task(name="publish-forget-report", cache_policy=None)
def publish_forget_report(report: ForgetReport) -> str:
    markdown = render_forget_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-forget", description="Forgetting: audit rows written")
    return markdown
