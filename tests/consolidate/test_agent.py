"""The consolidation agent: sandboxed file tools and the tool-calling loop against a real test server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from openai import OpenAI

from codex_memories import paths
from codex_memories.consolidate.agent import AgentStopReason, run_consolidation_agent
from codex_memories.consolidate.agent_tools import (
    TOOL_DEFINITIONS,
    TOOL_NAMES,
    MemoryFileTools,
    chat_tools,
    responses_tools,
)
from codex_memories.consolidate.consolidators import AgentConsolidator, Consolidator, build_consolidation_prompt
from codex_memories.prompts import RenderedPrompt
from tests.support.openai_server import RecordedRequest, ScriptedReply, ToolCall, running_openai_server

PROMPT = RenderedPrompt(text="Consolidate the memory folder. PROMPT-MARKER", template_name="consolidation", sha256="0" * 64)
RAW_MEMORIES = "# Raw Memories\n\nMerged stage-1 raw memories (stable ascending thread-id order):\n\n## Thread `t-1`\ncwd: /home/dev/app\n\nthe user prefers uv\n"
DIFF_TEXT = "# Memory Workspace Diff\n\n## Status\n- A raw_memories.md\n"
SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"


class Script:
    """Answers requests with the given replies in order; the last one repeats."""

    def __init__(self, *replies: ScriptedReply) -> None:
        self.replies = list(replies)
        self.calls = 0

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return reply


def call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments=json.dumps(arguments), call_id=call_id)


def calls_reply(*calls: ToolCall, total_tokens: int | None = None) -> ScriptedReply:
    usage = None if total_tokens is None else {"input_tokens": total_tokens - 10, "output_tokens": 10}
    return ScriptedReply(tool_calls=tuple(calls), usage=usage)


def text_reply(text: str, total_tokens: int | None = None) -> ScriptedReply:
    usage = None if total_tokens is None else {"input_tokens": total_tokens - 10, "output_tokens": 10}
    return ScriptedReply(text=text, usage=usage)


def write(root: Path, relative: str, text: str) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="")
    return target


def snapshot(folder: Path) -> dict[str, bytes | str]:
    result: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                result[relative] = f"symlink -> {os.readlink(path)}"
            elif path.is_file():
                result[relative] = path.read_bytes()
            else:
                result[relative] = "dir"
    return result


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "memories"
    sibling = tmp_path / "sibling"
    root.mkdir()
    sibling.mkdir()
    write(sibling, "keep.txt", "outside the memory root\n")
    write(root, paths.RAW_MEMORIES_FILE, RAW_MEMORIES)
    write(root, paths.WORKSPACE_DIFF_FILE, DIFF_TEXT)
    write(root, ".git/config", "[core]\n")
    write(root, "extensions/ad_hoc/notes/2025-10-16T10-00-00-tabs.md", "I prefer tabs.\n")
    (root / "linked").symlink_to(sibling, target_is_directory=True)
    return root, sibling


def run_agent(server, root: Path, api_mode: str, **overrides) -> object:
    options = dict(
        model="test-model",
        api_mode=api_mode,
        prompt=PROMPT,
        max_steps=10,
        max_total_tokens=1_000_000,
        timeout_seconds=30,
        should_continue=lambda: True,
        retry_backoff_seconds=(0.0,),
    )
    options.update(overrides)
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    return run_consolidation_agent(root, client=client, **options)


# -- the loop against the test server ----------------------------------------------------------------


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
def test_escapes_are_refused_and_the_refusals_reach_the_model(layout: tuple[Path, Path], api_mode: str) -> None:
    root, sibling = layout
    sibling_before = snapshot(sibling)
    root_before = snapshot(root)
    outside_target = sibling / "x"
    script = Script(
        calls_reply(
            call("write_file", "c1", path="../outside.txt", content="escaped"),
            call("write_file", "c2", path=str(outside_target), content="escaped"),
            call("write_file", "c3", path=".git/config", content="[core]\n\tfsmonitor = evil\n"),
            call("write_file", "c4", path="linked/evil.md", content="escaped"),
            call("edit_file", "c5", path=paths.WORKSPACE_DIFF_FILE, old="- A raw_memories.md", new="- none"),
            call("delete_file", "c6", path=paths.WORKSPACE_DIFF_FILE),
            call("read_file", "c7", path="../sibling/keep.txt", start_line=None, end_line=None),
            call("delete_file", "c8", path="extensions/ad_hoc/notes/2025-10-16T10-00-00-tabs.md"),
        ),
        text_reply("I could not write anything."),
    )
    with running_openai_server(script) as server:
        run = run_agent(server, root, api_mode)
        requests = server.requests

    assert run.completed and run.stop_reason == AgentStopReason.finished
    assert run.refused_calls == 8
    assert run.tool_calls == 8
    assert run.files_written == [] and run.files_deleted == []
    assert snapshot(sibling) == sibling_before
    assert snapshot(root) == root_before
    assert not (root.parent / "outside.txt").exists()
    assert not outside_target.exists()
    follow_up = requests[1].input_text
    assert follow_up.count("refused:") == 8
    assert "contains '..'" in follow_up
    assert "is absolute" in follow_up
    assert ".git" in follow_up and "off limits" in follow_up
    assert "'linked' is a symlink" in follow_up
    assert "phase2_workspace_diff.md is read-only" in follow_up
    assert "append-only" in follow_up
    assert "outside the memory root\n" not in follow_up


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
def test_happy_path_reads_writes_and_finishes(layout: tuple[Path, Path], api_mode: str) -> None:
    root, _ = layout
    memory = "# Task Group: /home/dev/app\nscope: app\napplies_to: cwd=/home/dev/app; reuse_rule=always\n"
    summary = "v1\n\n## User Profile\nA developer.\n\n## User preferences\n- prefers uv\n\n## General Tips\n\n## What's in Memory\n"
    script = Script(
        calls_reply(call("read_file", "r1", path=paths.RAW_MEMORIES_FILE, start_line=None, end_line=None), total_tokens=100),
        calls_reply(
            call("write_file", "w1", path=paths.MEMORY_FILE, content=memory),
            call("write_file", "w2", path=paths.MEMORY_SUMMARY_FILE, content=summary),
            total_tokens=200,
        ),
        text_reply("Wrote MEMORY.md and memory_summary.md.", total_tokens=300),
    )
    with running_openai_server(script) as server:
        run = run_agent(server, root, api_mode)
        requests = server.requests

    assert run.completed
    assert run.stop_reason == "finished"
    assert run.steps == 3
    assert run.tool_calls == 3
    assert run.tool_calls_by_name == {"read_file": 1, "write_file": 2}
    assert run.refused_calls == 0
    assert run.usage.total_tokens == 600
    assert run.usage.output_tokens == 30
    assert run.final_message == "Wrote MEMORY.md and memory_summary.md."
    assert run.files_written == [paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE]
    assert (root / paths.MEMORY_FILE).read_text(encoding="utf-8") == memory
    assert (root / paths.MEMORY_SUMMARY_FILE).read_text(encoding="utf-8").splitlines()[0] == "v1"

    assert len(requests) == 3
    first = requests[0]
    assert "PROMPT-MARKER" in first.input_text
    tool_names = [tool.get("name") or tool["function"]["name"] for tool in first.body["tools"]]
    assert tool_names == list(TOOL_NAMES)
    # The file content went back to the model with line numbers, tied to the right call id.
    assert "     1\t# Raw Memories" in requests[1].input_text
    if api_mode == "responses":
        assert first.body["store"] is False
        items = requests[1].body["input"]
        assert {"type": "function_call", "call_id": "r1", "name": "read_file"}.items() <= items[1].items()
        assert items[2]["type"] == "function_call_output" and items[2]["call_id"] == "r1"
    else:
        messages = requests[1].body["messages"]
        assert messages[1]["role"] == "assistant" and messages[1]["tool_calls"][0]["id"] == "r1"
        assert messages[2] == {"role": "tool", "tool_call_id": "r1", "content": messages[2]["content"]}
    # The whole conversation is resent: the third request still carries the prompt.
    assert "PROMPT-MARKER" in requests[2].input_text


def test_the_step_limit_stops_the_loop(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    script = Script(calls_reply(call("list_files", "l", path=None)))
    with running_openai_server(script) as server:
        run = run_agent(server, root, "responses", max_steps=3)
        request_count = len(server.requests)

    assert not run.completed
    assert run.stop_reason == AgentStopReason.step_limit
    assert run.steps == 3
    assert request_count == 3
    assert run.tool_calls_by_name == {"list_files": 3}


def test_the_token_budget_stops_the_loop(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    script = Script(calls_reply(call("list_files", "l", path=None), total_tokens=1_000))
    with running_openai_server(script) as server:
        run = run_agent(server, root, "chat", max_total_tokens=2_500)
        request_count = len(server.requests)

    assert run.stop_reason == AgentStopReason.token_budget
    assert not run.completed
    assert run.steps == 3
    assert request_count == 3
    assert run.usage.total_tokens == 3_000


def test_lost_ownership_before_the_first_step_makes_no_request(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    with running_openai_server(Script(text_reply("done"))) as server:
        run = run_agent(server, root, "responses", should_continue=lambda: False)
        request_count = len(server.requests)

    assert run.stop_reason == AgentStopReason.ownership_lost
    assert not run.completed
    assert run.steps == 0
    assert request_count == 0


def test_lost_ownership_stops_before_the_next_tool_call(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    answers = iter([True, True, False])
    script = Script(
        calls_reply(
            call("write_file", "w1", path=paths.MEMORY_FILE, content="one"),
            call("write_file", "w2", path=paths.MEMORY_SUMMARY_FILE, content="two"),
        )
    )
    with running_openai_server(script) as server:
        run = run_agent(server, root, "chat", should_continue=lambda: next(answers, False))

    assert run.stop_reason == AgentStopReason.ownership_lost
    assert run.steps == 1
    assert (root / paths.MEMORY_FILE).exists()
    assert not (root / paths.MEMORY_SUMMARY_FILE).exists()
    assert run.files_written == [paths.MEMORY_FILE]


@pytest.mark.parametrize("api_mode", ["responses", "chat"])
def test_a_transient_server_error_is_retried(layout: tuple[Path, Path], api_mode: str) -> None:
    root, _ = layout
    pauses: list[float] = []
    script = Script(ScriptedReply.http_error(500, "boom"), text_reply("All done."))
    with running_openai_server(script) as server:
        run = run_agent(server, root, api_mode, retry_backoff_seconds=(0.01, 0.02, 0.04), sleep=pauses.append)
        request_count = len(server.requests)

    assert run.completed
    assert run.final_message == "All done."
    assert run.steps == 1
    assert request_count == 2
    assert pauses == [0.01]


def test_persistent_transient_errors_end_as_model_error_after_three_retries(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    pauses: list[float] = []
    with running_openai_server(Script(ScriptedReply.http_error(429, "slow down"))) as server:
        run = run_agent(server, root, "responses", retry_backoff_seconds=(0.01, 0.02, 0.04), sleep=pauses.append)
        request_count = len(server.requests)

    assert run.stop_reason == AgentStopReason.model_error
    assert not run.completed
    assert request_count == 4
    assert pauses == [0.01, 0.02, 0.04]
    assert run.error is not None and "429" in run.error


def test_a_rejected_request_is_not_retried(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    with running_openai_server(Script(ScriptedReply.http_error(400, "bad request"))) as server:
        run = run_agent(server, root, "chat")
        request_count = len(server.requests)

    assert run.stop_reason == AgentStopReason.model_error
    assert request_count == 1
    assert "400" in (run.error or "")


def test_the_wall_clock_timeout_stops_a_slow_model(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    slow = ScriptedReply(text="too late", delay_seconds=3.0)
    with running_openai_server(Script(slow)) as server:
        run = run_agent(server, root, "responses", timeout_seconds=0.5)

    assert run.stop_reason == AgentStopReason.timeout
    assert not run.completed
    assert run.steps == 0


def test_the_agent_consolidator_reports_an_outcome(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    summary = "v1\n\n## User Profile\n"
    script = Script(
        calls_reply(
            call("write_file", "w1", path=paths.MEMORY_FILE, content="# Task Group: x\n"),
            call("write_file", "w2", path=paths.MEMORY_SUMMARY_FILE, content=summary),
            call("write_file", "w3", path="../escape.md", content="no"),
        ),
        text_reply("done"),
    )
    with running_openai_server(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        consolidator = AgentConsolidator(client, "test-model", "responses", max_steps=5, max_total_tokens=100_000, timeout_seconds=30)
        assert isinstance(consolidator, Consolidator)
        outcome = consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)
        first_input = server.requests[0].input_text

    assert outcome.completed and outcome.stop_reason == "finished"
    assert outcome.files_changed == [paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE]
    assert outcome.tool_calls == 3 and outcome.refused_calls == 1
    assert outcome.steps == 2
    assert "Memory consolidation" in first_input


# -- the tools on their own --------------------------------------------------------------------------


@pytest.fixture
def tools(layout: tuple[Path, Path]) -> MemoryFileTools:
    return MemoryFileTools(layout[0])


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "notes/../../outside.txt",
        "/etc/passwd",
        "C:/Windows/x.md",
        "back\\slash.md",
        ".git/config",
        "sub/.git/HEAD",
        ".codex-memories/baseline.tar",
        "linked/keep.txt",
        "linked",
        "nul\x00.md",
        "",
    ],
)
def test_every_tool_refuses_paths_that_escape_the_sandbox(tools: MemoryFileTools, path: str) -> None:
    results = [
        tools.dispatch("read_file", json.dumps({"path": path})),
        tools.dispatch("write_file", json.dumps({"path": path, "content": "x"})),
        tools.dispatch("edit_file", json.dumps({"path": path, "old": "a", "new": "b"})),
        tools.dispatch("delete_file", json.dumps({"path": path})),
    ]
    assert all(result.startswith("refused: ") for result in results), results
    assert tools.refused_calls == 4


def test_a_symlink_inside_a_path_is_refused_even_when_it_points_inside_the_root(tools: MemoryFileTools) -> None:
    root = tools.root
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "file_alias.md").symlink_to(root / paths.RAW_MEMORIES_FILE)
    assert tools.dispatch("write_file", json.dumps({"path": "alias/new.md", "content": "x"})).startswith("refused: ")
    assert tools.dispatch("read_file", json.dumps({"path": "file_alias.md"})).startswith("refused: ")
    assert not (root / "real" / "new.md").exists()


def test_the_diff_file_and_notes_are_readable_but_read_only(tools: MemoryFileTools) -> None:
    assert "# Memory Workspace Diff" in tools.read_file(paths.WORKSPACE_DIFF_FILE)
    assert "I prefer tabs." in tools.read_file("extensions/ad_hoc/notes/2025-10-16T10-00-00-tabs.md")
    result = tools.dispatch("write_file", json.dumps({"path": "extensions/ad_hoc/notes/new.md", "content": "x"}))
    assert result.startswith("refused: ")


def test_write_creates_parent_folders_and_replaces_atomically(tools: MemoryFileTools) -> None:
    result = tools.dispatch("write_file", json.dumps({"path": "skills/run-tests/SKILL.md", "content": "---\nname: run-tests\n---\n"}))
    assert result == "wrote skills/run-tests/SKILL.md (24 bytes)"
    assert tools.dispatch("write_file", json.dumps({"path": "skills/run-tests/SKILL.md", "content": "v2\n"})).startswith("wrote")
    assert (tools.root / "skills/run-tests/SKILL.md").read_text(encoding="utf-8") == "v2\n"
    assert sorted(p.name for p in (tools.root / "skills/run-tests").iterdir()) == ["SKILL.md"]
    assert tools.files_written == ["skills/run-tests/SKILL.md"]


def test_read_file_numbers_lines_and_honours_ranges(tools: MemoryFileTools) -> None:
    write(tools.root, "notes.md", "one\ntwo\nthree\nfour\n")
    assert tools.read_file("notes.md", start_line=2, end_line=3) == "     2\ttwo\n     3\tthree\n[lines 4-4 not shown]"
    assert tools.read_file("notes.md", start_line=4) == "     4\tfour"
    assert tools.dispatch("read_file", json.dumps({"path": "notes.md", "start_line": 9})).startswith("error: start_line 9")
    assert tools.dispatch("read_file", json.dumps({"path": "missing.md"})) == "error: missing.md does not exist"


def test_read_file_caps_large_output_and_says_where_to_continue(tools: MemoryFileTools) -> None:
    write(tools.root, "big.md", "".join(f"line {n} " + "x" * 1_000 + "\n" for n in range(200)))
    result = tools.read_file("big.md")
    assert len(result) < 70_000
    assert "call read_file again with start_line=" in result


def test_read_and_search_redact_secrets(tools: MemoryFileTools) -> None:
    write(tools.root, "leak.md", f"token: {SECRET}\n")
    assert SECRET not in tools.read_file("leak.md")
    assert SECRET not in tools.search_files("token")


def test_search_reports_path_and_line_case_insensitively(tools: MemoryFileTools) -> None:
    write(tools.root, "a.md", "Alpha\nbeta\n")
    write(tools.root, "sub/b.md", "gamma ALPHA\n")
    assert tools.search_files("alpha") == "a.md:1: Alpha\nsub/b.md:1: gamma ALPHA"
    assert tools.search_files("alpha", path="sub") == "sub/b.md:1: gamma ALPHA"
    assert tools.search_files("nothing-here") == "no matches for 'nothing-here' in the memory root"
    # Nothing from .git or through the symlink is searched.
    assert tools.search_files("[core]").startswith("no matches")
    assert tools.search_files("outside the memory root").startswith("no matches")


def test_list_files_skips_git_and_does_not_follow_symlinks(tools: MemoryFileTools) -> None:
    listing = tools.list_files()
    assert ".git" not in listing
    assert "linked (symlink, not followed)" in listing
    assert "keep.txt" not in listing
    assert f"{paths.RAW_MEMORIES_FILE} ({len(RAW_MEMORIES)} bytes)" in listing
    assert "extensions/ad_hoc/notes/" in listing


def test_edit_needs_exactly_one_occurrence(tools: MemoryFileTools) -> None:
    write(tools.root, "MEMORY.md", "a\nb\na\n")
    assert tools.dispatch("edit_file", json.dumps({"path": "MEMORY.md", "old": "z", "new": "y"})).startswith("error: the old text was not found")
    assert "occurs 2 times" in tools.dispatch("edit_file", json.dumps({"path": "MEMORY.md", "old": "a", "new": "y"}))
    assert tools.dispatch("edit_file", json.dumps({"path": "MEMORY.md", "old": "b", "new": "c"})) == "edited MEMORY.md"
    assert (tools.root / "MEMORY.md").read_text(encoding="utf-8") == "a\nc\na\n"
    assert tools.failed_calls == 2 and tools.refused_calls == 0


def test_delete_removes_files_only(tools: MemoryFileTools) -> None:
    write(tools.root, "rollout_summaries/old.md", "x")
    assert tools.dispatch("delete_file", json.dumps({"path": "rollout_summaries"})).startswith("error: ")
    assert tools.dispatch("delete_file", json.dumps({"path": "rollout_summaries/old.md"})) == "deleted rollout_summaries/old.md"
    assert not (tools.root / "rollout_summaries/old.md").exists()
    assert tools.files_deleted == ["rollout_summaries/old.md"]


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("run_shell", "{}", "error: unknown tool 'run_shell'"),
        ("read_file", "{not json", "error: the arguments are not valid JSON"),
        ("read_file", "[]", "error: the arguments must be a JSON object"),
        ("read_file", "{}", "error: read_file needs the parameter 'path'"),
        ("read_file", '{"path": "a", "mode": "rw"}', "error: read_file has no parameter(s) mode"),
        ("read_file", '{"path": "a", "start_line": "2"}', "error: read_file: parameter 'start_line' must be of type integer or null"),
    ],
)
def test_dispatch_turns_bad_calls_into_messages(tools: MemoryFileTools, name: str, arguments: str, expected: str) -> None:
    assert tools.dispatch(name, arguments).startswith(expected)


def test_tool_definitions_fit_both_apis_and_offer_no_shell() -> None:
    assert set(TOOL_NAMES) == {"list_files", "read_file", "search_files", "write_file", "edit_file", "delete_file"}
    for definition in TOOL_DEFINITIONS:
        parameters = definition["parameters"]
        assert parameters["additionalProperties"] is False
        assert sorted(parameters["required"]) == sorted(parameters["properties"])
    assert [tool["name"] for tool in responses_tools()] == list(TOOL_NAMES)
    assert all(tool["type"] == "function" for tool in responses_tools() + chat_tools())
    assert [tool["function"]["name"] for tool in chat_tools()] == list(TOOL_NAMES)


# -- side doors: hard links, swapped links, names outside the layout ---------------------------------


def test_a_hard_link_to_an_outside_file_is_refused_for_reading_writing_and_searching(layout: tuple[Path, Path]) -> None:
    root, sibling = layout
    tools = MemoryFileTools(root)
    os.link(sibling / "keep.txt", root / paths.MEMORY_FILE)
    read = tools.dispatch("read_file", json.dumps({"path": paths.MEMORY_FILE}))
    written = tools.dispatch("write_file", json.dumps({"path": paths.MEMORY_FILE, "content": "overwritten"}))
    edited = tools.dispatch("edit_file", json.dumps({"path": paths.MEMORY_FILE, "old": "outside", "new": "inside"}))
    assert read.startswith("refused: ") and "hard links" in read
    assert written.startswith("refused: ") and edited.startswith("refused: ")
    assert "outside the memory root" not in tools.search_files("outside")
    assert f"{paths.MEMORY_FILE} (hard link, not read)" in tools.list_files()
    assert (sibling / "keep.txt").read_text(encoding="utf-8") == "outside the memory root\n"
    assert tools.files_written == []


def test_a_folder_swapped_for_a_symlink_after_the_checks_is_never_followed(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, sibling = layout
    tools = MemoryFileTools(root)
    write(root, "skills/tool/SKILL.md", "inside\n")
    write(sibling, "tool/SKILL.md", "outside the memory root\n")
    real_open = os.open

    def open_after_swapping(path, flags, mode=0o777, *, dir_fd=None):
        # `_resolve` has already checked every component; the swap lands just before the open.
        if path == "skills" and dir_fd is not None and not (root / "skills").is_symlink():
            os.rename(root / "skills", root / "skills-moved")
            os.symlink(sibling, root / "skills", target_is_directory=True)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_after_swapping)
    result = tools.dispatch("read_file", json.dumps({"path": "skills/tool/SKILL.md"}))
    assert result.startswith("refused: ") and "symlink" in result
    assert "outside the memory root" not in result


@pytest.mark.parametrize(
    "path",
    [
        "notes.md",
        "first.md",
        "extensions/chronicle/resources/2025-10-16T10-00-00-x.md",
        "extensions/ad_hoc/instructions.md",
        "rollout_summaries/deeper/x.md",
        "skills/SKILL.md",
        "skills/tool/run.sh",
        "skills/tool/scripts/build.py",
        "skills/tool/scripts/deploy.js",
        "skills/tool/SKILL",
        "skills/.hidden/SKILL.md",
        "skills/file:tool/SKILL.md",
        "skills/~/SKILL.md",
        "skills/\u2025/SKILL.md",
        "skills/\uff0e\uff0e/SKILL.md",
        "skills/lo\u202egp.md/SKILL.md",
        "skills/tool\x07/SKILL.md",
        "skills/tool/SKILL\u200b.md",
        "MEMORY.md\x00.sh",
    ],
)
def test_names_outside_the_layout_codex_reads_are_refused_for_writing(tools: MemoryFileTools, path: str) -> None:
    before = snapshot(tools.root)
    results = [
        tools.dispatch("write_file", json.dumps({"path": path, "content": "x"})),
        tools.dispatch("edit_file", json.dumps({"path": path, "old": "a", "new": "b"})),
        tools.dispatch("delete_file", json.dumps({"path": path})),
    ]
    assert all(result.startswith("refused: ") for result in results), results
    assert snapshot(tools.root) == before


@pytest.mark.parametrize(
    "path",
    [
        paths.MEMORY_FILE,
        paths.MEMORY_SUMMARY_FILE,
        paths.RAW_MEMORIES_FILE,
        "rollout_summaries/2025-10-16T10-00-00-abcd.md",
        "skills/run-tests/SKILL.md",
        "skills/run-tests/examples/pytest-output.md",
        "skills/café/SKILL.md",
    ],
)
def test_the_layout_codex_reads_stays_writable(tools: MemoryFileTools, path: str) -> None:
    assert tools.dispatch("write_file", json.dumps({"path": path, "content": "x\n"})).startswith("wrote ")
    assert tools.dispatch("delete_file", json.dumps({"path": path})) == f"deleted {path}"


def test_nothing_the_agent_writes_is_executable(tools: MemoryFileTools) -> None:
    write(tools.root, paths.MEMORY_FILE, "old\n")
    os.chmod(tools.root / paths.MEMORY_FILE, 0o755)
    tools.dispatch("write_file", json.dumps({"path": paths.MEMORY_FILE, "content": "new\n"}))
    tools.dispatch("write_file", json.dumps({"path": "skills/tool/SKILL.md", "content": "x\n"}))
    assert os.stat(tools.root / paths.MEMORY_FILE).st_mode & 0o777 == 0o644
    assert not os.stat(tools.root / "skills/tool/SKILL.md").st_mode & 0o111


def test_a_file_too_large_to_load_is_an_error_not_a_memory_spike(tools: MemoryFileTools, monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_memories.consolidate import agent_tools

    monkeypatch.setattr(agent_tools, "MAX_FILE_BYTES", 1_000)
    write(tools.root, paths.RAW_MEMORIES_FILE, "needle\n" * 1_000)
    assert tools.dispatch("read_file", json.dumps({"path": paths.RAW_MEMORIES_FILE})).startswith("error: raw_memories.md is larger than 1000 bytes")
    assert tools.dispatch("edit_file", json.dumps({"path": paths.RAW_MEMORIES_FILE, "old": "needle", "new": "x"})).startswith("error: ")
    assert f"[not searched, larger than 1000 bytes: {paths.RAW_MEMORIES_FILE}]" in tools.search_files("needle")
