"""`show`, `status` and `inject` say what a repository's `.codex-memories.toml` allows (issue 35.6)."""

from __future__ import annotations

import json
from pathlib import Path

from codex_memories.scopes import REPOSITORY_SWITCH_FILE
from tests.support.memory_home import MemoryHome

HANDBOOK = (
    "# Task Group: user-level (every project)\nscope: user-level\napplies_to: cwd=any\n\n"
    "## User preferences\n- answer in English (KITE-2024) [Task 1]\n"
)


def home_with_memory(tmp_path: Path) -> MemoryHome:
    home = MemoryHome(tmp_path / "home")
    home.memory_root.mkdir(parents=True, exist_ok=True)
    (home.memory_root / "MEMORY.md").write_text(HANDBOOK, encoding="utf-8")
    (home.memory_root / "memory_summary.md").write_text("# Memory summary\n\n## What's in Memory\n", encoding="utf-8")
    return home


def repository(tmp_path: Path, switch: str) -> Path:
    root = tmp_path / "src" / "atlas"
    (root / ".git").mkdir(parents=True)
    (root / REPOSITORY_SWITCH_FILE).write_text(switch, encoding="utf-8")
    return root


def test_show_says_a_repository_that_is_off_gets_nothing_and_json_names_the_switch(tmp_path: Path) -> None:
    home = home_with_memory(tmp_path)
    repo = repository(tmp_path, 'memories = "off"\n')

    words = home.cli("show", "--project", str(repo))
    machine = home.cli("show", "--project", str(repo), "--json")

    assert words.returncode == 0, words.stderr
    assert f"Repository switch: {repo / REPOSITORY_SWITCH_FILE} says memories off" in words.stdout
    assert "Sessions here get none of what follows." in words.stdout
    assert json.loads(machine.stdout)["repository_switch"] == {"mode": "off", "path": str(repo / REPOSITORY_SWITCH_FILE), "problem": None}


def test_inject_prints_nothing_in_a_repository_that_is_off_and_says_why_on_stderr(tmp_path: Path) -> None:
    home = home_with_memory(tmp_path)
    repo = repository(tmp_path, 'memories = "off"\n')
    other = tmp_path / "elsewhere"
    other.mkdir()

    off = home.cli("inject", "--cwd", str(repo))
    on = home.cli("inject", "--cwd", str(other))

    assert (off.returncode, off.stdout) == (0, "")
    assert "Nothing is injected here" in off.stderr and str(repo / REPOSITORY_SWITCH_FILE) in off.stderr
    assert "KITE-2024" in on.stdout


def test_status_names_the_switch_of_the_folder_it_runs_in(tmp_path: Path) -> None:
    home = home_with_memory(tmp_path)
    (home.root / REPOSITORY_SWITCH_FILE).write_text('memories = "user-only"\n', encoding="utf-8")

    words = home.cli("status")

    assert words.returncode == 0, words.stderr
    line = next(line for line in words.stdout.splitlines() if line.startswith("this folder:"))
    assert str(home.root / REPOSITORY_SWITCH_FILE) in line and "user-level memories only" in line
