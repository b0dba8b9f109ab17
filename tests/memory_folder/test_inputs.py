from __future__ import annotations

import os
import uuid

import pytest

from codex_memories.memory_folder.inputs import (
    SyncResult,
    rebuild_raw_memories,
    render_rollout_summary,
    storage_bytes,
    sync_rollout_summaries,
)
from codex_memories.raw_memories import render_raw_memories, rollout_summary_stem, sanitize_slug
from codex_memories.state.records import Stage1Output
from codex_memories.storage import open_memory_root

V7_THREAD = "0194f5a6-89ab-7cde-8123-456789abcdef"


def output(thread_id: str, source_updated_at: int = 100, **fields) -> Stage1Output:
    values = dict(
        thread_id=thread_id,
        source_updated_at=source_updated_at,
        raw_memory=f"raw memory {thread_id}",
        rollout_summary=f"summary {thread_id}",
        rollout_slug=None,
        generated_at=source_updated_at,
        cwd="/tmp/workspace",
        rollout_path=f"/tmp/rollout-{source_updated_at}.jsonl",
    )
    values.update(fields)
    return Stage1Output(**values)


@pytest.fixture(params=["local", "memory"])
def root(request, tmp_path):
    if request.param == "local":
        return open_memory_root(tmp_path / "memories")
    return open_memory_root(f"memory://tests-{uuid.uuid4().hex}/memories")


# Scenario 46
@pytest.mark.parametrize("slug", [None, ""])
def test_stem_of_a_uuidv7_thread_uses_its_creation_time_and_low_bits(slug):
    assert rollout_summary_stem(V7_THREAD, 123, slug) == "2025-02-11T15-35-19-jqmb"


# Scenario 47
def test_slug_is_sanitised_and_cut_to_sixty_characters():
    slug = "Unsafe Slug/With Spaces & Symbols + EXTRA_LONG_12345_67890_ABCDE_fghij_klmno"
    stem = rollout_summary_stem(V7_THREAD, 123, slug)
    assert stem == "2025-02-11T15-35-19-jqmb-unsafe_slug_with_spaces___symbols___extra_long_12345_67890_a"
    assert len(stem.split("-jqmb-", 1)[1]) == 60


@pytest.mark.parametrize(
    ("slug", "expected"),
    [("rollout-a", "rollout_a"), ("Fix__", "fix"), ("___", ""), ("héllo", "h_llo"), (None, "")],
)
def test_slug_sanitising_table(slug, expected):
    assert sanitize_slug(slug) == expected


def test_stem_of_a_non_uuid_thread_uses_source_time_and_rolling_hash():
    # "ab": 97 * 31 + 98 = 3105 = 0*62^3 + 0*62^2 + 50*62 + 5 → "00O5".
    assert rollout_summary_stem("ab", 0, None) == "1970-01-01T00-00-00-00O5"


def test_stem_of_a_uuid_without_timestamp_uses_source_time():
    v4 = "00000000-0000-4000-8000-000000000001"
    assert rollout_summary_stem(v4, 1_700_000_000, "x") == "2023-11-14T22-13-20-0001-x"


def test_rollout_summary_body_is_exact():
    row = output(V7_THREAD, 1_760_433_123, rollout_summary="  did things\n", git_branch="main")
    assert render_rollout_summary(row) == (
        f"thread_id: {V7_THREAD}\n"
        "updated_at: 2025-10-14T09:12:03+00:00\n"
        "rollout_path: /tmp/rollout-1760433123.jsonl\n"
        "cwd: /tmp/workspace\n"
        "git_branch: main\n"
        "\n"
        "did things\n"
    )


def test_rollout_summary_without_branch_has_no_branch_line():
    assert "git_branch" not in render_rollout_summary(output("t1"))


# Scenario 49
def test_raw_memories_for_an_empty_selection():
    assert render_raw_memories([]) == "# Raw Memories\n\nNo raw memories yet.\n"


