"""Listing and opening rollouts: only regular files are read, never blocking, bounded in bytes;
everything else named like a rollout is one named outcome."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codex_memories.ingest import rollout_files
from codex_memories.ingest.rollout_files import (
    CorruptCompressedRollout,
    NotARegularRollout,
    RolloutTooLarge,
    list_rollouts,
    open_rollout,
    rollout_failure,
)
from codex_memories.outcomes import Outcome
from tests.support.hostile_files import NOT_A_FILE_KINDS, plant

NAME = "rollout-2026-01-01T00-00-00-0193a000-0000-7000-8000-{:012d}.jsonl"
LINES = b'{"type":"event_msg","payload":{"type":"agent_message","message":"ok"}}\n' * 3


def rollout_name(number: int, suffix: str = "") -> str:
    return NAME.format(number) + suffix


def test_only_regular_files_are_listed_and_every_other_rollout_name_is_an_outcome(tmp_path: Path) -> None:
    day = tmp_path / "2026" / "01" / "01"
    day.mkdir(parents=True)
    good = day / rollout_name(1)
    good.write_bytes(LINES)
    for number, kind in zip((2, 3, 4, 6, 8), NOT_A_FILE_KINDS, strict=True):
        plant(kind, day / rollout_name(number))
    (day / rollout_name(5)).symlink_to(good)  # even to a good rollout: the name is not followed
    inside = day / rollout_name(6)  # a folder named like a rollout: left out, still entered
    (inside / rollout_name(7)).write_bytes(LINES)
    (day / "notes.txt").write_text("not a rollout")

    listing = list_rollouts(tmp_path)

    assert [rollout.path for rollout in listing.rollouts] == [good, inside / rollout_name(7)]
    assert listing.rollouts[0].size == len(LINES)
    skipped = {Path(entry.shown).name: (entry.outcome, entry.detail) for entry in listing.skipped}
    assert {name: outcome for name, (outcome, _) in skipped.items()} == {
        rollout_name(number): Outcome.skipped_rollout_not_a_file for number in (2, 3, 4, 5, 6, 8)
    }
    assert skipped[rollout_name(2)][1] == "named like a rollout but a FIFO"
    assert skipped[rollout_name(3)][1] == "named like a rollout but a symbolic link (not followed)"
    assert skipped[rollout_name(6)][1] == "named like a rollout but a folder"
    assert skipped[rollout_name(8)][1] == "named like a rollout but a socket"
    assert listing.unlisted_folders == []


def test_names_that_are_not_utf8_are_skipped_shown_with_their_bytes_and_not_entered(tmp_path: Path) -> None:
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    (folder / rollout_name(1)).write_bytes(LINES)
    (tmp_path / os.fsdecode(b"rollout-\xff.jsonl")).write_bytes(LINES)
    (tmp_path / rollout_name(2)).write_bytes(LINES)

    listing = list_rollouts(tmp_path)

    assert [rollout.path.name for rollout in listing.rollouts] == [rollout_name(2)]
    shown = sorted((entry.shown, entry.outcome, entry.detail) for entry in listing.skipped)
    assert shown == [
        (f"{tmp_path}/caf\\xe9", Outcome.skipped_rollout_unusable_path, "the folder name is not UTF-8"),
        (f"{tmp_path}/rollout-\\xff.jsonl", Outcome.skipped_rollout_unusable_path, "the file name is not UTF-8"),
    ]
    for entry in listing.skipped:
        entry.shown.encode("utf-8")  # storable


def test_a_folder_that_cannot_be_listed_is_reported_and_kept_apart(tmp_path: Path, monkeypatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / rollout_name(1)).write_bytes(LINES)
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(locked))
        return real_scandir(path)

    monkeypatch.setattr(rollout_files.os, "scandir", scandir)
    listing = list_rollouts(tmp_path)

    assert [rollout.path.name for rollout in listing.rollouts] == [rollout_name(1)]
    assert listing.unlisted_folders == [locked]
    assert [(entry.outcome, entry.detail) for entry in listing.skipped] == [
        (Outcome.failed_rollout_unreadable, "folder cannot be listed: Permission denied")
    ]


def test_an_absent_folder_lists_nothing(tmp_path: Path) -> None:
    listing = list_rollouts(tmp_path / "missing")
    assert (listing.rollouts, listing.skipped, listing.unlisted_folders) == ([], [], [])


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", NOT_A_FILE_KINDS)
def test_opening_anything_but_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / rollout_name(1)
    plant(kind, path)
    with pytest.raises(NotARegularRollout) as raised, open_rollout(path):
        pass
    assert rollout_failure(raised.value)[0] is Outcome.failed_rollout_unreadable


def test_a_file_larger_than_the_bound_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    path = tmp_path / rollout_name(1)
    plant("sparse_past_the_size_bound", path)
    with pytest.raises(RolloutTooLarge) as raised, open_rollout(path):
        pass
    assert rollout_failure(raised.value)[0] is Outcome.failed_rollout_too_large


def test_a_file_that_grows_past_the_bound_while_read_stops_the_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / rollout_name(1)
    path.write_bytes(LINES)
    monkeypatch.setattr(rollout_files, "MAX_ROLLOUT_BYTES", len(LINES))
    with open_rollout(path) as stream:
        assert stream.read() == LINES  # exactly at the bound: whole
    with open_rollout(path) as stream, path.open("ab") as writer:
        writer.write(LINES)
        writer.flush()
        with pytest.raises(RolloutTooLarge):
            stream.read()


def test_a_plain_rollout_reads_and_seeks_as_a_file(tmp_path: Path) -> None:
    path = tmp_path / rollout_name(1)
    path.write_bytes(LINES)
    with open_rollout(path, sequential=False) as stream:
        assert stream.readline() == LINES.splitlines(keepends=True)[0]
        stream.seek(len(LINES) - 5)
        assert stream.read() == LINES[-5:]
        assert os.fstat(stream.fileno()).st_size == len(LINES)


def test_rollout_failure_names_any_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError) as raised, open_rollout(tmp_path / rollout_name(1)):
        pass
    assert rollout_failure(raised.value) == (Outcome.failed_rollout_unreadable, "No such file or directory")


# --- .jsonl.zst --------------------------------------------------------------------------------


def compressed(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / rollout_name(1, ".zst")
    path.write_bytes(data)
    return path


def test_a_compressed_rollout_of_several_frames_reads_whole(tmp_path: Path) -> None:
    zstd = pytest.importorskip("zstandard")
    frames = zstd.ZstdCompressor().compress(LINES) + zstd.ZstdCompressor(level=19).compress(LINES * 1000)
    with open_rollout(compressed(tmp_path, frames)) as stream:
        assert stream.read() == LINES + LINES * 1000


@pytest.mark.parametrize("damage", ["not_zstd", "cut_inside_a_frame", "flipped_bytes"])
def test_a_corrupt_compressed_rollout_is_its_own_outcome(tmp_path: Path, damage: str) -> None:
    zstd = pytest.importorskip("zstandard")
    good = zstd.ZstdCompressor().compress(LINES * 200)
    data = {
        "not_zstd": LINES,
        "cut_inside_a_frame": good[: len(good) // 2],
        "flipped_bytes": good[:6] + bytes(byte ^ 0xFF for byte in good[6:40]) + good[40:],
    }[damage]
    with pytest.raises(CorruptCompressedRollout) as raised, open_rollout(compressed(tmp_path, data)) as stream:
        stream.read()
    assert rollout_failure(raised.value)[0] is Outcome.failed_rollout_decompress


@pytest.mark.timeout(60)
def test_a_compressed_rollout_that_inflates_past_the_bound_is_too_large(tmp_path: Path, monkeypatch) -> None:
    zstd = pytest.importorskip("zstandard")
    monkeypatch.setattr(rollout_files, "MAX_ROLLOUT_BYTES", 64 << 20)
    bomb = zstd.ZstdCompressor(level=19).compress(b"\0" * (256 << 20))  # a few KB on disk
    assert len(bomb) < 64 << 10
    with pytest.raises(RolloutTooLarge), open_rollout(compressed(tmp_path, bomb)) as stream:
        while stream.read(1 << 20):
            pass


def test_a_path_too_long_to_key_a_thread_by_is_left_out(tmp_path: Path) -> None:
    deep = tmp_path
    while len(os.fsencode(deep)) < rollout_files.MAX_ROLLOUT_PATH_BYTES - 100:
        deep = deep / ("d" * 200)
    deep.mkdir(parents=True)
    (deep / rollout_name(1)).write_bytes(LINES)  # the whole path past the bound
    (tmp_path / rollout_name(2)).write_bytes(LINES)

    listing = list_rollouts(tmp_path)

    assert [rollout.path.name for rollout in listing.rollouts] == [rollout_name(2)]
    [skipped] = listing.skipped
    assert skipped.outcome is Outcome.skipped_rollout_unusable_path
    assert "longer than the 2048 a thread can be keyed by" in skipped.detail


def test_a_month_folder_moved_to_another_disk_and_linked_back_is_listed_and_read(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    (sessions / "2026" / "05").mkdir(parents=True)
    (sessions / "2026" / "05" / rollout_name(1)).write_text('{"a": 1}\n')
    moved = tmp_path / "other-disk" / "06"
    moved.mkdir(parents=True)
    (moved / rollout_name(2)).write_text('{"b": 2}\n')
    (sessions / "2026" / "06").symlink_to(moved, target_is_directory=True)

    listing = list_rollouts(sessions)

    assert [rollout.path.name for rollout in listing.rollouts] == [rollout_name(1), rollout_name(2)]
    linked = sessions / "2026" / "06" / rollout_name(2)
    assert [rollout.path for rollout in listing.rollouts][1] == linked
    with rollout_files.open_rollout(linked) as stream:
        assert stream.read() == b'{"b": 2}\n'
    assert listing.skipped == []


def test_links_that_loop_or_lead_back_into_the_tree_are_listed_once_and_the_walk_ends(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    (sessions / "2026").mkdir(parents=True)
    (sessions / "2026" / rollout_name(1)).write_text("{}\n")
    (sessions / "2026" / "loop").symlink_to(sessions, target_is_directory=True)
    (sessions / "again").symlink_to(sessions / "2026", target_is_directory=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "back").symlink_to(outside, target_is_directory=True)  # a loop outside the tree
    (outside / rollout_name(2)).write_text("{}\n")
    (sessions / "out").symlink_to(outside, target_is_directory=True)
    (sessions / "out-twice").symlink_to(outside, target_is_directory=True)

    listing = list_rollouts(sessions)

    assert sorted(rollout.path.name for rollout in listing.rollouts) == [rollout_name(1), rollout_name(2)]


def test_a_farm_of_linked_folders_is_bounded_and_what_is_left_out_is_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rollout_files, "MAX_LINKED_FOLDERS", 2)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for number in range(4):
        target = tmp_path / f"disk-{number}"
        target.mkdir()
        (target / rollout_name(number)).write_text("{}\n")
        (sessions / f"month-{number}").symlink_to(target, target_is_directory=True)

    listing = list_rollouts(sessions)

    assert len(listing.rollouts) == 2
    assert len(listing.skipped) == 2 and all("linked folder past the 2" in entry.detail for entry in listing.skipped)
