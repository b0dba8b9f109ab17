"""The MCP memory tools are bounded whatever the files hold (issue 11.4) and never read through a
hard link or a symlink swapped in after their checks.

Big files are generated in `tmp_path`, never committed. Nothing here is timed: the time budget is
exercised with a fake clock, and the memory ceiling is measured as peak RSS in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codex_memories.memory_folder import notes
from codex_memories.memory_folder.notes import NOTE_MAX_BYTES, InvalidNote, NoteTooLong
from codex_memories.read import memory_tools
from codex_memories.read.memory_tools import (
    MAX_ANSWER_BYTES,
    MAX_CURSOR_DIGITS,
    MAX_LINE_BYTES,
    MAX_MATCH_BYTES,
    AnswerTimedOut,
    FileUnreadable,
    InvalidContextLines,
    InvalidCursor,
    InvalidPath,
    InvalidText,
    QueryTooLong,
    add_ad_hoc_note,
    list_entries,
    read_file,
    search,
)

SECRET = "outside the memory root"


def answer_bytes(result) -> int:
    """Size of the JSON the MCP server sends for `result` (as `mcp_server._call` encodes it)."""
    return len(json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8"))


def write_every_line_matches(path: Path, lines: int, line: str = "needle in every single line of this file") -> None:
    with path.open("w", encoding="utf-8") as handle:
        for number in range(lines):
            handle.write(f"{number}: {line}\n")


# -- links -------------------------------------------------------------------------------------


def test_a_hard_link_to_an_outside_file_is_refused_and_never_listed_or_searched(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    os.link(outside / "secret.md", root / "linked.md")
    (root / "plain.md").write_text("plain\n")
    with pytest.raises(InvalidPath, match="hard links"):
        read_file(root, "linked.md")
    assert [entry.path for entry in list_entries(root).entries] == ["plain.md"]
    assert search(root, "outside").matches == []
    with pytest.raises(InvalidPath):
        search(root, "outside", path="linked.md")


def test_a_folder_swapped_for_a_symlink_after_the_checks_is_never_followed(tmp_path: Path, monkeypatch) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "skills").mkdir(parents=True)
    outside.mkdir()
    (root / "skills" / "SKILL.md").write_text("inside\n")
    (outside / "SKILL.md").write_text(SECRET)
    real_open = os.open

    def open_after_swapping(path, flags, mode=0o777, *, dir_fd=None):
        if path == "skills" and dir_fd is not None and not (root / "skills").is_symlink():
            os.rename(root / "skills", root / "skills-moved")
            os.symlink(outside, root / "skills", target_is_directory=True)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_after_swapping)
    with pytest.raises(InvalidPath):
        read_file(root, "skills/SKILL.md")


# -- bounds ------------------------------------------------------------------------------------


def test_search_over_a_file_where_every_line_matches_returns_one_bounded_page(tmp_path: Path) -> None:
    write_every_line_matches(tmp_path / "MEMORY.md", 300_000)  # about 14 MB
    result = search(tmp_path, "needle")
    assert len(result.matches) == 200
    assert result.next_cursor == "200" and result.truncated
    assert answer_bytes(result) <= MAX_ANSWER_BYTES
    later = search(tmp_path, "needle", cursor="299990")
    assert [match.line_number for match in later.matches] == list(range(299_991, 300_001))
    assert later.next_cursor is None


def test_search_with_context_on_every_line_stays_under_the_answer_ceiling(tmp_path: Path) -> None:
    write_every_line_matches(tmp_path / "MEMORY.md", 50_000, line="needle " + "x" * 3_000)
    result = search(tmp_path, "needle", context_lines=20)
    assert result.matches and result.truncated
    assert answer_bytes(result) <= MAX_ANSWER_BYTES
    for match in result.matches:
        assert len(match.content.encode("utf-8")) <= MAX_MATCH_BYTES
        assert all(len(line.encode("utf-8")) <= MAX_LINE_BYTES + len(" [line truncated]") for line in match.content.split("\n"))
    following = search(tmp_path, "needle", context_lines=20, cursor=result.next_cursor)
    assert following.matches[0].line_number == len(result.matches) + 1


def test_a_huge_single_line_is_matched_and_cut(tmp_path: Path) -> None:
    with (tmp_path / "one_line.md").open("w", encoding="utf-8") as handle:
        handle.write("start ")
        for _ in range(1_000):
            handle.write("y" * 8_191 + " ")
        handle.write("needle at the very end\n")  # 8 MB into the line, past every cut
    [match] = search(tmp_path, "needle").matches
    assert match.line_number == 1
    assert match.content.endswith(" [line truncated]")
    assert len(match.content.encode("utf-8")) <= MAX_LINE_BYTES + len(" [line truncated]")
    result = read_file(tmp_path, "one_line.md")
    assert result.truncated
    assert answer_bytes(result) <= 4 * MAX_ANSWER_BYTES  # 20,000 tokens of a long word


def test_a_match_across_read_pieces_of_a_long_line_is_found(tmp_path: Path) -> None:
    # The query straddles the 64 KiB pieces a long line is read in.
    (tmp_path / "long.md").write_text("z" * (65_536 - 3) + "needle" + "z" * 10 + "\r\n" + "other\n")
    [match] = search(tmp_path, "needle").matches
    assert match.line_number == 1
    assert search(tmp_path, "zz\r").matches == []  # the line ending is not part of the line


def test_read_of_a_large_file_is_cut_by_tokens_in_the_middle(tmp_path: Path) -> None:
    write_every_line_matches(tmp_path / "MEMORY.md", 200_000)  # about 9 MB, past both read windows
    result = read_file(tmp_path, "MEMORY.md")
    assert result.truncated
    assert result.content.startswith("0: needle")
    assert result.content.rstrip("\n").endswith("199999: needle in every single line of this file")
    assert "tokens truncated" in result.content
    assert answer_bytes(result) <= MAX_ANSWER_BYTES
    page = read_file(tmp_path, "MEMORY.md", line_offset=150_001, max_lines=2)
    assert page.content == "150000: needle in every single line of this file\n150001: needle in every single line of this file\n"


def test_context_lines_and_queries_are_capped(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("needle\n")
    with pytest.raises(InvalidContextLines):
        search(tmp_path, "needle", context_lines=memory_tools.MAX_CONTEXT_LINES + 1)
    with pytest.raises(QueryTooLong):
        search(tmp_path, "n" * (memory_tools.MAX_QUERY_BYTES + 1))


class SteppingClock:
    """Returns 0 for the first `calm` readings, then a time far past any budget."""

    def __init__(self, calm: int) -> None:
        self.readings = 0
        self.calm = calm

    def __call__(self) -> float:
        self.readings += 1
        return 0.0 if self.readings <= self.calm else 1_000.0


def test_a_search_out_of_time_returns_the_page_so_far_with_a_cursor(tmp_path: Path) -> None:
    with (tmp_path / "sparse.md").open("w", encoding="utf-8") as handle:
        for number in range(50_000):
            handle.write(f"{'needle' if number % 20 == 0 else 'hay'} {number}\n")
    # Readings: the deadline, the UTF-8 check's chunk, then one per 1,024 lines (the second is late).
    result = search(tmp_path, "needle", clock=SteppingClock(calm=3), time_budget_seconds=5)
    assert result.truncated and result.matches
    assert len(result.matches) < 200
    assert result.next_cursor == str(len(result.matches))
    resumed = search(tmp_path, "needle", cursor=result.next_cursor)
    assert resumed.matches[0].line_number == result.matches[-1].line_number + 20


def test_a_search_out_of_time_before_any_match_says_so(tmp_path: Path) -> None:
    write_every_line_matches(tmp_path / "MEMORY.md", 10_000, line="hay")
    with pytest.raises(AnswerTimedOut, match="narrow the path or the query"):
        search(tmp_path, "needle", clock=SteppingClock(calm=1), time_budget_seconds=5)
    with pytest.raises(AnswerTimedOut):
        read_file(tmp_path, "MEMORY.md", clock=SteppingClock(calm=1), time_budget_seconds=5)


_PEAK_RSS_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from codex_memories.read import memory_tools
    root = Path(sys.argv[1])
    memory_tools.read_file(root, "small.md")  # loads the tokenizer, a fixed cost
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    searched = memory_tools.search(root, "needle", path="MEMORY.md", context_lines=5)
    read = memory_tools.read_file(root, "MEMORY.md")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"added_kib": after - before, "matches": len(searched.matches), "read_truncated": read.truncated}))
    """
)


