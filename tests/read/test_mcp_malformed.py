"""The MCP server's stdio front: every malformed line gets a JSON-RPC error, never silence; the
handshake is answered before the SDK loads and agrees with the SDK; tool results are redacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from codex_memories.read.mcp_server import INVALID_REQUEST, PARSE_ERROR, initialize_result, screen_message
from codex_memories.redact import REDACTED
from tests.read.test_mcp_server import run_session

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("{not json", PARSE_ERROR, None),
        ("", PARSE_ERROR, None),
        ('[{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]', INVALID_REQUEST, None),
        ("[]", INVALID_REQUEST, None),
        ("42", INVALID_REQUEST, None),
        ('"tools/list"', INVALID_REQUEST, None),
        ('{"id": 8, "method": "tools/list"}', INVALID_REQUEST, 8),
        ('{"jsonrpc": "1.0", "id": "a", "method": "tools/list"}', INVALID_REQUEST, "a"),
        ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}', INVALID_REQUEST, None),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', INVALID_REQUEST, None),
        ('{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', INVALID_REQUEST, None),
        ('{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', INVALID_REQUEST, None),
        ('{"jsonrpc": "2.0", "id": 3}', INVALID_REQUEST, 3),
        ('{"jsonrpc": "2.0", "id": 4, "method": 7}', INVALID_REQUEST, 4),
        ('{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": [1]}', INVALID_REQUEST, 6),
    ],
)
def test_a_malformed_line_is_answered_with_a_json_rpc_error_carrying_its_id_when_usable(line: str, code: int, request_id) -> None:
    screened = screen_message(line)
    assert screened.message is None
    assert screened.error is not None
    assert (screened.error["jsonrpc"], screened.error["id"], screened.error["error"]["code"]) == ("2.0", request_id, code)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": "list", "arguments": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ],
)
def test_a_well_formed_message_goes_on_to_the_sdk(message: dict) -> None:
    assert screen_message(json.dumps(message)).message == message


@pytest.mark.parametrize(("requested", "negotiated"), [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")])
def test_the_early_initialize_answer_negotiates_the_version_as_the_sdk_does(requested: str, negotiated: str) -> None:
    assert initialize_result({"protocolVersion": requested})["protocolVersion"] == negotiated


def test_the_server_answers_every_line_of_a_garbage_session_and_its_handshake_matches_the_sdks(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("alpha\n", encoding="utf-8")
    garbage = ["{not json", "[]", '[{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]', "42",
               '{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', '{"id": 8, "method": "tools/list"}']
    lines = [json.dumps(INITIALIZE), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), *garbage,
             json.dumps({"jsonrpc": "2.0", "id": 7, "method": "no/such/method"}),
             json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})]
    completed = subprocess.run(
        [sys.executable, "-m", "codex_memories.read.mcp_server", "--memory-root", str(tmp_path)],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120, check=False,
    )
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    assert answers[0]["id"] == 1 and answers[0]["result"]["serverInfo"]["name"] == "codex-memories"
    errors = [answer for answer in answers if "error" in answer]
    assert len(errors) == len(garbage) + 1  # each garbage line, and the unknown method
    assert {answer["id"] for answer in errors} == {None, 8, 7}
    assert any(answer.get("id") == 9 and answer["result"]["tools"] for answer in answers)
    assert "differs from the SDK" not in completed.stderr, completed.stderr


def test_importing_the_server_loads_neither_the_sdk_nor_pydantic_nor_the_state_db() -> None:
    script = (
        "import sys\n"
        "import codex_memories.read.mcp_server\n"
        "heavy = ('mcp', 'mcp_types', 'pydantic', 'sqlalchemy', 'numpy', 'prefect', 'typer')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert (completed.returncode, completed.stdout.strip()) == (0, "[]"), completed.stderr


GITHUB_TOKEN = "ghp_" + "R8fK2mQz7LxW4vNc9TbY3pHs6JdA1gEuVo5i"


def test_read_and_search_results_are_redacted_even_when_the_file_holds_a_secret(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(f"deploy with token {GITHUB_TOKEN}\nother line\n", encoding="utf-8")
    calls = [("read", {"path": "MEMORY.md"}), ("search", {"query": "deploy"})]
    _, (read, searched) = anyio.run(run_session, tmp_path, calls)
    for result in (read, searched):
        assert not result.is_error
        text = json.dumps(result.structured_content) + "".join(part.text for part in result.content)
        assert GITHUB_TOKEN not in text and REDACTED in text


def _sdk_answers(root: Path, lines: list[str], *, notes_enabled: bool = True) -> list[dict]:
    """What the SDK alone answers to these lines (the front's early answers off)."""
    import io
    import threading

    from codex_memories.read.mcp_server import serve

    reader, writer = os.pipe()
    with os.fdopen(writer, "w", encoding="utf-8") as feed:
        feed.write("\n".join(lines) + "\n")
    out = io.StringIO()
    with os.fdopen(reader, encoding="utf-8") as source:
        done = threading.Thread(target=serve, args=(root, source, out), kwargs={"notes_enabled": notes_enabled, "answer_early": False})
        done.start()
        done.join(120)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("notes_enabled", [True, False])
def test_the_stored_tool_list_is_what_the_sdk_answers(tmp_path: Path, notes_enabled: bool) -> None:
    from codex_memories.read.mcp_server import TOOLS_LISTING_FILE, tools_list_result

    lines = [json.dumps(INITIALIZE), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"progressToken": 0}}})]
    answers = _sdk_answers(tmp_path, lines, notes_enabled=notes_enabled)
    [listed] = [answer["result"] for answer in answers if answer.get("id") == 2]
    if notes_enabled and os.environ.get("UPDATE_MCP_TOOLS_LISTING") == "1":
        TOOLS_LISTING_FILE.write_text(json.dumps(listed, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert tools_list_result(notes_enabled=notes_enabled) == listed
    [initialized] = [answer["result"] for answer in answers if answer.get("id") == 1]
    assert initialize_result(INITIALIZE["params"]) == initialized
