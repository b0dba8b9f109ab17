from prefect import task
from prefect.artifacts import create_markdown_artifact

from codex_memories.reports import Phase1Report, render_phase1_markdown


@task(name="publish-phase1-report", cache_policy=None)
def publish_phase1_report(report: Phase1Report) -> str:
    markdown = render_phase1_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-phase1", description="Phase-1 outcomes")
    return markdown