def test_raw_memories_are_in_ascending_thread_id_order_and_exact():
    rows = [output("b-thread", 200, raw_memory="  second \n"), output("a-thread", 0, raw_memory="first")]
    a_stem = rollout_summary_stem("a-thread", 0, None)
    b_stem = rollout_summary_stem("b-thread", 200, None)
    assert render_raw_memories(rows) == (
        "# Raw Memories\n\n"
        "Merged stage-1 raw memories (stable ascending thread-id order):\n\n"
        "## Thread `a-thread`\n"
        "updated_at: 1970-01-01T00:00:00+00:00\n"
        "cwd: /tmp/workspace\n"
        "rollout_path: /tmp/rollout-0.jsonl\n"
        f"rollout_summary_file: {a_stem}.md\n"
        "\n"
        "first\n"
        "\n"
        "## Thread `b-thread`\n"
        "updated_at: 1970-01-01T00:03:20+00:00\n"
        "cwd: /tmp/workspace\n"
        "rollout_path: /tmp/rollout-200.jsonl\n"
        f"rollout_summary_file: {b_stem}.md\n"
        "\n"
        "second\n"
        "\n"
    )


# Scenario 48
def test_sync_prunes_non_canonical_files_and_rebuilds_raw_memories(root):
    keep_id = str(uuid.uuid4())
    drop_id = str(uuid.uuid4())
    root.write_text(f"rollout_summaries/{keep_id}.md", "old keep")
    root.write_text(f"rollout_summaries/{drop_id}.md", "old drop")
    root.write_text("rollout_summaries/notes.txt", "not markdown, left alone")
    row = output(keep_id, 100, raw_memory="raw memory")

    result = sync_rollout_summaries(root, [row])
    rebuild_raw_memories(root, [row])

    stem = rollout_summary_stem(keep_id, 100, None)
    markdown = [entry.name for entry in root.list_dir("rollout_summaries") if entry.name.endswith(".md")]
    assert markdown == [f"{stem}.md"]
    assert result == SyncResult(
        written=[f"rollout_summaries/{stem}.md"],
        deleted=sorted([f"rollout_summaries/{keep_id}.md", f"rollout_summaries/{drop_id}.md"]),
        unchanged=[],
    )
    raw = root.read_text("raw_memories.md")
    for expected in ("raw memory", keep_id, "cwd: /tmp/workspace", "rollout_path: /tmp/rollout-100.jsonl", f"rollout_summary_file: {stem}.md"):
        assert expected in raw
    assert root.read_text("rollout_summaries/notes.txt") == "not markdown, left alone"


def test_sync_writes_nothing_when_the_selection_is_unchanged(root):
    rows = [output("t1"), output("t2")]
    sync_rollout_summaries(root, rows)
    assert rebuild_raw_memories(root, rows)
    again = sync_rollout_summaries(root, rows)
    assert again.written == [] and again.deleted == []
    assert len(again.unchanged) == 2
    assert not rebuild_raw_memories(root, rows)


def test_sync_with_empty_selection_removes_every_summary(root):
    sync_rollout_summaries(root, [output("t1")])
    result = sync_rollout_summaries(root, [])
    assert len(result.deleted) == 1
    assert root.list_dir("rollout_summaries") == []
    rebuild_raw_memories(root, [])
    assert root.read_text("raw_memories.md") == "# Raw Memories\n\nNo raw memories yet.\n"


# Scenario 52
def test_storage_bytes_counts_regular_files_only(tmp_path):
    root_dir = tmp_path / "memories"
    root = open_memory_root(root_dir)
    root.write_text("memory_summary.md", "summary")
    root.write_text("rollout_summaries/thread.md", "rollout")
    root.write_text("extensions/notes/note.md", "café")
    root.write_text(".git/objects/baseline", "baseline object")
    os.symlink(root_dir / "memory_summary.md", root_dir / "file_link.md")
    os.symlink(root_dir, root_dir / "loop")
    os.symlink(root_dir / "missing", root_dir / "dangling.md")
    assert storage_bytes(root_dir) == 19


def test_storage_bytes_on_an_object_store():
    root = open_memory_root(f"memory://tests-{uuid.uuid4().hex}/memories")
    root.write_text("memory_summary.md", "summary")
    root.write_text(".codex-memories/baseline.tar", "not counted")
    assert storage_bytes(root) == 7
