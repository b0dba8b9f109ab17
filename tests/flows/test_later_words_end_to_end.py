"""Later words win end to end (issue 34, item 3): sessions in two folders of one repository and
user-level rules go through the real phase-1 and phase-2 flows (offline heuristic provider); the
replaced values never reach a new session, the newer ones do."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.read.injection import build_session_context
from tests.support.memory_home import MemoryHome

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

ORIGIN = "git@github.com:acme/shop.git"
OLD_NODE = "In this repo use Node 18 for local builds."
NEW_NODE = "In this repo use Node 20 for local builds."
OLD_MANAGER = "In all my projects, use pnpm to install packages."
NEW_MANAGER = "In all my projects, use bun to install packages."


def make_repository(path: Path, origin: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("later-words")
    home = MemoryHome(base / "home")
    main_checkout = make_repository(base / "src" / "shop", ORIGIN)
    other_checkout = make_repository(base / "work" / "shop-hotfix", ORIGIN)
    # The newer statements are said in another folder of the same repository.
    home.rollout(OLD_NODE, OLD_MANAGER, cwd=str(main_checkout), repository_url=ORIGIN, days_ago=6)
    home.rollout(NEW_NODE, NEW_MANAGER, cwd=str(other_checkout / "api"), repository_url=ORIGIN, days_ago=1)
    home.phase1()
    home.phase2()
    return home, main_checkout


def test_both_statements_were_extracted_so_phase_2_had_to_choose(world):
    home, _ = world
    raw = (home.memory_root / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8")
    for rule in (OLD_NODE, NEW_NODE, OLD_MANAGER, NEW_MANAGER):
        assert rule in raw


def test_the_offline_consolidation_keeps_only_the_newer_values(world):
    home, _ = world
    for name in (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE):
        text = (home.memory_root / name).read_text(encoding="utf-8")
        assert NEW_NODE in text and NEW_MANAGER in text
        # Not even in the name of the session that said it.
        assert "Node 18" not in text and "pnpm" not in text


def test_a_new_session_in_the_first_folder_gets_the_newer_values_only(world):
    home, main_checkout = world
    context = build_session_context(home.memory_root, cwd=str(main_checkout))
    assert context is not None
    assert NEW_NODE in context.text and NEW_MANAGER in context.text
    assert "Node 18" not in context.text and "pnpm" not in context.text
