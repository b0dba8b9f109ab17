from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from codex_memories.paths import baseline_archive_path
from codex_memories.storage import (
    Entry,
    FsspecMemoryRoot,
    LocalMemoryRoot,
    LocalWorkspace,
    MemoryRoot,
    UnsafePathError,
    check_relative_path,
    open_memory_root,
)


@pytest.fixture(params=["local", "memory"])
def root(request, tmp_path) -> MemoryRoot:
    if request.param == "local":
        return open_memory_root(tmp_path / "root")
    return open_memory_root(f"memory://tests-{uuid.uuid4().hex}/root")


def test_open_memory_root_picks_a_backend_from_the_address(tmp_path):
    assert isinstance(open_memory_root(tmp_path), LocalMemoryRoot)
    assert isinstance(open_memory_root(str(tmp_path)), LocalMemoryRoot)
    assert open_memory_root(f"file://{tmp_path}").local_path == tmp_path
    memory = open_memory_root("memory://bucket/prefix")
    assert isinstance(memory, FsspecMemoryRoot)
    assert memory.local_path is None
    assert memory.url == "memory://bucket/prefix"
    assert open_memory_root(memory) is memory


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/.", "a\\b", "a/"])
def test_paths_that_are_not_plain_relative_paths_are_rejected(path, root):
    with pytest.raises(UnsafePathError):
        check_relative_path(path)
    with pytest.raises(UnsafePathError):
        root.write_text(path, "x")
    with pytest.raises(UnsafePathError):
        root.read_text(path)


def test_text_round_trips_and_creates_parent_folders(root):
    root.write_text("a/b/c.md", "café\n")
    assert root.read_text("a/b/c.md") == "café\n"
    assert root.read_bytes("a/b/c.md") == "café\n".encode()
    assert root.is_file("a/b/c.md")
    assert root.is_dir("a/b")
    assert root.is_dir(None)
    assert root.exists("a/b/c.md")
    assert not root.exists("a/b/missing.md")
    assert not root.is_symlink("a/b/c.md")


def test_write_replaces_existing_content(root):
    root.write_text("MEMORY.md", "one")
    root.write_text("MEMORY.md", "two")
    assert root.read_text("MEMORY.md") == "two"


def test_create_new_refuses_to_overwrite(root):
    root.create_new_text("extensions/ad_hoc/instructions.md", "first")
    with pytest.raises(FileExistsError):
        root.create_new_text("extensions/ad_hoc/instructions.md", "second")
    assert root.read_text("extensions/ad_hoc/instructions.md") == "first"


def test_list_dir_is_sorted_and_shallow(root):
    root.write_text("b.txt", "b")
    root.write_text("a.txt", "a")
    root.write_text("a/inner.md", "x")
    assert root.list_dir() == [
        Entry("a", "a", "dir"),
        Entry("a.txt", "a.txt", "file"),
        Entry("b.txt", "b.txt", "file"),
    ]
    assert root.list_dir("a") == [Entry("inner.md", "a/inner.md", "file")]
    with pytest.raises(FileNotFoundError):
        root.list_dir("missing")


def test_walk_files_skips_internal_folders_unless_asked(root):
    root.write_text("MEMORY.md", "m")
    root.write_text("rollout_summaries/x.md", "x")
    root.write_text(".git/HEAD", "ref")
    root.write_text(baseline_archive_path(), "tar")
    assert root.walk_files() == ["MEMORY.md", "rollout_summaries/x.md"]
    assert root.walk_files(exclude_git=False) == [
        ".codex-memories/baseline.tar",
        ".git/HEAD",
        "MEMORY.md",
        "rollout_summaries/x.md",
    ]
    assert root.file_sizes() == {"MEMORY.md": 1, "rollout_summaries/x.md": 1}


def test_delete_and_delete_tree(root):
    root.write_text("a/b/c.md", "c")
    root.write_text("a/d.md", "d")
    root.delete("a/d.md")
    assert not root.exists("a/d.md")
    with pytest.raises(FileNotFoundError):
        root.delete("a/d.md")
    root.delete("a/d.md", missing_ok=True)
    with pytest.raises(IsADirectoryError):
        root.delete("a/b")
    root.delete_tree("a")
    assert not root.exists("a/b/c.md")
    root.delete_tree("a")
    with pytest.raises(FileNotFoundError):
        root.delete_tree("a", missing_ok=False)


def test_makedirs_is_idempotent(root):
    root.makedirs("rollout_summaries")
    root.makedirs("rollout_summaries")
    assert root.is_dir("rollout_summaries")


