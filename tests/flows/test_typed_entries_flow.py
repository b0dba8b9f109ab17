"""Typed entries end to end with the offline heuristic provider (issue 15): real phase-1 and
phase-2 flows, rollouts in, the memory folder, the DB and the published artifact out.

- an older "use requests" session and a newer "use httpx, not requests" one: MEMORY.md keeps
  httpx, the run artifact lists the conflict with both entries and the winner;
- "don't commit to main this week" said 8 days ago: in the stage-1 row after phase 1, gone from
  the row and every memory file after phase 2, with an `entry_expiry` audit row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.forget.entry_expiry import next_entry_expiry
from codex_memories.memory_folder.inputs import read_settled_record
from codex_memories.state.records import ForgetRoute
from tests.support.memory_home import MemoryHome

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

OLD_RULE = "Always use requests for HTTP calls."
NEW_RULE = "Use httpx, not requests."
FREEZE = "Don't commit to main this week."
LATER_FREEZE = "For now, skip the flaky integration tests."


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    return MemoryHome(tmp_path)


def published_phase2_markdown() -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["memories-phase2"])), sort=ArtifactSort.CREATED_DESC, limit=1
        )
    return str(artifacts[0].data)


def test_the_newer_rule_wins_and_an_expired_rule_leaves_with_an_audit_row(home: MemoryHome) -> None:
    old_thread, _ = home.rollout("Add the HTTP client.", OLD_RULE, days_ago=10)
    new_thread, _ = home.rollout("Port the client to async.", NEW_RULE, days_ago=3)
    freeze_thread, _ = home.rollout("Look at the release branch.", FREEZE, days_ago=8)
    home.rollout("Stabilise CI.", LATER_FREEZE, days_ago=3)

    phase1 = home.phase1()
    assert {line.outcome.value for line in phase1.extractions} == {"succeeded"}
    freeze_row = home.store.get_stage1_output(freeze_thread)
    assert FREEZE in freeze_row.raw_memory and "expires=" in freeze_row.raw_memory

    report = home.phase2()
    assert report.outcome.value == "succeeded"

    handbook = (home.memory_root / paths.MEMORY_FILE).read_text(encoding="utf-8")
    assert NEW_RULE in handbook and "type=constraint" in handbook
    assert OLD_RULE not in handbook
    assert [(conflict.winner.source, conflict.loser.source) for conflict in report.conflicts] == [(new_thread, old_thread)]
    artifact = published_phase2_markdown()
    conflict_rows = [line for line in artifact.splitlines() if line.startswith("| requests |")]
    assert len(conflict_rows) == 1 and conflict_rows[0].index(NEW_RULE) < conflict_rows[0].index(OLD_RULE)
    assert new_thread in conflict_rows[0] and old_thread in conflict_rows[0]

    assert FREEZE not in home.memory_text()
    assert FREEZE not in home.store.get_stage1_output(freeze_thread).raw_memory
    audit = [row for row in report.forget_audit if row.route == ForgetRoute.entry_expiry]
    assert [(row.target, row.removed["entry"]) for row in audit] == [(freeze_thread, f'"{FREEZE}"')]
    assert "entry_expiry" in artifact and (ForgetRoute.entry_expiry, freeze_thread) in report.forgotten

    # A dated entry still in force is in MEMORY.md, and the early finish of later runs (step 2)
    # ends at its expiry, so the run after that date does the full work and expires it.
    assert LATER_FREEZE in handbook and "expires=" in handbook
    record = read_settled_record(home.memory_root)
    assert record is not None and record.next_change_at == next_entry_expiry(home.memory_root) is not None

    # Nothing left to expire or resolve: the next run changes nothing and audits nothing.
    again = home.phase2()
    assert again.outcome.value == "succeeded_no_workspace_changes"
    assert [row for row in again.forget_audit if row.route == ForgetRoute.entry_expiry] == []
