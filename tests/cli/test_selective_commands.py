"""`codex-memories export`, `forget --project/--match [--dry-run]` and `rebuild`, as a user runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.runtime import close_stores
from tests.support.memory_home import MemoryHome, remember

APP = "git@github.com:acme/app.git"


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    """Two memories of github.com/acme/app in the state DB and in a memory folder (written the
    way phase 1 and 2 write them; the flows have their own tests)."""
    home = MemoryHome(tmp_path)
    store = home.store
    remember(store, "thread-a", raw_memory="Preference signals:\n- always use pnpm for installs (ZEBRA-417)\n", git_origin_url=APP, cwd="/w")
    remember(store, "thread-b", raw_memory="Preference signals:\n- keep tabs in Makefiles (OTTER-902)\n", git_origin_url=APP, cwd="/w")
    close_stores()
    home.memory_root.mkdir()
    (home.memory_root / paths.MEMORY_FILE).write_text("# Memory\n- always use pnpm (ZEBRA-417)\n- keep tabs (OTTER-902)\n", encoding="utf-8")
    (home.memory_root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n\n- pnpm, ZEBRA-417\n", encoding="utf-8")
    return home


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/app.git\n', encoding="utf-8")
    return repo


def test_export_writes_the_team_file_and_a_second_export_changes_nothing(home: MemoryHome, repository: Path) -> None:
    first = home.cli("export", "--project", str(repository))
    assert first.returncode == 0, first.stderr
    team_file = repository / paths.TEAM_MEMORY_FILE
    assert f"{team_file}: written" in first.stdout and "of github.com/acme/app" in first.stdout
    text = team_file.read_text(encoding="utf-8")
    assert "ZEBRA-417" in text and "OTTER-902" in text
    second = home.cli("export", "--project", str(repository))
    assert second.returncode == 0 and f"{team_file}: unchanged" in second.stdout
    assert team_file.read_text(encoding="utf-8") == text


def test_forget_match_dry_run_lists_exactly_what_the_real_run_removes(home: MemoryHome) -> None:
    before = home.memory_text()
    dry = home.cli("forget", "--match", "zebra-417", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert home.memory_text() == before  # a dry run changes nothing
    listed = [line for line in dry.stdout.splitlines() if line.startswith("  ")]
    assert any(line.startswith("  MEMORY.md:") for line in listed)
    assert any("stage-1 output of thread" in line for line in listed)

    real = home.cli("forget", "--match", "zebra-417")
    assert real.returncode == 0, real.stderr
    assert [line for line in real.stdout.splitlines() if line.startswith("  ")] == listed
    assert "ZEBRA-417" not in home.memory_text() and "OTTER-902" in home.memory_text()
    assert home.store.stage1_outputs_containing("ZEBRA-417") == []
    assert "nothing to forget" in home.cli("forget", "--match", "zebra-417", "--dry-run").stdout


def test_forget_project_dry_run_then_real_run(home: MemoryHome, repository: Path) -> None:
    dry = home.cli("forget", "--project", str(repository), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    listed = [line for line in dry.stdout.splitlines() if line.startswith("  thread ")]
    assert len(listed) == 2 and all("enabled -> disabled" in line for line in listed)
    real = home.cli("forget", "--project", "github.com/acme/app")
    assert real.returncode == 0, real.stderr
    assert [line for line in real.stdout.splitlines() if line.startswith("  thread ")] == listed
    assert "nothing to forget" in home.cli("forget", "--project", str(repository)).stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--thread", "x", "--match", "pnpm"], "give exactly one of --thread, --project, --match (got --thread, --match)"),
        ([], "give exactly one of --thread, --project, --match"),
        (["--match", "ab"], "at least 3 characters"),
    ],
)
def test_forget_refuses_an_unclear_request(home: MemoryHome, arguments: list[str], message: str) -> None:
    result = home.cli("forget", *arguments)
    assert result.returncode == 1 and message in result.stderr


def test_rebuild_refuses_an_object_store_root_before_starting_anything(tmp_path: Path) -> None:
    result = MemoryHome(tmp_path).cli("rebuild", "--memory-root", "s3://bucket/memories")
    assert result.returncode == 1
    assert "rebuild needs a local memory folder; s3://bucket/memories is an object-store URL" in result.stderr


def test_a_forget_edits_the_exported_team_file_and_says_so(home: MemoryHome, repository: Path) -> None:
    remember(home.store, "thread-c", raw_memory="Preference signals:\n- run make lint before pushing (LYNX-55)\n", git_origin_url=APP, cwd=str(repository))
    close_stores()
    assert home.cli("export", "--project", str(repository)).returncode == 0
    team_file = repository / paths.TEAM_MEMORY_FILE
    assert "LYNX-55" in team_file.read_text(encoding="utf-8")

    dry = home.cli("forget", "--match", "lynx-55", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"  team memory file {team_file}: 1 generated line(s) removed" in dry.stdout.splitlines()
    assert "LYNX-55" in team_file.read_text(encoding="utf-8")  # a dry run changes nothing

    real = home.cli("forget", "--match", "lynx-55")
    assert real.returncode == 0, real.stderr
    assert f"  team memory file {team_file}: 1 generated line(s) removed" in real.stdout.splitlines()
    text = team_file.read_text(encoding="utf-8")
    assert "LYNX-55" not in text and "ZEBRA-417" in text and "OTTER-902" in text


def test_a_text_only_in_record_lines_is_nothing_to_forget_and_the_command_says_why(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    remember(home.store, "t-falcon", raw_memory="project_key: github.com/acme/falcon-api\n- keep tabs\n", cwd="/src/falcon-api",
             rollout_slug=None)
    close_stores()

    result = home.cli("forget", "--match", "falcon")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "nothing to forget: no memory line or name holding 'falcon' can go",
        (
            "  stage-1 output of thread t-falcon, raw_memory:1: project_key: github.com/acme/falcon-api"
            "  (kept: it says where a memory comes from or which project it belongs to)"
        ),
        (
            "  not changed: 1 session folder(s) hold the text (/src/falcon-api); the lines that record a session's folder or "
            "project keep it, and phase 2 writes them again from the session's record: `codex-memories forget --project <folder>` "
            "forgets those sessions"
        ),
    ]
    assert home.store.list_forget_audit() == []
