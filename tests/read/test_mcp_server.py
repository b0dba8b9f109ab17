"""The stdio MCP server, driven by the official MCP client (spec 5.5, 7.1)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from codex_memories import paths
from codex_memories.memory_folder import notes

NOTE_NAME = "2025-10-14T09-30-00-prefer-pnpm.md"


def server_parameters(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "codex_memories.read.mcp_server", "--memory-root", str(root), *extra]
    )


async def run_session(root: Path, calls, *extra: str):
    """Start the server, list its tools, run `calls` (name, arguments) in order; returns (tools, results)."""
    async with stdio_client(server_parameters(root, *extra)) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def build_root(root: Path) -> None:
    (root / "rollout_summaries").mkdir(parents=True)
    (root / "MEMORY.md").write_text("alpha\nneedle\n", encoding="utf-8")
    (root / "rollout_summaries" / "a.jsonl").write_text("needle again\n", encoding="utf-8")


def test_server_offers_the_memory_tools_and_answers_with_structured_json(tmp_path):
    build_root(tmp_path)
    calls = [
        ("list", {}),
        ("read", {"path": "MEMORY.md", "line_offset": 2}),
        ("search", {"query": "needle"}),
        ("add_ad_hoc_note", {"filename": NOTE_NAME, "note": "Prefer pnpm."}),
        ("add_ad_hoc_note", {"note": "Forget the old deploy script.", "slug": "forget-deploy-script"}),
    ]

    tools, (listed, read, searched, added, added_by_slug) = anyio.run(run_session, tmp_path, calls)

    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"list", "read", "search", "add_ad_hoc_note"}
    for name in ("list", "read", "search"):
        assert by_name[name].annotations.read_only_hint is True
    assert by_name["add_ad_hoc_note"].annotations.read_only_hint is False
    assert {"filename", "note", "slug"} <= set(by_name["add_ad_hoc_note"].input_schema["properties"])

    assert not listed.is_error
    assert listed.structured_content == {
        "path": None,
        "entries": [
            {"path": "MEMORY.md", "entry_type": "file"},
            {"path": "rollout_summaries", "entry_type": "directory"},
        ],
        "next_cursor": None,
        "truncated": False,
    }
    assert read.structured_content == {
        "path": "MEMORY.md",
        "start_line_number": 2,
        "content": "needle\n",
        "truncated": False,
    }
    assert [(match["path"], match["line_number"]) for match in searched.structured_content["matches"]] == [
        ("MEMORY.md", 2),
        ("rollout_summaries/a.jsonl", 1),
    ]
    # An agent's note waits for the user (issue 36.3): pending, never a live note file.
    assert added.structured_content["status"] == "pending"
    assert added.structured_content["path"] == f"{notes.PENDING_DIR}/{NOTE_NAME.removesuffix('.md')}.json"
    assert not (tmp_path / paths.ad_hoc_notes_dir() / NOTE_NAME).exists()
    assert [held.text for held in notes.list_held_notes(tmp_path)][0] == "Prefer pnpm."
    assert added_by_slug.structured_content["path"].endswith("-forget-deploy-script.json")


def test_failures_are_tool_errors_named_by_kind(tmp_path):
    build_root(tmp_path)
    (tmp_path / paths.ad_hoc_notes_dir()).mkdir(parents=True)
    (tmp_path / paths.ad_hoc_notes_dir() / NOTE_NAME).write_text("original", encoding="utf-8")
    calls = [
        ("read", {"path": "../secret"}),
        ("read", {"path": "."}),
        ("read", {"path": "MEMORY.md", "line_offset": 0}),
        ("list", {"cursor": "bogus"}),
        ("add_ad_hoc_note", {"filename": NOTE_NAME, "note": "replacement"}),
        ("add_ad_hoc_note", {"filename": "Not-A-Note.md", "note": "x"}),
        ("add_ad_hoc_note", {"filename": "2025-10-14T09-30-01-blank.md", "note": "   "}),
    ]

    _tools, results = anyio.run(run_session, tmp_path, calls)

    kinds = [result.structured_content["error"] for result in results]
    assert all(result.is_error for result in results)
    assert kinds == [
        "InvalidPath",
        "NotFile",
        "InvalidLineOffset",
        "InvalidCursor",
        "NoteAlreadyExists",
        "InvalidNoteFilename",
        "InvalidNote",
    ]
    assert results[0].content[0].text.startswith("InvalidPath: ")
    assert (tmp_path / paths.ad_hoc_notes_dir() / NOTE_NAME).read_text(encoding="utf-8") == "original"


def test_notes_tool_can_be_switched_off(tmp_path):
    build_root(tmp_path)

    tools, _results = anyio.run(run_session, tmp_path, [], "--no-notes")

    assert {tool.name for tool in tools} == {"list", "read", "search"}


def test_every_size_a_tool_accepts_is_bounded_with_one_clear_error(tmp_path):
    """Issue 29: a 20 MB note was accepted, a 10,000-character path got the SDK's generic error
    (with two tracebacks in the server log), a 5,000-digit cursor crashed `int()`."""
    build_root(tmp_path)
    calls = [
        ("add_ad_hoc_note", {"note": "x" * (20 << 20)}),
        ("read", {"path": "a" * 10_000}),
        ("list", {"path": "b" * 300}),
        ("search", {"query": "needle", "path": "/".join(["c"] * 3_000)}),
        ("search", {"query": "q" * 10_000}),
        ("list", {"cursor": "9" * 5_000}),
        ("list", {"max_results": "all of them"}),
        ("read", {"path": "MEMORY.md", "max_lines": 1.5}),
        ("search", {"query": "needle", "mode": "x" * 100_000}),
        ("search", {"query": "needle", "mode": "semantic", "cwd": "/" + "d" * 10_000}),
        ("list", {"max_results": 10**30}),  # above the ceiling: the ceiling
    ]

    _tools, results = anyio.run(run_session, tmp_path, calls)

    *refused, clamped = results
    assert [result.structured_content["error"] for result in refused] == [
        "NoteTooLong",
        "InvalidPath",
        "InvalidPath",
        "InvalidPath",
        "QueryTooLong",
        "InvalidCursor",
        "InvalidArgument",
        "InvalidArgument",
        "InvalidArgument",
        "InvalidCwd",
    ]
    for result in refused:
        assert result.is_error
        [text] = result.content
        kind = result.structured_content["error"]
        assert text.text == f"{kind}: {result.structured_content['message']}"
        assert "\n" not in text.text and len(text.text) < 400, text.text  # one line, nothing echoed whole
    assert refused[0].structured_content["message"].startswith("the note is 20971520 bytes; a note is at most 16384 bytes")
    assert refused[6].structured_content["message"] == "max_results: Input should be a valid integer, unable to parse string as an integer"
    assert not (tmp_path / paths.ad_hoc_notes_dir()).exists()
    assert not clamped.is_error and len(clamped.structured_content["entries"]) == 2


def test_refused_arguments_leave_no_traceback_in_the_server_log(tmp_path):
    build_root(tmp_path)
    errors = tmp_path / "server-stderr.txt"

    async def session_logging_to_file():
        with errors.open("w", encoding="utf-8") as log:
            async with stdio_client(server_parameters(tmp_path), errlog=log) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream) as session:
                    await session.initialize()
                    for arguments in ({"path": "a" * 10_000}, {"path": "MEMORY.md", "line_offset": "first"}):
                        assert (await session.call_tool("read", arguments)).is_error

    anyio.run(session_logging_to_file)
    assert "Traceback" not in errors.read_text(encoding="utf-8")
