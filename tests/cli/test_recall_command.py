"""`codex-memories recall` as a user runs it: the short way and the full CLI print the same, and
recall says why nothing came back when another project holds the answer (issues 27 and 30)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories_cli.launcher import fast_recall_request
from tests.support.memory_folder import ATLAS, BILLING, write_memory_folder

SCRIPT = Path(sys.executable).with_name("codex-memories")
FULL_CLI = [sys.executable, "-m", "codex_memories_cli.main"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_memory_folder(tmp_path / "memories")


def run(command: list[str], tmp_path: Path, *arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))}
    environment["HOME"] = str(tmp_path / "user-home")
    environment.update(env or {})
    return subprocess.run([*command, "recall", *arguments], capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=120, check=False)


@pytest.mark.parametrize(
    "arguments",
    [
        ("--query", "how do I release to prod?", "--cwd", ATLAS),
        ("--query", "how do I release to prod?", "--cwd", ATLAS, "--json", "--limit", "2"),
        ("--query", "int64 cents for money amounts", "--cwd", ATLAS),
        ("--query", "int64 cents for money amounts", "--cwd", ATLAS, "--all-projects"),
        ("--query", "int64 cents for money amounts", "--cwd", ATLAS, "--why"),
        ("--query", "   ", "--cwd", ATLAS),
    ],
)
def test_the_short_way_and_the_full_cli_print_the_same(folder: Path, tmp_path: Path, arguments: tuple[str, ...]) -> None:
    location = ("--memory-root", str(folder), "--codex-home", str(tmp_path / "codex-home"))

    short = run([str(SCRIPT)], tmp_path, *arguments, *location)
    full = run(FULL_CLI, tmp_path, *arguments, *location)

    assert (short.returncode, short.stdout, short.stderr) == (full.returncode, full.stdout, full.stderr)


def test_nothing_for_this_project_says_that_another_projects_lines_match(folder: Path, tmp_path: Path) -> None:
    result = run([str(SCRIPT)], tmp_path, "--query", "int64 cents for money amounts", "--cwd", ATLAS, "--memory-root", str(folder))

    assert result.returncode == 0 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"codex-memories: nothing for {ATLAS};") and "--all-projects" in line


def test_why_names_the_gate_decision_and_the_other_projects_line(folder: Path, tmp_path: Path) -> None:
    result = run([str(SCRIPT)], tmp_path, "--query", "int64 cents for money amounts", "--cwd", ATLAS, "--memory-root", str(folder), "--why")

    assert "why: the gate" in result.stderr or "every word" in result.stderr
    assert f"not shown, another project's ({BILLING})" in result.stderr and "int64 cents" in result.stderr


def test_all_projects_shows_the_other_projects_line_after_this_ones(folder: Path, tmp_path: Path) -> None:
    result = run([str(SCRIPT)], tmp_path, "--query", "int64 cents for money amounts", "--cwd", ATLAS, "--memory-root", str(folder), "--all-projects")

    assert "int64 cents" in result.stdout and f"[{BILLING}]" in result.stdout


def test_the_short_way_imports_neither_typer_nor_the_settings_tree(folder: Path, tmp_path: Path) -> None:
    code = (
        "import sys; from codex_memories_cli import launcher; "
        f"sys.argv = ['codex-memories', 'recall', '--query', 'how do I release to prod?', '--cwd', {ATLAS!r}, '--memory-root', {str(folder)!r}]; "
        "import atexit; atexit.register(lambda: print([m for m in ('typer', 'rich', 'pydantic', 'codex_memories.settings', 'prefect') if m in sys.modules], file=sys.stderr)); "
        "launcher.main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "HOME": str(tmp_path)}, timeout=120, check=False)

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
    assert "make ship-prod" in result.stdout


@pytest.mark.parametrize(
    ("argv", "environment", "takes_the_short_way"),
    [
        (["recall", "--query", "q"], {}, True),
        (["recall", "--query=q", "--limit=3", "--json"], {"CODEX_MEMORIES_MEMORY_ROOT": "/m"}, True),
        (["recall", "--query", "q", "--config-file", "/x.toml"], {}, False),  # only the settings tree reads our TOML
        (["recall", "--query", "q"], {"CODEX_MEMORIES_CONFIG_FILE": "/x.toml"}, False),
        (["recall", "--query", "q"], {"CODEX_MEMORIES_PROVIDER": "gpt"}, False),  # a setting the tree must validate
        (["recall", "--query", "q", "--help"], {}, False),
        (["recall", "--query", "q", "--query", "r"], {}, False),
        (["recall", "--query", "q", "--limit", "many"], {}, False),
        (["recall", "--query", "q", "--memory-root", "s3://bucket/memories"], {}, False),
        (["status"], {}, False),
    ],
)
def test_the_short_way_is_taken_only_when_no_other_setting_can_apply(tmp_path: Path, argv: list[str], environment: dict[str, str], takes_the_short_way: bool) -> None:
    environment = {"CODEX_HOME": str(tmp_path / "codex-home"), **environment}

    assert (fast_recall_request(argv, environment) is not None) is takes_the_short_way


def test_the_memory_folder_follows_the_settings_precedence(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"

    assert fast_recall_request(["recall", "--query", "q"], {"CODEX_HOME": str(home)}).root == home / "memories"  # type: ignore[union-attr]
    assert fast_recall_request(["recall", "--query", "q", "--codex-home", str(tmp_path)], {"CODEX_HOME": str(home)}).root == tmp_path / "memories"  # type: ignore[union-attr]
    assert fast_recall_request(["recall", "--query", "q"], {"CODEX_HOME": str(home), "CODEX_MEMORIES_MEMORY_ROOT": "/m"}).root == Path("/m")  # type: ignore[union-attr]
    assert fast_recall_request(["recall", "--query", "q", "--memory-root", "/r"], {"CODEX_MEMORIES_MEMORY_ROOT": "/m"}).root == Path("/r")  # type: ignore[union-attr]
    home.mkdir()
    (home / "codex-memories.toml").write_text('memory_root = "/elsewhere"\n', encoding="utf-8")
    assert fast_recall_request(["recall", "--query", "q"], {"CODEX_HOME": str(home)}) is None
