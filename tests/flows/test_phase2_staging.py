"""Phase 2 never writes the folder readers read: it consolidates a staging copy and publishes it.

The flow runs for real (Prefect test harness, SQLite, the heuristic consolidator or a test double
that blocks half way); the live folder is read from the test while the consolidator writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text as sql_text

import codex_memories_tasks.consolidate as consolidate_task
from codex_memories.consolidate import heuristic
from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.llm.base import TokenUsage
from codex_memories.memory_folder import staging
from codex_memories.memory_folder.notes import add_ad_hoc_note
from codex_memories.memory_folder.workspace import workspace_diff
from codex_memories.outcomes import Outcome
from codex_memories.reports.phase2 import Phase2Report
from tests.flows import test_phase2_flow as phase2_tests
from tests.flows.test_phase2_flow import NOW, Home, PlantingConsolidator, served_summary

# The phase-2 flow tests' fixtures: a Codex home with its state DB, and settings from nowhere else.
home = phase2_tests.home
isolated_settings = phase2_tests.isolated_settings

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


def whole_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under the root, the git baseline included."""
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def staging_siblings(home: Home) -> list[str]:
    return sorted(path.name for path in home.root.parent.iterdir() if path.name.startswith(f".{home.root.name}.staging-"))


class BlockingConsolidator:
    """Writes half of its output, then waits until the test lets it finish (first call only)."""

    name = "blocking"

    def __init__(self, mid_write: threading.Event, proceed: threading.Event) -> None:
        self.mid_write, self.proceed = mid_write, proceed

    def consolidate(self, root_dir: Path, *, prompt, should_continue) -> ConsolidationOutcome:
        if not self.mid_write.is_set():
            (root_dir / "memory_summary.md").write_text("v1\n\n## User Profile\nhalf writ", encoding="utf-8")
            (root_dir / "MEMORY.md").write_text("# Task Group: half\n", encoding="utf-8")
            self.mid_write.set()
            assert self.proceed.wait(120), "the test never let the consolidator finish"
        heuristic.consolidate_heuristically(root_dir, now=NOW)
        return ConsolidationOutcome(completed=True, stop_reason="finished", steps=1, tool_calls=0, usage=TokenUsage(), files_changed=[])


def run_in_thread(home: Home) -> tuple[threading.Thread, list[Phase2Report]]:
    results: list[Phase2Report] = []
    thread = threading.Thread(target=lambda: results.append(home.run()))
    thread.start()
    return thread, results


