"""The one sandboxed-folder primitive: no symlink followed (even one swapped in mid-walk), no hard
link to an outside file read or written, atomic writes that keep permissions and leave nothing
behind on failure, exclusive create, write-if-changed, plain-name hygiene."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from codex_memories import sandbox
from codex_memories.sandbox import (
    HardLinkRefusedError,
    SandboxedFolder,
    SpecialFileRefusedError,
    SymlinkRefusedError,
    UnsafeNameError,
    UnsafePathError,
    check_plain_name,
    split_relative_path,
)

SECRET = "outside secret\n"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[SandboxedFolder, Path, Path]:
    """A root with `sub/inside.md`, and an outside folder holding `secret.md`."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "inside.md").write_text("inside\n")
    (outside / "secret.md").write_text(SECRET)
    (outside / "inside.md").write_text(SECRET)
    return SandboxedFolder(root), root, outside


def temporary_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


# -- links -------------------------------------------------------------------------------------


def test_a_hard_link_to_an_outside_file_is_refused_for_reading_and_writing(layout) -> None:
    folder, root, outside = layout
    os.link(outside / "secret.md", root / "sub" / "linked.md")
    with pytest.raises(HardLinkRefusedError):
        folder.read_bytes("sub/linked.md")
    with pytest.raises(HardLinkRefusedError):
        folder.write_bytes("sub/linked.md", b"overwritten")
    with pytest.raises(HardLinkRefusedError):
        folder.write_if_changed("sub/linked.md", b"overwritten")
    assert (outside / "secret.md").read_text() == SECRET
    assert temporary_files(root / "sub") == []


def test_a_symlink_is_refused_at_every_component(layout) -> None:
    folder, root, outside = layout
    (root / "via").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "file_link.md").symlink_to(outside / "secret.md")
    for operation in (
        lambda: folder.read_bytes("via/secret.md"),
        lambda: folder.read_bytes("sub/file_link.md"),
        lambda: folder.write_bytes("via/new.md", b"x"),
        lambda: folder.write_bytes("sub/file_link.md", b"x"),
        lambda: folder.create_new_bytes("via/new.md", b"x"),
        lambda: folder.makedirs("via/deeper"),
        lambda: folder.list_dir("via"),
        lambda: folder.lstat("via/secret.md"),
    ):
        with pytest.raises(SymlinkRefusedError):
            operation()
    assert sorted(os.listdir(outside)) == ["inside.md", "secret.md"]
    assert (outside / "secret.md").read_text() == SECRET


def test_a_folder_swapped_for_a_symlink_between_check_and_open_is_not_followed(layout, monkeypatch) -> None:
    folder, root, outside = layout
    assert folder.kind("sub/inside.md") == "file"  # the check a caller makes first
    real_open = os.open
    swapped = []

    def open_after_swapping(path, flags, mode=0o777, *, dir_fd=None):
        # The attacker's move lands exactly between the check above and the open of `sub`.
        if path == "sub" and dir_fd is not None and not swapped:
            os.rename(root / "sub", root / "sub-moved")
            os.symlink(outside, root / "sub", target_is_directory=True)
            swapped.append(True)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_after_swapping)
    with pytest.raises(SymlinkRefusedError):
        folder.read_bytes("sub/inside.md")
    with pytest.raises(SymlinkRefusedError):
        folder.write_bytes("sub/inside.md", b"x")
    assert swapped
    assert (outside / "inside.md").read_text() == SECRET


def test_a_file_swapped_for_a_symlink_between_check_and_open_is_not_followed(layout, monkeypatch) -> None:
    folder, root, outside = layout
    assert folder.kind("sub/inside.md") == "file"
    real_open = os.open

    def open_after_swapping(path, flags, mode=0o777, *, dir_fd=None):
        if path == "inside.md" and dir_fd is not None:
            os.unlink(root / "sub" / "inside.md")
            os.symlink(outside / "secret.md", root / "sub" / "inside.md")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_after_swapping)
    with pytest.raises(SymlinkRefusedError):
        folder.read_bytes("sub/inside.md")


def test_a_folder_flipping_to_a_symlink_in_a_loop_never_leaks_outside_content(layout) -> None:
    folder, root, outside = layout
    parked_folder, parked_link = root / "parked-folder", root / "parked-link"
    os.symlink(outside, parked_link, target_is_directory=True)
    stop = threading.Event()

    def flip() -> None:
        # `sub` alternates between the real folder and a symlink to the outside, as fast as it can.
        while not stop.is_set():
            os.rename(root / "sub", parked_folder)
            os.rename(parked_link, root / "sub")
            os.rename(root / "sub", parked_link)
            os.rename(parked_folder, root / "sub")

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes: set[bytes | str] = set()
    try:
        for _ in range(3_000):
            try:
                outcomes.add(folder.read_bytes("sub/inside.md"))
            except SymlinkRefusedError:
                outcomes.add("refused: symlink")
            except FileNotFoundError:
                outcomes.add("missing mid-flip")
    finally:
        stop.set()
        flipper.join()
    assert SECRET.encode() not in outcomes
    assert outcomes <= {b"inside\n", "refused: symlink", "missing mid-flip"}


def test_walk_lists_links_without_entering_them(layout) -> None:
    folder, root, outside = layout
    (root / "via").symlink_to(outside, target_is_directory=True)
    entries = {entry.path: entry.kind for entry in folder.walk()}
    assert entries == {"sub": "dir", "sub/inside.md": "file", "via": "symlink"}


