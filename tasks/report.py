"""Publish each flow run's markdown artifact (`codex_memories.reports`).

Input: the run's report. Output: the markdown published. Side effect: one Prefect artifact per
run (`memories-phase1`, `memories-phase2`, `memories-forget`), attached to the flow run.

Not tasks, on purpose: an artifact created inside a task run belongs to that task run, and the
UI then lists the run's report under "Task runs" with "Flow run: None". Called from the flow, it
is created in the flow run's context and shows on the flow run's Artifacts tab.
"""

from prefect.artifacts import create_markdown_artifact

from codex_memories.reports.forget import ForgetReport, render_forget_markdown
from codex_memories.reports.phase1 import Phase1Report, render_phase1_markdown
from codex_memories.reports.phase2 import Phase2Report, render_phase2_markdown


def publish_phase1_report(report: Phase1Report) -> str:
    markdown = render_phase1_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-phase1", description="Phase-1 outcomes")
    return markdown


def publish_phase2_report(report: Phase2Report) -> str:
    markdown = render_phase2_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-phase2", description="Phase-2 consolidation")
    return markdown


def publish_forget_report(report: ForgetReport) -> str:
    markdown = render_forget_markdown(report)
    create_markdown_artifact(markdown=markdown, key="memories-forget", description="Forgetting: audit rows written")
    return markdown
