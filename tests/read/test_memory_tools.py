"""Memory list/read/search tools (spec 5.5, scenarios 72, 73, 74)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codex_memories.read import memory_tools
from codex_memories.read.memory_tools import (
    EmptyQuery,
    InvalidCursor,
    InvalidLineOffset,
    InvalidMaxLines,
    InvalidMaxResults,
    InvalidPath,
    LineOffsetExceedsFileLength,
    MemoryEntry,
    NotFile,
    NotFound,
    ReadResult,
    SearchMatch,
    list_entries,
    read_file,
    search,
)


def write(root: Path, relative: str, text: str) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="")
    return target


def listed(result) -> list[tuple[str, str]]:
    return [(entry.path, entry.entry_type) for entry in result.entries]


# Scenario 72: list.


def test_list_is_shallow_files_and_directories(tmp_path):
    write(tmp_path, "MEMORY.md", "summary")
    write(tmp_path, "skills/example/SKILL.md", "skill")

    result = list_entries(tmp_path)

    assert result.entries == [
        MemoryEntry(path="MEMORY.md", entry_type="file"),
        MemoryEntry(path="skills", entry_type="directory"),
    ]
    assert result.next_cursor is None
    assert result.truncated is False


def test_list_pages_with_a_decimal_cursor(tmp_path):
    write(tmp_path, "MEMORY.md", "summary")
    write(tmp_path, "memory_summary.md", "summary")
    (tmp_path / "rollout_summaries").mkdir()
    (tmp_path / "skills").mkdir()

    page1 = list_entries(tmp_path, max_results=2)
    page2 = list_entries(tmp_path, cursor=page1.next_cursor, max_results=2)

    assert listed(page1) == [("MEMORY.md", "file"), ("memory_summary.md", "file")]
    assert (page1.next_cursor, page1.truncated) == ("2", True)
    assert listed(page2) == [("rollout_summaries", "directory"), ("skills", "directory")]
    assert (page2.next_cursor, page2.truncated) == (None, False)


def test_list_sorts_siblings_byte_wise(tmp_path):
    (tmp_path / "a").mkdir()
    write(tmp_path, "a.txt", "a")
    write(tmp_path, "b.txt", "b")
    write(tmp_path, "B.txt", "B")

    assert [entry.path for entry in list_entries(tmp_path).entries] == ["B.txt", "a", "a.txt", "b.txt"]


def test_list_of_a_folder_is_shallow_with_root_relative_paths(tmp_path):
    write(tmp_path, "skills/README.md", "readme")
    write(tmp_path, "skills/example/SKILL.md", "skill")

    result = list_entries(tmp_path, path="skills")

    assert listed(result) == [("skills/README.md", "file"), ("skills/example", "directory")]
    assert result.path == "skills"


@pytest.mark.parametrize("cursor", ["bogus", "-1", "1.0", " 1", "2"])
def test_list_rejects_a_bad_or_past_the_end_cursor(tmp_path, cursor):
    write(tmp_path, "MEMORY.md", "summary")

    with pytest.raises(InvalidCursor):
        list_entries(tmp_path, cursor=cursor)


def test_list_cursor_at_the_end_is_an_empty_last_page(tmp_path):
    write(tmp_path, "MEMORY.md", "summary")

    result = list_entries(tmp_path, cursor="1")

    assert (result.entries, result.next_cursor, result.truncated) == ([], None, False)


def test_list_skips_symlinks_and_hides_git(tmp_path):
    write(tmp_path, "MEMORY.md", "summary")
    write(tmp_path, ".git/HEAD", "ref")
    os.symlink(tmp_path / "MEMORY.md", tmp_path / "linked.md")
    os.symlink(tmp_path, tmp_path / "loop")

    assert listed(list_entries(tmp_path)) == [("MEMORY.md", "file")]
    with pytest.raises(NotFound):
        list_entries(tmp_path, path=".git")
    with pytest.raises(InvalidPath):
        list_entries(tmp_path, path="loop")


def test_list_of_a_file_is_that_file(tmp_path):
    write(tmp_path, "MEMORY.md", "summary")

    assert listed(list_entries(tmp_path, path="./MEMORY.md")) == [("MEMORY.md", "file")]


def test_list_caps_max_results_and_rejects_zero(tmp_path):
    for index in range(3):
        write(tmp_path, f"f{index}.md", "x")

    assert len(list_entries(tmp_path, max_results=10_000).entries) == 3
    with pytest.raises(InvalidMaxResults):
        list_entries(tmp_path, max_results=0)


def test_list_of_a_missing_root_is_empty_but_a_missing_path_is_not_found(tmp_path):
    assert list_entries(tmp_path / "absent").entries == []
    with pytest.raises(NotFound):
        list_entries(tmp_path, path="nope")


# Scenario 73: read.


def test_read_returns_the_whole_small_file(tmp_path):
    write(tmp_path, "MEMORY.md", "remember this")

    assert read_file(tmp_path, "MEMORY.md") == ReadResult(
        path="MEMORY.md", start_line_number=1, content="remember this", truncated=False
    )


def test_read_of_a_directory_is_not_file(tmp_path):
    write(tmp_path, "MEMORY.md", "remember this")

    with pytest.raises(NotFile) as raised:
        read_file(tmp_path, ".")
    assert raised.value.kind == "NotFile"


def test_read_from_a_line_offset(tmp_path):
    write(tmp_path, "MEMORY.md", "alpha\nbeta\ngamma\n")

    result = read_file(tmp_path, "MEMORY.md", line_offset=2)

    assert (result.start_line_number, result.content, result.truncated) == (2, "beta\ngamma\n", False)


def test_read_with_max_lines_is_truncated(tmp_path):
    write(tmp_path, "MEMORY.md", "alpha\nbeta\ngamma\n")

    result = read_file(tmp_path, "MEMORY.md", line_offset=2, max_lines=1)

    assert (result.start_line_number, result.content, result.truncated) == (2, "beta\n", True)


def test_read_max_lines_covering_the_rest_is_not_truncated(tmp_path):
    write(tmp_path, "MEMORY.md", "alpha\nbeta\ngamma\n")

    assert read_file(tmp_path, "MEMORY.md", line_offset=2, max_lines=2).truncated is False


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"line_offset": 0}, InvalidLineOffset),
        ({"max_lines": 0}, InvalidMaxLines),
        ({"line_offset": 3}, LineOffsetExceedsFileLength),
    ],
)
def test_read_rejects_bad_line_requests(tmp_path, arguments, error):
    write(tmp_path, "MEMORY.md", "only\n")

    with pytest.raises(error):
        read_file(tmp_path, "MEMORY.md", **arguments)


def test_read_just_past_the_last_newline_is_empty(tmp_path):
    write(tmp_path, "MEMORY.md", "only\n")

    assert read_file(tmp_path, "MEMORY.md", line_offset=2).content == ""


@pytest.mark.parametrize("path", ["../secret", "skills/../../secret", "/etc/passwd", "C:\\secret", "\\\\server\\share"])
def test_read_rejects_paths_outside_the_root(tmp_path, path):
    root = tmp_path / "memories"
    root.mkdir()
    write(tmp_path, "secret", "do not read")

    with pytest.raises(InvalidPath):
        read_file(root, path)


def test_read_rejects_a_symlinked_file(tmp_path):
    root = tmp_path / "memories"
    write(tmp_path, "secret", "do not read")
    root.mkdir()
    os.symlink(tmp_path / "secret", root / "MEMORY.md")

    with pytest.raises(InvalidPath):
        read_file(root, "MEMORY.md")


def test_read_rejects_a_file_reached_through_a_symlinked_folder(tmp_path):
    root = tmp_path / "memories"
    write(tmp_path, "outside/secret.md", "do not read")
    root.mkdir()
    os.symlink(tmp_path / "outside", root / "skills")

    with pytest.raises(InvalidPath):
        read_file(root, "skills/secret.md")


def test_read_of_git_internals_is_not_found(tmp_path):
    write(tmp_path, ".git/config", "[core]")

    with pytest.raises(NotFound):
        read_file(tmp_path, ".git/config")


def test_read_of_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(NotFound):
        read_file(tmp_path, "MEMORY.md")


def test_read_caps_content_by_tokens_in_the_middle(tmp_path):
    lines = [f"line {index} " + "word " * 20 for index in range(400)]
    write(tmp_path, "MEMORY.md", "\n".join(lines))

    result = read_file(tmp_path, "MEMORY.md", max_tokens=200)

    assert result.truncated is True
    assert result.content.startswith("line 0 ")
    assert result.content.endswith(lines[-1])
    assert "tokens truncated" in result.content


def test_read_default_cap_is_twenty_thousand_tokens():
    assert memory_tools.DEFAULT_READ_MAX_TOKENS == 20_000


# Scenario 74: search.


def test_search_over_the_root_and_scoped_to_a_file(tmp_path):
    write(tmp_path, "MEMORY.md", "alpha\nneedle\n")
    write(tmp_path, "rollout_summaries/a.jsonl", "needle again\n")

    everywhere = search(tmp_path, "needle")
    in_file = search(tmp_path, "needle", path="MEMORY.md")

    assert everywhere.matches == [
        SearchMatch(path="MEMORY.md", line_number=2, start_line_number=2, content="needle"),
        SearchMatch(path="rollout_summaries/a.jsonl", line_number=1, start_line_number=1, content="needle again"),
    ]
    assert (everywhere.next_cursor, everywhere.truncated) == (None, False)
    assert in_file.matches == [SearchMatch(path="MEMORY.md", line_number=2, start_line_number=2, content="needle")]


def test_search_pages_with_a_decimal_cursor(tmp_path):
    write(tmp_path, "MEMORY.md", "needle one\nneedle two\n")
    write(tmp_path, "rollout_summaries/a.jsonl", "needle three\n")

    page1 = search(tmp_path, "needle", max_results=2)
    page2 = search(tmp_path, "needle", cursor=page1.next_cursor, max_results=2)

    assert [(match.path, match.line_number) for match in page1.matches] == [("MEMORY.md", 1), ("MEMORY.md", 2)]
    assert (page1.next_cursor, page1.truncated) == ("2", True)
    assert [(match.path, match.line_number) for match in page2.matches] == [("rollout_summaries/a.jsonl", 1)]
    assert (page2.next_cursor, page2.truncated) == (None, False)


def test_search_includes_context_lines(tmp_path):
    write(tmp_path, "MEMORY.md", "alpha\nneedle\nomega\nneedle again\n")

    result = search(tmp_path, "needle", context_lines=1)

    assert result.matches == [
        SearchMatch(path="MEMORY.md", line_number=2, start_line_number=1, content="alpha\nneedle\nomega"),
        SearchMatch(path="MEMORY.md", line_number=4, start_line_number=3, content="omega\nneedle again"),
    ]


def test_search_is_case_sensitive_and_sorted_by_path_bytes(tmp_path):
    write(tmp_path, "b.md", "Needle\nneedle\n")
    write(tmp_path, "a/x.md", "needle\n")
    write(tmp_path, "a.md", "needle\n")

    result = search(tmp_path, "needle")

    assert [(match.path, match.line_number) for match in result.matches] == [("a.md", 1), ("a/x.md", 1), ("b.md", 2)]


def test_search_skips_symlinks_git_and_binary_files(tmp_path):
    root = tmp_path / "memories"
    write(tmp_path, "outside/secret.md", "needle outside\n")
    write(root, "MEMORY.md", "needle\n")
    write(root, ".git/COMMIT_EDITMSG", "needle in git\n")
    (root / "blob.bin").write_bytes(b"needle \xff\xfe\n")
    os.symlink(tmp_path / "outside", root / "linked")
    os.symlink(tmp_path / "outside/secret.md", root / "linked.md")

    result = search(root, "needle")

    assert [match.path for match in result.matches] == ["MEMORY.md"]


def test_search_rejects_blank_query_bad_cursor_and_escaping_scope(tmp_path):
    write(tmp_path, "MEMORY.md", "needle\n")

    with pytest.raises(EmptyQuery):
        search(tmp_path, "  ")
    with pytest.raises(InvalidCursor):
        search(tmp_path, "needle", cursor="5")
    with pytest.raises(InvalidPath):
        search(tmp_path, "needle", path="../")


def test_search_splits_lines_on_newlines_only(tmp_path):
    write(tmp_path, "MEMORY.md", "one\x0cneedle\r\ntwo\n")

    result = search(tmp_path, "needle")

    assert [(match.line_number, match.content) for match in result.matches] == [(1, "one\x0cneedle")]