def test_peak_memory_of_search_and_read_does_not_grow_with_the_file(tmp_path: Path) -> None:
    write_every_line_matches(tmp_path / "MEMORY.md", 1_500_000)  # about 70 MB, every line a match
    (tmp_path / "small.md").write_text("small\n")
    completed = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS_PROBE, str(tmp_path)], capture_output=True, text=True, check=True
    )
    measured = json.loads(completed.stdout)
    assert measured["matches"] > 0 and measured["read_truncated"]
    # Loading the file would add at least its 70 MB; streaming adds a few MB of buffers.
    assert measured["added_kib"] < 40 * 1024, measured


def test_a_listing_of_many_long_names_stays_under_the_answer_ceiling(tmp_path: Path) -> None:
    for number in range(2_000):
        (tmp_path / f"{number:04d}-{'n' * 240}.md").write_text("x")
    first = list_entries(tmp_path)
    assert first.truncated and len(first.entries) < 2_000
    assert answer_bytes(first) <= MAX_ANSWER_BYTES
    second = list_entries(tmp_path, cursor=first.next_cursor)
    assert second.entries[0].path.startswith(f"{len(first.entries):04d}-")


# -- arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda root: read_file(root, "\ud800.md"), InvalidPath),
        (lambda root: read_file(root, "x/" * 2_100), InvalidPath),
        (lambda root: list_entries(root, "n" * 256), InvalidPath),
        (lambda root: search(root, "needle \udc00"), InvalidText),
        (lambda root: search(root, "needle", cwd="/src/\ud800"), InvalidText),
        (lambda root: list_entries(root, cursor="1" * (MAX_CURSOR_DIGITS + 1)), InvalidCursor),
        (lambda root: add_ad_hoc_note(root, "x" * (NOTE_MAX_BYTES + 1)), NoteTooLong),
        (lambda root: add_ad_hoc_note(root, "remember \ud800"), InvalidNote),
    ],
)
def test_arguments_past_their_bound_or_not_unicode_are_one_named_error(tmp_path: Path, call, kind) -> None:
    (tmp_path / "MEMORY.md").write_text("needle\n", encoding="utf-8")
    with pytest.raises(kind) as raised:
        call(tmp_path)
    assert len(str(raised.value)) < 300  # the rejected value is never echoed whole
    assert not (tmp_path / "extensions").exists()


def test_a_note_of_exactly_the_bound_is_written(tmp_path: Path) -> None:
    add_ad_hoc_note(tmp_path, "é" * (NOTE_MAX_BYTES // 2))
    [held] = notes.list_held_notes(tmp_path)
    assert len(held.text.encode("utf-8")) == NOTE_MAX_BYTES


def test_a_file_the_system_refuses_to_read_is_file_unreadable(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "MEMORY.md").write_text("needle\n", encoding="utf-8")

    def refuse(self, path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(memory_tools.SandboxedFolder, "open_file", refuse)
    with pytest.raises(FileUnreadable, match="Permission denied"):
        read_file(tmp_path, "MEMORY.md")
