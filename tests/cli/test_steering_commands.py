"""`note` and `forget` say when they take effect, in sentences, and `--now` does it now (issue 30)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.codex.hooks_file import HOOK_EXECUTABLE, SESSION_START_MATCHER, hooks_path
from codex_memories.runtime import close_stores
from codex_memories_cli.steering import local_time
from tests.support.memory_home import MemoryHome, remember

THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    return MemoryHome(tmp_path)


def install_session_start_hook(home: MemoryHome) -> None:
    command = f"{home.root / 'bin' / HOOK_EXECUTABLE} SessionStart"
    document = {"hooks": {"SessionStart": [{"matcher": SESSION_START_MATCHER, "hooks": [{"type": "command", "command": command}]}]}}
    hooks_path(home.codex_home).write_text(json.dumps(document), encoding="utf-8")


def consolidated_at(home: MemoryHome, finished_at: int) -> None:
    """A phase 2 that succeeded at `finished_at`."""
    store = home.store
    store.enqueue_global_consolidation(1)
    claim = store.try_claim_global_phase2_job(worker_id="test", lease_seconds=60, ignore_cooldown=True)
    assert store.mark_global_phase2_job_succeeded(ownership_token=claim.ownership_token, completed_watermark=1, selected=[])
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE jobs SET finished_at = ? WHERE kind = 'memory_consolidate_global'", (finished_at,))
    close_stores()


def test_a_note_says_the_next_session_sees_it_now_and_when_phase_2_folds_it_in(home: MemoryHome) -> None:
    install_session_start_hook(home)
    finished_at = int(time.time()) - 3600
    consolidated_at(home, finished_at)

    result = home.cli("note", "Remember that the staging DB is read-only.")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("note written for the project ") and lines[0].endswith("-remember-that-the-staging-db-is-read-only.md")
    assert lines[1] == (
        "The next Codex session sees it at once: the SessionStart hook shows the notes added since the last consolidation."
    )
    assert lines[2] == (
        f"Phase 2 folds it into MEMORY.md at its first run after {local_time(finished_at + 21_600)} (it waits 6 hours after a "
        "consolidation); `codex-memories phase2 --force` (or `note --now`) does it now."
    )


def test_a_note_without_our_hooks_or_a_state_db_says_so_and_creates_no_db(home: MemoryHome) -> None:
    result = home.cli("note", "Prefer tabs in Makefiles.")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "Codex sessions see it once the hooks are installed (`codex-memories install`); until then only through MEMORY.md.",
        (
            "Phase 2 folds it into MEMORY.md at its first run (`codex-memories run`, or every 6 hours with `codex-memories serve`); "
            "`codex-memories phase2 --force` (or `note --now`) does it now."
        ),
    ]
    assert not (home.root / "state.sqlite").exists()


def test_a_thread_forget_says_the_consolidated_files_follow_at_the_next_phase_2(home: MemoryHome) -> None:
    remember(home.store, THREAD)
    consolidated_at(home, int(time.time()) - 7 * 3600)  # the cooldown is over

    result = home.cli("forget", "--thread", THREAD)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "The state DB changed now; MEMORY.md and memory_summary.md still hold what it gave them until phase 2 consolidates "
        "without it, at its next run (`codex-memories run`, or every 6 hours with `codex-memories serve`); "
        "`codex-memories phase2 --force` (or `forget --now`) does it now."
    )


def test_a_match_forget_shows_each_line_with_its_text_leaves_no_empty_heading_and_takes_effect_now(home: MemoryHome) -> None:
    remember(home.store, THREAD, raw_memory="- always use pnpm (ZEBRA-417)\n", rollout_slug="zebra-417-pnpm")
    close_stores()
    home.memory_root.mkdir()
    handbook = home.memory_root / paths.MEMORY_FILE
    handbook.write_text("# Memory\n\n## Deploys\n- always use pnpm (ZEBRA-417)\n\n## Tabs\n- keep tabs (OTTER-902)\n", encoding="utf-8")

    dry = home.cli("forget", "--match", "zebra-417", "--dry-run")

    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        "would forget the memory lines and names holding 'zebra-417':",
        "  MEMORY.md:3: ## Deploys  (heading left with nothing under it)",
        "  MEMORY.md:4: - always use pnpm (ZEBRA-417)",
        f"  stage-1 output of thread {THREAD}, raw_memory:1: - always use pnpm (ZEBRA-417)",
        f"  stage-1 output of thread {THREAD}, slug zebra-417-pnpm -> pnpm",
    ]
    real = home.cli("forget", "--match", "zebra-417")
    assert real.returncode == 0, real.stderr
    assert real.stdout.splitlines()[1:5] == dry.stdout.splitlines()[1:]
    assert real.stdout.splitlines()[5:] == [
        "Sessions stop seeing it now: the memory folder, its git baseline and the state DB no longer hold it.",
        "The audit (forget_audit) keeps line numbers and counts, not the text.",
    ]
    assert handbook.read_text(encoding="utf-8") == "# Memory\n\n## Tabs\n- keep tabs (OTTER-902)\n"


def test_now_and_dry_run_together_are_refused_in_one_line(home: MemoryHome) -> None:
    result = home.cli("forget", "--match", "zebra-417", "--dry-run", "--now")
    assert result.returncode == 1
    assert result.stderr.strip() == "codex-memories: --now runs phase 2 after the forget; a --dry-run changes nothing, so give one of them"


def test_note_now_folds_the_note_into_memory_md_at_once(home: MemoryHome) -> None:
    (home.codex_home / "codex-memories.toml").write_text('provider = "heuristic"\n', encoding="utf-8")
    consolidated_at(home, int(time.time()) - 60)  # inside the cooldown: --now skips it

    result = home.cli("note", "Remember that the staging DB is read-only (HERON-77).", "--now")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Running phase 2 now (as `codex-memories phase2 --force`):" in result.stdout
    assert "HERON-77" in (home.memory_root / paths.MEMORY_FILE).read_text(encoding="utf-8")


def test_forget_now_consolidates_at_once_so_memory_md_no_longer_holds_it(home: MemoryHome) -> None:
    (home.codex_home / "codex-memories.toml").write_text('provider = "heuristic"\n', encoding="utf-8")
    recent = int(time.time()) - 3600  # inside the selection window
    remember(home.store, THREAD, raw_memory="Preference signals:\n- always use pnpm (ZEBRA-417)\n", source_updated_at=recent)
    remember(home.store, "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1b99", raw_memory="Preference signals:\n- keep tabs (OTTER-902)\n",
             source_updated_at=recent)
    close_stores()
    assert home.cli("phase2", "--force").returncode == 0
    assert "ZEBRA-417" in (home.memory_root / paths.MEMORY_FILE).read_text(encoding="utf-8")

    result = home.cli("forget", "--thread", THREAD, "--now")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Running phase 2 now (as `codex-memories phase2 --force`):" in result.stdout
    handbook = (home.memory_root / paths.MEMORY_FILE).read_text(encoding="utf-8")
    assert "ZEBRA-417" not in handbook and "OTTER-902" in handbook
