"""`run` with a state DB the memory folder was not built with, or a folder that refuses writes:
one line, exit 2, nothing extracted and nothing created (issue 36, items 4, 5 and 7)."""

from __future__ import annotations

from pathlib import Path

from codex_memories.memory_folder.identity import check_memory_folder
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalMemoryRoot
from tests.support.memory_home import MemoryHome


def test_run_with_a_mistyped_state_db_path_is_refused_in_one_line_and_creates_nothing(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    home.rollout("from now on always use pnpm")
    with MemoryStore.open(home.db_url) as store:
        check_memory_folder(store, LocalMemoryRoot(home.memory_root), rebuild=False, db_shown="x")
    typo = tmp_path / "sate.sqlite"

    result = home.cli("run", "--local", "--provider", "heuristic", environment={"CODEX_MEMORIES_DB_URL": f"sqlite:///{typo}"})

    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "--rebuild-state" in line and "does not exist yet" in line
    assert not typo.exists()


def test_the_state_db_password_never_shows_in_a_refusal(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    home.rollout("from now on always use pnpm")
    url = "postgresql://memories:s3cret-pw@127.0.0.1:1/memories"

    result = home.cli("run", "--local", "--provider", "heuristic", environment={"CODEX_MEMORIES_DB_URL": url})

    assert result.returncode != 0
    assert "s3cret-pw" not in result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
