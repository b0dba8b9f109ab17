"""Rebuild: the memory folder consolidated again from the stage-1 outputs, from scratch.

Orchestration only (`codex_memories.consolidate.rebuild` decides). The consolidation itself is
a forced run of the `memories-phase2` flow, called as it is (a subflow run with its own lease,
injection gate, forget audit and run artifact); this flow gives it a fresh folder (ad-hoc notes
and extensions kept) and keeps the old folder until the new one succeeded. Parameters are
settings overrides, none secret.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefect import flow, get_run_logger

from codex_memories.reports import Phase2Report
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.phase2 import phase2
from codex_memories_tasks.set_aside_consolidation import set_aside_consolidation
from codex_memories_tasks.settle_rebuild import settle_rebuild


@dataclass
class RebuildReport:
    """The rebuild's phase-2 report, and whether its folder was kept (else the old one is back)."""

    phase2: Phase2Report
    kept: bool
    set_aside: list[str]


@flow(name="memories-rebuild")
def rebuild(overrides: SettingsOverrides | None = None) -> RebuildReport:
    """Consolidate from scratch: a fresh folder from the current selection, as a forced phase 2."""
    overrides = overrides or SettingsOverrides()
    config = overrides.load()
    # 1. Move the consolidated files aside (refused while a phase 2 holds its lease).
    aside = set_aside_consolidation(config)
    # 2. A forced phase 2 through the normal flow; 3. keep its folder or put the old one back.
    try:
        state = phase2(overrides=overrides, force=True, return_state=True)
        report: Phase2Report = state.result(raise_on_failure=False)
    except BaseException:
        settle_rebuild(aside, None)
        raise
    kept = settle_rebuild(aside, report.outcome)
    get_run_logger().info(
        "rebuild: phase 2 %s; %s", report.outcome.value if report.outcome else "unknown",
        "the rebuilt folder is live" if kept else "the previous folder is back",
    )
    return RebuildReport(phase2=report, kept=kept, set_aside=list(aside.entries))
