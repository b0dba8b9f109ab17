"""A memory folder knows which state DB built it (issue 36, item 4): a fresh or different DB is
refused before it re-extracts every session into the folder, unless the user asks to rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.forget.manual import reset_memories
from codex_memories.memory_folder.identity import BindingOutcome, StateDbMismatch, check_memory_folder, check_state_binding
from codex_memories.state.store import MemoryStore
from codex_memories.storage import STATE_BINDING_PATH, LocalMemoryRoot, open_memory_root
from tests.support.memory_home import remember


def open_store(path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{path}")


def check(store: MemoryStore, root, *, rebuild: bool = False) -> BindingOutcome:
    return check_memory_folder(store, root, rebuild=rebuild, db_shown="the given state DB")


def test_a_new_folder_is_bound_to_the_first_state_db_and_then_recognises_it(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    store = open_store(tmp_path / "state.sqlite")
    assert check(store, root) is BindingOutcome.first_bound
    assert check(store, root) is BindingOutcome.bound
    assert store.state_identity() in root.read_text(STATE_BINDING_PATH)


def test_a_fresh_state_db_against_a_bound_folder_is_refused_with_one_sentence(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    check(open_store(tmp_path / "state.sqlite"), root)
    typo = open_store(tmp_path / "sate.sqlite")
    with pytest.raises(StateDbMismatch) as refused:
        check(typo, root)
    message = str(refused.value)
    assert "\n" not in message and "a new state DB that has never run" in message and "--rebuild-state" in message


def test_another_used_state_db_against_a_bound_folder_is_refused(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    check(open_store(tmp_path / "a.sqlite"), root)
    other = open_store(tmp_path / "b.sqlite")
    remember(other, "t1")
    with pytest.raises(StateDbMismatch, match="another state DB"):
        check(other, root)


def test_rebuild_state_binds_the_folder_to_the_new_db(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    check(open_store(tmp_path / "a.sqlite"), root)
    new = open_store(tmp_path / "b.sqlite")
    assert check(new, root, rebuild=True) is BindingOutcome.rebound
    assert check(new, root) is BindingOutcome.bound


def test_a_folder_from_before_the_binding_refuses_a_fresh_db_but_binds_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / paths.ROLLOUT_SUMMARIES_DIR).mkdir(parents=True)
    (folder / paths.MEMORY_FILE).write_text("- prefers pnpm\n")
    root = LocalMemoryRoot(folder)
    with pytest.raises(StateDbMismatch):
        check(open_store(tmp_path / "fresh.sqlite"), root)
    used = open_store(tmp_path / "used.sqlite")
    remember(used, "t1")
    assert check(used, root) is BindingOutcome.first_bound


def test_notes_written_before_any_run_do_not_make_a_folder_refuse_its_first_db(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    root.write_text(paths.ad_hoc_instructions_path(), "notes go here\n")
    assert check(open_store(tmp_path / "state.sqlite"), root) is BindingOutcome.first_bound


def test_a_reset_keeps_the_binding_and_the_db_keeps_its_identity(tmp_path: Path) -> None:
    root = LocalMemoryRoot(tmp_path / "memories")
    store = open_store(tmp_path / "state.sqlite")
    remember(store, "t1")
    check(store, root)
    root.write_text(paths.MEMORY_FILE, "- prefers pnpm\n")
    reset_memories(store, root)
    assert check(store, root) is BindingOutcome.bound


def test_an_object_store_root_is_bound_like_a_local_one(tmp_path: Path) -> None:
    root = open_memory_root("memory://binding-test/memories")
    store = open_store(tmp_path / "state.sqlite")
    assert check_state_binding(store, root, rebuild=False, db_shown="x") is BindingOutcome.first_bound
    with pytest.raises(StateDbMismatch):
        check_state_binding(open_store(tmp_path / "other.sqlite"), root, rebuild=False, db_shown="x")


def test_a_state_db_path_that_does_not_exist_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    from codex_memories.memory_folder.identity import check_missing_state_db

    root = LocalMemoryRoot(tmp_path / "memories")
    check(open_store(tmp_path / "state.sqlite"), root)
    with pytest.raises(StateDbMismatch, match="does not exist yet"):
        check_missing_state_db(root, rebuild=False, db_shown="sqlite:///typo.sqlite")
    check_missing_state_db(root, rebuild=True, db_shown="sqlite:///typo.sqlite")  # asked for
    check_missing_state_db(LocalMemoryRoot(tmp_path / "new-folder"), rebuild=False, db_shown="x")  # nothing to protect
