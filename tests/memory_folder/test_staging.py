"""The staging copy phase 2 works in, and its publish into the live folder (memory_folder.staging)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codex_memories.memory_folder import staging
from codex_memories.memory_folder.staging import (
    StagedWorkspace,
    copy_tree,
    live_folder_is_ready,
    live_tree_is_clean,
    publish,
    remove_stale_staging,
    resolve_live_folder,
    staging_path,
)
from codex_memories.memory_folder.workspace import (
    UnsafeMemoryRootError,
    prepare_workspace,
    reset_baseline,
    workspace_diff,
)
from codex_memories.sandbox import SandboxedFolder
from codex_memories.storage import open_memory_root


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under `root`, `.git/` included."""
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file() and not path.is_symlink()}


@pytest.fixture
def live(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    prepare_workspace(root)
    (root / "MEMORY.md").write_text("# Task Group: old\n", encoding="utf-8")
    (root / "memory_summary.md").write_text("v1\n\nold summary\n", encoding="utf-8")
    (root / "rollout_summaries" / "a.md").write_text("summary a\n", encoding="utf-8")
    reset_baseline(root)
    return root


def consolidate_in(path: Path) -> None:
    """What a consolidator does: new detail file, one removed, both top files rewritten."""
    (path / "rollout_summaries" / "b.md").write_text("summary b\n", encoding="utf-8")
    (path / "rollout_summaries" / "a.md").unlink()
    (path / "MEMORY.md").write_text("# Task Group: new\n", encoding="utf-8")
    (path / "memory_summary.md").write_text("v1\n\nnew summary\n", encoding="utf-8")
    reset_baseline(path)


def test_a_ready_live_folder_is_checked_read_only_and_a_clean_one_is_not_copied(live: Path) -> None:
    before = tree(live)
    assert live_folder_is_ready(live) and live_tree_is_clean(live)
    workspace = StagedWorkspace(open_memory_root(live), "token-1")
    workspace.pull()
    assert not workspace.staged and workspace.path == live and not workspace.writable
    assert tree(live) == before  # not one byte, not even git's index
    (live / "MEMORY.md").write_text("# Task Group: user edit\n", encoding="utf-8")
    assert not live_tree_is_clean(live)
    (live / "rollout_summaries" / "ignored.md").write_text("x\n", encoding="utf-8")
    (live / ".gitignore").write_text("ignored.md\n", encoding="utf-8")
    assert {"rollout_summaries/ignored.md", ".gitignore", "MEMORY.md"} <= set(staging.tree_status(live))


def test_a_live_folder_that_needs_preparing_is_staged_at_once(live: Path) -> None:
    (live / "extensions" / "ad_hoc" / "instructions.md").unlink()
    workspace = StagedWorkspace(open_memory_root(live), "token-1")
    workspace.pull()
    assert workspace.staged and workspace.path == staging_path(live, "token-1")
    assert workspace.path.parent == live.parent and workspace.path.name.startswith(".memories.staging-")
    assert not (live / "extensions" / "ad_hoc" / "instructions.md").exists()


def test_publish_exchanges_the_directories_and_removes_the_old_tree(live: Path) -> None:
    copy = staging_path(live, "t")
    snapshot = copy_tree(live, copy)
    assert tree(copy) == tree(live)  # baseline included
    assert os.stat(copy / "MEMORY.md").st_mtime_ns == os.stat(live / "MEMORY.md").st_mtime_ns
    consolidate_in(copy)
    expected = tree(copy)

    result = publish(copy, live, snapshot)

    assert result.published and result.method == "exchange"
    assert tree(live) == expected
    assert not copy.exists()
    assert not workspace_diff(live).changes  # the published baseline matches the published tree


def test_publish_refuses_when_the_live_folder_changed_since_the_copy(live: Path) -> None:
    copy = staging_path(live, "t")
    snapshot = copy_tree(live, copy)
    consolidate_in(copy)
    notes = live / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    (notes / "2026-12-01T10-00-00-use-pnpm.md").write_text("use pnpm\n", encoding="utf-8")
    before = tree(live)

    result = publish(copy, live, snapshot)

    assert not result.published
    assert result.changed_meanwhile == ["extensions/ad_hoc/notes/2026-12-01T10-00-00-use-pnpm.md"]
    assert tree(live) == before


def test_a_write_that_slips_in_just_before_the_exchange_swaps_the_trees_back(live: Path, monkeypatch) -> None:
    copy = staging_path(live, "t")
    snapshot = copy_tree(live, copy)
    consolidate_in(copy)
    real_exchange = staging.exchange_directories
    calls = []

    def late_writer(first: Path, second: Path) -> bool:
        if not calls:  # a note lands between the last check and the exchange
            (live / "MEMORY.md").write_text("# Task Group: user edit\n", encoding="utf-8")
        calls.append((first, second))
        return real_exchange(first, second)

    monkeypatch.setattr(staging, "exchange_directories", late_writer)
    result = publish(copy, live, snapshot)
    assert not result.published and result.changed_meanwhile == ["MEMORY.md"]
    assert len(calls) == 2
    assert (live / "MEMORY.md").read_text() == "# Task Group: user edit\n"
    assert (copy / "MEMORY.md").read_text() == "# Task Group: new\n"


def test_without_an_exchange_files_are_replaced_summary_last_deletions_after(live: Path, monkeypatch) -> None:
    copy = staging_path(live, "t")
    snapshot = copy_tree(live, copy)
    consolidate_in(copy)
    expected = tree(copy)
    staged_mtime = os.stat(copy / "MEMORY.md").st_mtime_ns
    monkeypatch.setattr(staging, "exchange_directories", lambda first, second: False)
    order: list[str] = []
    real_write, real_delete = SandboxedFolder.write_bytes, SandboxedFolder.delete

    def record_write(self, path, data, **kwargs):
        if self.path == live:
            order.append(f"write {path}")
        return real_write(self, path, data, **kwargs)

    def record_delete(self, path, missing_ok=False):
        if self.path == live and not path.startswith(".git/"):
            order.append(f"delete {path}")
        return real_delete(self, path, missing_ok=missing_ok)

    monkeypatch.setattr(SandboxedFolder, "write_bytes", record_write)
    monkeypatch.setattr(SandboxedFolder, "delete", record_delete)

    result = publish(copy, live, snapshot)

    assert result.published and result.method == "file_by_file"
    assert tree(live) == expected
    content = [step for step in order if not step.startswith("write .git/")]
    assert content == [
        "write rollout_summaries/b.md",
        "write MEMORY.md",
        "write memory_summary.md",
        "delete rollout_summaries/a.md",
    ]
    git_writes = [step for step in order if step.startswith("write .git/")]
    assert git_writes[-1] in ("write .git/refs/heads/main", "write .git/HEAD")
    assert order.index(content[-1]) < order.index(git_writes[0])  # the baseline after the files
    assert not workspace_diff(live).changes
    # The sync record's mtimes still match: a no-change rerun copies nothing.
    assert os.stat(live / "MEMORY.md").st_mtime_ns == staged_mtime


def test_a_symlinked_root_publishes_into_its_target(tmp_path: Path, live: Path) -> None:
    link = tmp_path / "relocated"
    link.symlink_to(live, target_is_directory=True)
    assert resolve_live_folder(link) == live
    workspace = StagedWorkspace(open_memory_root(link), "t")
    workspace.stage()
    assert workspace.path.parent == live.parent
    consolidate_in(workspace.path)
    workspace.push()
    assert workspace.published and link.is_symlink()
    assert (link / "MEMORY.md").read_text() == "# Task Group: new\n"


def test_the_copy_leaves_symlinks_out_and_refuses_hard_links(tmp_path: Path, live: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret outside\n", encoding="utf-8")
    (live / "skills").mkdir()
    (live / "skills" / "link.md").symlink_to(outside)
    snapshot = copy_tree(live, staging_path(live, "a"))
    assert snapshot.skipped_symlinks == ["skills/link.md"]
    assert not (staging_path(live, "a") / "skills" / "link.md").exists()

    os.link(outside, live / "skills" / "hard.md")
    with pytest.raises(UnsafeMemoryRootError, match="hard link"):
        copy_tree(live, staging_path(live, "b"))


def test_stale_staging_copies_of_dead_runs_are_removed_and_nothing_else(tmp_path: Path, live: Path) -> None:
    stale = staging_path(live, "dead-run")
    copy_tree(live, stale)
    other = tmp_path / ".other.staging-x"
    other.mkdir()
    assert remove_stale_staging(live) == [stale]
    assert not stale.exists() and other.exists() and live.is_dir()


def test_a_memory_root_that_is_a_file_is_refused_and_kept(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    root.write_text("not a folder\n", encoding="utf-8")
    workspace = StagedWorkspace(open_memory_root(root), "t")
    with pytest.raises(UnsafeMemoryRootError, match="not a directory"):
        workspace.pull()
    assert root.read_text(encoding="utf-8") == "not a folder\n"
    assert not staging_path(root, "t").exists()