def test_a_reader_sees_only_the_old_complete_folder_while_the_consolidator_writes(home: Home, monkeypatch) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert home.run().outcome is Outcome.succeeded
    good, good_summary = whole_tree(home.root), served_summary(home)
    home.seed(hours_ago=20, topic="Lint first", preference="run make lint before committing", keyword="lint")
    mid_write, proceed = threading.Event(), threading.Event()
    monkeypatch.setattr(consolidate_task, "consolidator", lambda config: BlockingConsolidator(mid_write, proceed))

    thread, results = run_in_thread(home)
    try:
        assert mid_write.wait(120), "the consolidator never started"
        # The consolidator is half way through its files: the live folder is the old one, whole.
        assert whole_tree(home.root) == good
        assert served_summary(home) == good_summary and "half writ" not in served_summary(home)
        assert len(staging_siblings(home)) == 1  # the copy it writes, outside the live tree
    finally:
        proceed.set()
        thread.join(120)

    assert [report.outcome for report in results] == [Outcome.succeeded]
    assert "make lint" in (home.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "half writ" not in (home.root / "memory_summary.md").read_text(encoding="utf-8")
    assert not workspace_diff(home.root).changes  # published with its baseline
    assert staging_siblings(home) == []


def test_a_no_change_rerun_makes_no_staging_copy(home: Home, monkeypatch) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert home.run().outcome is Outcome.succeeded
    before = whole_tree(home.root)
    copies: list[Path] = []
    real_copy = staging.copy_tree
    monkeypatch.setattr(staging, "copy_tree", lambda live, target: copies.append(target) or real_copy(live, target))

    assert home.run().outcome is Outcome.succeeded_no_workspace_changes
    assert copies == []
    assert whole_tree(home.root) == before


def test_a_refused_consolidation_leaves_the_live_folder_byte_identical(home: Home, monkeypatch) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert home.run().outcome is Outcome.succeeded
    before = whole_tree(home.root)
    home.seed(hours_ago=20, topic="Lint first", preference="run make lint before committing", keyword="lint")
    monkeypatch.setattr(consolidate_task, "consolidator", lambda config: PlantingConsolidator(complete=True))

    report = home.run()

    assert report.outcome is Outcome.failed_injection_gate
    assert report.folder_restored is True
    assert whole_tree(home.root) == before  # the baseline, the index and the inputs included
    assert staging_siblings(home) == []


def test_a_note_written_while_consolidating_is_kept_and_consolidated_by_the_next_pass(home: Home, monkeypatch) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert home.run().outcome is Outcome.succeeded
    home.seed(hours_ago=20, topic="Lint first", preference="run make lint before committing", keyword="lint")
    mid_write, proceed = threading.Event(), threading.Event()
    monkeypatch.setattr(consolidate_task, "consolidator", lambda config: BlockingConsolidator(mid_write, proceed))

    thread, results = run_in_thread(home)
    try:
        assert mid_write.wait(120)
        note = add_ad_hoc_note(home.root, "Deploys go through make release.", slug="deploys", now=datetime.now(UTC))
    finally:
        proceed.set()
        thread.join(120)

    # The first pass saw the note arrive and published nothing; the second consolidated it.
    assert [report.outcome for report in results] == [Outcome.succeeded]
    assert note.read_text(encoding="utf-8") == "Deploys go through make release."
    assert not workspace_diff(home.root).changes  # the note is in the published baseline
    assert "make lint" in (home.root / "MEMORY.md").read_text(encoding="utf-8")


CRASHING_RUN = """
import os, signal, sys
from datetime import UTC, datetime
from codex_memories.consolidate import heuristic
from codex_memories.memory_folder import staging
from codex_memories.consolidate.steps import (
    Phase2Lease, diff_and_settle, publish_workspace, pull_and_prepare_workspace, select_inputs, sync_inputs,
)
from codex_memories.state.store import MemoryStore
from codex_memories.storage import open_memory_root

store = MemoryStore.open(sys.argv[1])
claim = store.try_claim_global_phase2_job(worker_id="doomed", lease_seconds=3600, ignore_cooldown=True)
lease = Phase2Lease(claim.ownership_token, claim.input_watermark or 0, "doomed")
workspace = staging.StagedWorkspace(open_memory_root(sys.argv[2]), lease.ownership_token)
pull_and_prepare_workspace(workspace)
selection = select_inputs(store, lease=lease, max_outputs=64, max_unused_days=30)
sync_inputs(workspace, selection, store)
diff_and_settle(workspace)
heuristic.consolidate_heuristically(workspace.path, now=datetime.now(UTC))
# The process dies after the copy is complete and its baseline reset, before the publish.
staging.publish = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
publish_workspace(workspace)
"""


def test_a_crash_between_staging_and_publish_leaves_the_old_folder_and_the_next_run_succeeds(
    home: Home, tmp_path: Path
) -> None:
    home.seed(hours_ago=30, topic="Set up pnpm", preference="always use pnpm", keyword="pnpm")
    assert home.run().outcome is Outcome.succeeded
    before = whole_tree(home.root)
    home.seed(hours_ago=20, topic="Lint first", preference="run make lint before committing", keyword="lint")
    script = tmp_path / "crash.py"
    script.write_text(CRASHING_RUN, encoding="utf-8")

    crashed = subprocess.run(
        [sys.executable, str(script), home.db_url, str(home.root)], cwd=Path(__file__).resolve().parents[2], timeout=300
    )

    assert crashed.returncode == -signal.SIGKILL
    assert whole_tree(home.root) == before
    assert len(staging_siblings(home)) == 1  # the dead run's copy, outside the live tree
    assert "make lint" not in served_summary(home)
    with home.store.engine.begin() as connection:  # the dead run's lease runs out
        connection.execute(sql_text("UPDATE jobs SET lease_until = :past WHERE kind = 'memory_consolidate_global'"),
                           {"past": int((datetime.now(UTC) - timedelta(hours=1)).timestamp())})

    report = home.run()

    assert report.outcome is Outcome.succeeded, report.reason
    assert staging_siblings(home) == []  # removed by the next run's prepare step
    assert "make lint" in (home.root / "MEMORY.md").read_text(encoding="utf-8")
    assert os.path.isdir(home.root / ".git") and not workspace_diff(home.root).changes