def test_a_fifo_is_refused_without_blocking(layout) -> None:
    folder, root, _ = layout
    os.mkfifo(root / "sub" / "pipe.md")
    with pytest.raises(SpecialFileRefusedError):
        folder.read_bytes("sub/pipe.md")
    with pytest.raises(SpecialFileRefusedError):
        folder.write_bytes("sub/pipe.md", b"x")


def test_delete_removes_a_link_never_its_target(layout) -> None:
    folder, root, outside = layout
    (root / "sub" / "file_link.md").symlink_to(outside / "secret.md")
    folder.delete("sub/file_link.md")
    assert not os.path.lexists(root / "sub" / "file_link.md")
    assert (outside / "secret.md").read_text() == SECRET
    (root / "tree").mkdir()
    (root / "tree" / "escape").symlink_to(outside, target_is_directory=True)
    folder.delete_tree("tree")
    assert not (root / "tree").exists()
    assert sorted(os.listdir(outside)) == ["inside.md", "secret.md"]


# -- writes ------------------------------------------------------------------------------------


def test_a_rewrite_keeps_the_permissions_of_the_file_it_replaces(layout) -> None:
    folder, root, _ = layout
    target = root / "sub" / "inside.md"
    os.chmod(target, 0o640)
    folder.write_bytes("sub/inside.md", b"v2")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    os.chmod(target, 0o755)
    folder.write_bytes("sub/inside.md", b"v3", executable=False)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert target.read_bytes() == b"v3"


def test_a_new_file_is_never_executable(layout) -> None:
    folder, root, _ = layout
    folder.write_bytes("new/deep/file.md", b"x")
    assert not os.stat(root / "new" / "deep" / "file.md").st_mode & 0o111


@pytest.mark.parametrize("failing", ["fsync", "rename"])
def test_a_failed_atomic_write_leaves_the_old_content_and_no_temporary_file(layout, monkeypatch, failing) -> None:
    folder, root, _ = layout

    def fail(*arguments, **keywords):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sandbox.os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        folder.write_bytes("sub/inside.md", b"new content")
    monkeypatch.undo()
    assert (root / "sub" / "inside.md").read_text() == "inside\n"
    assert temporary_files(root / "sub") == []
    assert sorted(os.listdir(root / "sub")) == ["inside.md"]


def test_create_new_is_exclusive_even_against_a_dangling_symlink(layout) -> None:
    folder, root, outside = layout
    folder.create_new_bytes("sub/new.md", b"first")
    with pytest.raises(FileExistsError):
        folder.create_new_bytes("sub/new.md", b"second")
    (root / "sub" / "dangling.md").symlink_to(outside / "created-through-the-link.md")
    with pytest.raises(FileExistsError):
        folder.create_new_bytes("sub/dangling.md", b"x")
    assert (root / "sub" / "new.md").read_bytes() == b"first"
    assert not (outside / "created-through-the-link.md").exists()


def test_write_if_changed_leaves_identical_bytes_untouched(layout) -> None:
    folder, root, _ = layout
    before = os.stat(root / "sub" / "inside.md")
    assert folder.write_if_changed("sub/inside.md", b"inside\n") is False
    assert os.stat(root / "sub" / "inside.md").st_ino == before.st_ino
    assert folder.write_if_changed("sub/inside.md", b"inside\nmore\n") is True
    assert folder.write_if_changed("sub/inside.md", b"inside\n") is True
    assert folder.write_if_changed("sub/brand-new.md", b"x") is True


def test_a_file_in_the_way_of_a_folder_is_not_a_directory(layout) -> None:
    folder, _, _ = layout
    with pytest.raises(NotADirectoryError):
        folder.write_bytes("sub/inside.md/child.md", b"x")


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "file:MEMORY.md",
        "C:",
        "~",
        "notes~.md",
        "\u2025",  # two dot leader, looks like ".."
        "\u2024\u2024",  # one dot leaders
        "\uff0e\uff0e",  # fullwidth full stops
        "skill\u202eknil.md",  # right-to-left override
        "a\u200bb.md",  # zero width space
        "bell\x07.md",
        "nul\x00.md",
        "line\nbreak.md",
        " leading.md",
        "trailing.md ",
        "q?.md",
        "x" * 256,
        "",
        "..",
    ],
)
def test_odd_names_are_not_plain(name: str) -> None:
    with pytest.raises(UnsafeNameError):
        check_plain_name(name)


@pytest.mark.parametrize("name", ["MEMORY.md", "SKILL.md", "run-tests", "café.md", "2025-10-16T10-00-00-tabs.md", "a b.md"])
def test_ordinary_names_are_plain(name: str) -> None:
    check_plain_name(name)


@pytest.mark.parametrize(
    ("path", "components"),
    [(None, []), (".", []), ("a//b/./c", ["a", "b", "c"]), ("skills/x/SKILL.md", ["skills", "x", "SKILL.md"])],
)
def test_tool_paths_drop_dot_and_empty_segments(path, components) -> None:
    assert split_relative_path(path) == components


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "C:/x", "C:x", "a\\b", "a\x00b"])
def test_tool_paths_that_leave_the_root_are_refused(path) -> None:
    with pytest.raises(UnsafePathError):
        split_relative_path(path)
