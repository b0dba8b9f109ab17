"""Rebuild: the memory folder consolidated again from the stage-1 outputs, from scratch (issue 15,
openai/codex#30299: Codex offers no rebuild).

Orchestration only. The consolidation is a forced run of the `memories-phase2` flow with
`from_scratch=True`, called as it is (a subflow run with its own lease, injection gate, forget
audit and run artifact): phase 2 stages an empty copy of the folder that keeps only the
extensions (the ad-hoc notes) and the recall index, consolidates the current selection into it
and publishes it in one step like any other run. Until then, and for good when the rebuild fails,
the live folder is the old consolidation: no reader ever sees a folder half rebuilt. Parameters
are settings overrides, none secret.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefect import flow, get_run_logger
from prefect.states import State

from codex_memories.outcomes import Outcome
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.reports.verdicts import phase2_verdict
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.flow_runs import final_state, report_of, run_overrides
from codex_memories_flows.phase2 import phase2

# The outcomes after which the rebuilt folder is the live one.
REBUILT_OUTCOMES = frozenset({Outcome.succeeded, Outcome.succeeded_no_workspace_changes})


@dataclass
class RebuildReport:
    """The rebuild's phase-2 report, and whether the rebuilt folder went live (else the old one
    stayed)."""

    phase2: Phase2Report
    kept: bool


@flow(name="memories-rebuild")
def rebuild(overrides: SettingsOverrides | None = None) -> State[RebuildReport]:
    """Consolidate from scratch: a fresh folder from the current selection, as a forced phase 2;
    the run's state is the phase 2's (Failed when the previous folder stayed live)."""
    # 1. A forced phase 2 from scratch through the normal flow (it publishes only on success).
    state = phase2(overrides=run_overrides(overrides), force=True, from_scratch=True, return_state=True)
    report: Phase2Report = report_of(state)
    kept = report.outcome in REBUILT_OUTCOMES
    get_run_logger().info(
        "rebuild: phase 2 %s; %s", report.outcome.value if report.outcome else "unknown",
        "the rebuilt folder is live" if kept else "the previous folder stays live",
    )
    return final_state(phase2_verdict(report), RebuildReport(phase2=report, kept=kept))
