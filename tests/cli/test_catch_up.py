"""`run --catch-up`: a long history in one command, with a line per pass, and phase 2 without
its cooldown after it (issue 35, item 5)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.memory_home import MemoryHome


def test_catch_up_takes_every_waiting_session_in_passes_then_consolidates_at_once(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    for number in range(7):
        home.rollout(f"from now on always run the linter before committing in module {number}", days_ago=1 + number / 10)

    result = home.cli("run", "--local", "--provider", "heuristic", "--max-rollouts", "3", "--catch-up")

    assert result.returncode == 0, result.stderr
    passes = re.findall(r"catch-up: pass (\d+): (\d+) session\(s\) extracted, (\d+) in all, (\d+) waiting", result.stdout)
    assert [(number, done, total, waiting) for number, done, total, waiting in passes] == [
        ("1", "3", "3", "4"), ("2", "3", "6", "1"), ("3", "1", "7", "0"),
    ], result.stdout
    assert "catch-up: done after 3 pass(es): no session is waiting" in result.stdout
    with home.store as store:
        assert store.session_coverage(interactive_sources=["cli", "vscode"], min_rollout_idle_hours=None,
                                      max_rollout_age_days=None).by_reason.get("extracted") == 7
    assert (home.memory_root / "MEMORY.md").is_file()

    # Right after it, a plain run is not held off by a cooldown the person never asked for.
    home.rollout("from now on always run the formatter too", days_ago=0.5)
    again = home.cli("run", "--local", "--provider", "heuristic", "--catch-up")
    assert again.returncode == 0, again.stderr
    assert "cooldown" not in again.stdout.casefold(), again.stdout


def test_without_catch_up_one_pass_only(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    for number in range(4):
        home.rollout(f"from now on always pin the Node version in service {number}", days_ago=1 + number / 10)

    result = home.cli("run", "--local", "--provider", "heuristic", "--max-rollouts", "3")

    assert result.returncode == 0, result.stderr
    assert "catch-up:" not in result.stdout
