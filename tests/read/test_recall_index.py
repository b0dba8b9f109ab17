"""The recall index: built explicitly, refreshed lazily when files change, rebuilt when damaged."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.read import index as recall_index
from codex_memories.read import memory_tools
from codex_memories.read.index import build_index, index_file, open_index
from codex_memories.read.recall import recall
from tests.support.memory_folder import ATLAS, write_memory_folder


def _index_texts(root: Path) -> list[str]:
    index = open_index(root)
    assert index is not None
    try:
        return [row[0] for row in index.connection.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        index.close()


def test_build_writes_one_index_file_in_the_bookkeeping_folder_that_the_memory_tools_hide(tmp_path):
    root = write_memory_folder(tmp_path)

    stats = build_index(root)

    assert stats.path == root / paths.recall_index_path()
    assert stats.chunks > 5 and stats.embedded == stats.chunks and stats.files == 4
    assert [entry.name for entry in (root / paths.WORKSPACE_STATE_DIR).iterdir()] == [paths.RECALL_INDEX_FILE]
    listed = memory_tools.list_entries(root).entries
    assert paths.WORKSPACE_STATE_DIR not in {entry.path for entry in listed}


def test_a_reader_builds_the_index_when_there_is_none(tmp_path):
    root = write_memory_folder(tmp_path)

    assert any("make ship-prod" in text for text in _index_texts(root))
    assert index_file(root).is_file()


@pytest.mark.parametrize(
    "change",
    ["edit", "add_file", "delete_file"],
)
def test_a_reader_refreshes_the_index_when_a_file_changed(tmp_path, change):
    root = write_memory_folder(tmp_path)
    build_index(root)
    memory = root / paths.MEMORY_FILE
    note = root / paths.ad_hoc_notes_dir() / "2026-11-30T10-00-00-kiln.md"
    if change == "edit":
        memory.write_text(memory.read_text(encoding="utf-8").replace("make ship-prod", "make kiln-release"), encoding="utf-8")
    elif change == "add_file":
        note.write_text("The kiln-release target replaced the old deploy script.\n", encoding="utf-8")
    else:
        memory.unlink()

    texts = "\n".join(_index_texts(root))

    if change == "delete_file":
        assert "Production deploys go through" not in texts
    else:
        assert "kiln-release" in texts


def test_a_same_size_edit_is_seen_through_the_modification_time(tmp_path):
    root = write_memory_folder(tmp_path)
    build_index(root)
    memory = root / paths.MEMORY_FILE
    text = memory.read_text(encoding="utf-8")
    memory.write_text(text.replace("ship-prod", "ship-live"), encoding="utf-8")
    os.utime(memory, ns=(memory.stat().st_atime_ns, memory.stat().st_mtime_ns + 1_000_000_000))

    assert any("ship-live" in text for text in _index_texts(root))


def test_a_rebuild_embeds_only_the_chunks_whose_text_changed(tmp_path):
    root = write_memory_folder(tmp_path)
    first = build_index(root)
    memory = root / paths.MEMORY_FILE
    memory.write_text(memory.read_text(encoding="utf-8") + "\n- One more fact about the kiln.\n", encoding="utf-8")

    second = build_index(root)

    assert second.chunks == first.chunks + 1
    assert second.embedded == 1


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database at all" * 100)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _sql(statement: str):
    def damage(path: Path) -> None:
        connection = sqlite3.connect(path)
        connection.execute(statement)
        connection.commit()
        connection.close()

    return damage


@pytest.mark.parametrize(
    "damage",
    [
        _garbage,
        _truncated,
        _empty,
        _sql("UPDATE meta SET value = 'old' WHERE key = 'format_version'"),
        _sql("UPDATE meta SET value = 'another-model' WHERE key = 'embedder'"),
        _sql("DELETE FROM chunks WHERE id = 1"),
        _sql("UPDATE vectors SET data = x'00'"),
        _sql("DROP TABLE chunk_text"),
        _sql("DELETE FROM meta"),
    ],
    ids=["garbage", "truncated", "empty", "old_format", "other_embedder", "missing_chunk", "short_vectors", "no_text_table", "no_meta"],
)
def test_a_damaged_index_is_rebuilt_and_never_served(tmp_path, damage):
    root = write_memory_folder(tmp_path)
    build_index(root)
    damage(index_file(root))

    results = recall(root, "how do I release to prod?", cwd=ATLAS)

    assert results and "make ship-prod" in results[0].text
    verified = recall_index._open_verified(index_file(root), recall_index.current_file_stats(root))
    assert verified is not None
    verified.close()


def test_a_failed_build_leaves_the_previous_index_and_no_temp_file(tmp_path, monkeypatch):
    root = write_memory_folder(tmp_path)
    build_index(root)
    before = index_file(root).read_bytes()

    def fail(*_arguments):
        raise OSError("disk full")

    monkeypatch.setattr(recall_index, "_write", fail)
    with pytest.raises(OSError, match="disk full"):
        build_index(root)

    assert index_file(root).read_bytes() == before
    assert [entry.name for entry in index_file(root).parent.iterdir()] == [paths.RECALL_INDEX_FILE]


def test_there_is_no_index_for_a_missing_folder(tmp_path):
    assert open_index(tmp_path / "absent") is None
    assert not (tmp_path / "absent").exists()


def test_an_empty_folder_gets_an_empty_index(tmp_path):
    index = open_index(tmp_path)

    assert index is not None and index.chunk_count == 0
    index.close()
    assert recall(tmp_path, "anything at all") == []


def test_damage_met_during_a_query_rebuilds_once_and_then_fails_loudly(tmp_path, monkeypatch):
    from codex_memories.read import recall as recall_module

    root = write_memory_folder(tmp_path)
    real_rank = recall_module.rank
    failures = iter([sqlite3.DatabaseError("database disk image is malformed")])

    def flaky_rank(*arguments, **options):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_rank(*arguments, **options)

    monkeypatch.setattr(recall_module, "rank", flaky_rank)
    assert "make ship-prod" in recall(root, "how do I release to prod?", cwd=ATLAS)[0].text

    def broken_rank(*_arguments, **_options):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(recall_module, "rank", broken_rank)
    with pytest.raises(sqlite3.DatabaseError):
        recall(root, "how do I release to prod?", cwd=ATLAS)
