"""The real flows: forget --match / --project through the forget flow, then the next phase 2; rebuild."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.memory_folder.notes import add_ad_hoc_note
from codex_memories.outcomes import Outcome
from codex_memories.runtime import close_stores
from codex_memories.state.records import ForgetRoute
from codex_memories_flows.flow_runs import report_of
from codex_memories_flows.forget import forget
from codex_memories_flows.rebuild import rebuild
from tests.support.memory_home import MemoryHome
from tests.support.openai_server import ScriptedReply, running_openai_server

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    home = MemoryHome(tmp_path)
    home.rollout("from now on always use pnpm for installs (ZEBRA-417)", days_ago=2)
    home.rollout("remember that we keep tabs in Makefiles (OTTER-902)", days_ago=1)
    assert home.phase1().claimed == 2
    assert home.phase2().outcome is Outcome.succeeded
    yield home
    close_stores()


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


def every_trace(root: Path) -> str:
    """Every name and byte under the memory folder, git's objects and history as git reads them."""
    git = ["git", "--git-dir", str(root / paths.GIT_DIR)]
    parts = [str(path.relative_to(root)) for path in root.rglob("*")]
    parts += [path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file() and "objects" not in path.parts]
    parts.append(subprocess.run([*git, "log", "-p", "--all"], capture_output=True, check=True, text=True).stdout)
    parts.append(subprocess.run([*git, "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True).stdout.decode("utf-8", "replace"))
    return "\n".join(parts).casefold()


def test_a_forgotten_text_leaves_no_line_name_or_git_object_and_the_next_phase2_brings_none_back(home: MemoryHome) -> None:
    assert "ZEBRA-417" in home.memory_text() and "ZEBRA-417" in (home.memory_root / paths.MEMORY_FILE).read_text(encoding="utf-8")
    assert any("zebra_417" in path.name for path in (home.memory_root / paths.ROLLOUT_SUMMARIES_DIR).iterdir())

    report = forget(route="text_match", target="zebra-417", overrides=home.overrides())
    [row] = report.forget_audit
    assert row.route == ForgetRoute.text_match and row.target == "a text of 9 characters"
    assert "zebra" not in every_trace(home.memory_root)  # lines, names and history went at once

    again = home.phase2()
    assert again.outcome in (Outcome.succeeded, Outcome.succeeded_no_workspace_changes)
    assert "zebra" not in every_trace(home.memory_root) and "OTTER-902" in home.memory_text()
    assert not any("zebra" in (o.raw_memory + o.rollout_summary + (o.rollout_slug or "")).casefold() for o in home.store.stage1_outputs_where(lambda *_: True))


def test_forgetting_the_project_empties_its_memories_at_the_next_phase2(home: MemoryHome) -> None:
    # The rollout factory records one origin for every session: acme/app.
    report = forget(route="project_deletion", target="github.com/acme/app", overrides=home.overrides())
    [row] = report.forget_audit
    assert row.route == ForgetRoute.project_deletion and len(row.removed["threads"]) == 2
    assert home.phase2().outcome is Outcome.succeeded
    assert home.rollout_summaries() == []
    assert "ZEBRA-417" not in home.memory_text() and "OTTER-902" not in home.memory_text()


def test_rebuild_consolidates_from_scratch_and_keeps_the_notes(home: MemoryHome) -> None:
    memory_file = home.memory_root / paths.MEMORY_FILE
    memory_file.write_text(memory_file.read_text(encoding="utf-8") + "\n- a stale line from an old consolidation (KIWI-55)\n", encoding="utf-8")
    note = add_ad_hoc_note(home.memory_root, "the staging host is staging-3 (HERON-12)", slug="staging")

    result = report_of(rebuild(overrides=home.overrides(), return_state=True))

    assert result.kept and result.phase2.outcome is Outcome.succeeded
    text = memory_file.read_text(encoding="utf-8")
    assert "KIWI-55" not in text and "ZEBRA-417" in text and "OTTER-902" in text
    assert Path(note).is_file()  # the note stays an input
    assert not list(home.memory_root.parent.glob(".memories.staging-*"))  # the rebuilt copy is the live folder now
    # The heuristic consolidator reads every note on every run: the rebuilt handbook has it.
    assert "HERON-12" in text
    # From INIT: the fresh baseline holds the notes, so the diff shows only the synced inputs.
    assert result.phase2.diff_status and all(line.startswith("A ") for line in result.phase2.diff_status)


def test_a_failed_rebuild_puts_the_previous_folder_back(home: MemoryHome) -> None:
    before = folder_bytes(home.memory_root)
    git_head = (home.memory_root / ".git" / "HEAD").read_bytes()
    with running_openai_server(lambda request: ScriptedReply.http_error(500)) as server:
        failing = home.overrides().model_copy(update={"provider": "openai", "base_url": server.base_url})
        result = report_of(rebuild(overrides=failing, return_state=True))
    assert not result.kept and result.phase2.outcome is not None and result.phase2.outcome.is_failure
    assert folder_bytes(home.memory_root) == before
    assert (home.memory_root / ".git" / "HEAD").read_bytes() == git_head
    assert not list(home.memory_root.parent.glob(".memories.staging-*"))