def test_local_write_leaves_no_temporary_file_and_keeps_permissions(tmp_path):
    root = LocalMemoryRoot(tmp_path)
    root.write_text("skills/tool/run.sh", "#!/bin/sh\n")
    os.chmod(tmp_path / "skills/tool/run.sh", 0o755)
    root.write_text("skills/tool/run.sh", "#!/bin/sh\necho hi\n")
    assert os.stat(tmp_path / "skills/tool/run.sh").st_mode & 0o777 == 0o755
    assert sorted(os.listdir(tmp_path / "skills/tool")) == ["run.sh"]


def test_local_root_never_goes_through_a_symlinked_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    root_dir = tmp_path / "root"
    root_dir.mkdir()
    (root_dir / "extensions").symlink_to(outside)
    root = LocalMemoryRoot(root_dir)
    with pytest.raises(UnsafePathError):
        root.write_text("extensions/new.md", "x")
    with pytest.raises(UnsafePathError):
        root.read_text("extensions/secret.md")
    with pytest.raises(UnsafePathError):
        root.create_new_text("extensions/ad_hoc/instructions.md", "x")
    assert sorted(os.listdir(outside)) == ["secret.md"]


def test_local_root_reports_symlinks_and_does_not_follow_them(tmp_path):
    (tmp_path / "target.md").write_text("target")
    (tmp_path / "real.md").write_text("real")
    (tmp_path / "link.md").symlink_to(tmp_path / "target.md")
    (tmp_path / "loop").symlink_to(tmp_path)
    root = LocalMemoryRoot(tmp_path)
    assert root.is_symlink("link.md")
    assert not root.is_file("link.md")
    assert root.exists("link.md")
    assert Entry("link.md", "link.md", "symlink") in root.list_dir()
    assert root.walk_files() == ["real.md", "target.md"]
    with pytest.raises(UnsafePathError):
        root.read_text("link.md")
    root.delete("link.md")
    assert (tmp_path / "target.md").read_text() == "target"


def test_memory_root_is_never_a_symlink_on_object_stores():
    root = open_memory_root(f"memory://tests-{uuid.uuid4().hex}/root")
    root.write_text("a.md", "a")
    assert not root.is_symlink("a.md")


def _remote_root() -> MemoryRoot:
    return open_memory_root(f"memory://tests-{uuid.uuid4().hex}/memories")


def test_local_workspace_of_a_local_root_is_the_root_itself(tmp_path):
    workspace = LocalWorkspace(open_memory_root(tmp_path))
    workspace.pull()
    assert workspace.path == tmp_path
    assert not workspace.is_mirror
    assert workspace.push().uploaded == []


def test_object_store_workspace_needs_a_scratch_directory():
    with pytest.raises(ValueError):
        LocalWorkspace(_remote_root())


def test_pull_then_push_round_trips_files_deletions_and_baseline(tmp_path):
    remote = _remote_root()
    remote.write_text("MEMORY.md", "memory")
    remote.write_text("rollout_summaries/keep.md", "keep")
    remote.write_text("rollout_summaries/drop.md", "drop")
    workspace = LocalWorkspace(remote, tmp_path / "scratch")
    workspace.pull()
    local = workspace.path
    assert (local / "MEMORY.md").read_text() == "memory"
    assert not (local / ".codex-memories").exists()

    (local / "rollout_summaries/drop.md").unlink()
    (local / "MEMORY.md").write_text("memory, edited")
    (local / "skills/tool").mkdir(parents=True)
    (local / "skills/tool/run.sh").write_text("#!/bin/sh\n")
    os.chmod(local / "skills/tool/run.sh", 0o755)
    (local / ".git").mkdir()
    (local / ".git/HEAD").write_text("ref: refs/heads/main\n")

    result = workspace.push()
    assert result.uploaded == ["MEMORY.md", "skills/tool/run.sh"]
    assert result.deleted == ["rollout_summaries/drop.md"]
    assert result.baseline_uploaded
    assert remote.walk_files() == ["MEMORY.md", "rollout_summaries/keep.md", "skills/tool/run.sh"]
    assert remote.read_text("MEMORY.md") == "memory, edited"
    assert remote.is_file(baseline_archive_path())
    assert workspace.push().uploaded == []

    second = LocalWorkspace(remote, tmp_path / "second")
    second.pull()
    assert (second.path / ".git/HEAD").read_text() == "ref: refs/heads/main\n"
    assert os.stat(second.path / "skills/tool/run.sh").st_mode & 0o100
    assert not os.stat(second.path / "MEMORY.md").st_mode & 0o100


def test_pull_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "leftover.md").write_text("x")
    with pytest.raises(FileExistsError):
        LocalWorkspace(_remote_root(), tmp_path).pull()


def test_push_before_pull_is_an_error(tmp_path):
    with pytest.raises(RuntimeError):
        LocalWorkspace(_remote_root(), tmp_path).push()


def test_path_objects_are_accepted(tmp_path):
    root = open_memory_root(Path(tmp_path))
    root.write_text("x.md", "x")
    assert (tmp_path / "x.md").read_text() == "x"
