"""The memories MCP server over stdio: a fast, strict front for `mcp_tools_server` (spec 5.5, 7.1).

Contract:
- `run_stdio(memory_root, notes_enabled=True)` serves one client over stdin/stdout until it
  disconnects; `python -m codex_memories.read.mcp_server --memory-root DIR [--no-notes]` (and
  `codex-memories mcp`, which the launcher sends here without loading the CLI) does the same.
- Fast start (issue 35.7): Codex gives an MCP server 10 s to start, and the SDK with its pydantic
  models takes about 35 times a bare `python -c pass` to import (8.8 s on a loaded machine). So this
  module imports only the standard library; it answers `initialize` and the first `tools/list`
  itself at once (`early_answer`: the SDK's own results, the tool list stored in
  `mcp_tools_listing.json`; the SDK still gets both messages, its answers are compared and a
  difference said on stderr), while the SDK and the memory tools load in a background thread.
  Tool calls wait for the SDK, in order (benchmarks/mcp_start.py measures both).
- Strict (issue 36.6): every line that is not one valid JSON-RPC 2.0 message gets a JSON-RPC error,
  never silence (the SDK drops them without a word): `-32700` for a line that is not JSON, `-32600`
  for a batch (MCP has none since 2025-06-18), a value that is not an object, a wrong or missing
  `jsonrpc`, an id that is not a string or an integer, a message with neither a method nor a
  result/error, or one the SDK's schema refuses; the error carries the request's id when it had a
  usable one, else `null`. Unknown methods get the SDK's `-32601`. `screen_message(line)` is that
  decision, pure.
- Writes one whole line per message to stdout (a lock keeps the front's answers and the SDK's
  apart); logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVER_NAME = "codex-memories"
SERVER_INSTRUCTIONS = (
    "Read-only access to the Codex memory folder: list folders, read files by line range and "
    "search lines. Paths are relative to the memory root. add_ad_hoc_note (when offered) records "
    "one new note and must only be used when the user explicitly asks to remember, forget or "
    "update something."
)
# What the SDK negotiates through `initialize` (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS;
# importing that package costs as much as the SDK): the client's version when listed, else the last.
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# The capabilities the SDK's MCPServer announces (it registers prompt and resource handlers too).
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

# The SDK's own `tools/list` result for our tools, as it sends it (tests/read/test_mcp_malformed.py
# compares the two and rewrites this file with UPDATE_MCP_TOOLS_LISTING=1).
TOOLS_LISTING_FILE = Path(__file__).with_name("mcp_tools_listing.json")
NOTE_TOOL = "add_ad_hoc_note"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass(frozen=True)
class Screened:
    """One input line judged: `error` is the JSON-RPC error response to send (the line goes no
    further), else `message` is the parsed message for the SDK."""

    message: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def error_response(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _usable_id(message: dict[str, Any]) -> Any:
    value = message.get("id")
    # bool is an int in Python, never a JSON-RPC id.
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def screen_message(line: str) -> Screened:
    """The decision for one line of stdin (module contract); blank lines are skipped by the caller."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as error:
        return Screened(error=error_response(None, PARSE_ERROR, f"Parse error: not JSON ({error})"))
    if isinstance(message, list):
        return Screened(error=error_response(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one message per line"))
    if not isinstance(message, dict):
        return Screened(error=error_response(None, INVALID_REQUEST, f"Invalid Request: a JSON {type(message).__name__}, not an object"))
    request_id = _usable_id(message)
    if message.get("jsonrpc") != "2.0":
        return Screened(error=error_response(request_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'))
    if "id" in message and request_id is None:
        return Screened(error=error_response(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"))
    has_method = isinstance(message.get("method"), str)
    is_response = "id" in message and ("result" in message or "error" in message)
    if not has_method and not is_response:
        return Screened(error=error_response(request_id, INVALID_REQUEST, 'Invalid Request: no "method" (and not a response)'))
    if has_method and "params" in message and not isinstance(message["params"], dict):
        return Screened(error=error_response(request_id, INVALID_REQUEST, 'Invalid Request: "params" must be an object'))
    return Screened(message=message)


def initialize_result(params: Any) -> dict[str, Any]:
    """What the SDK answers to `initialize` with these params (see HANDSHAKE_PROTOCOL_VERSIONS)."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": {"name": SERVER_NAME, "version": server_version()},
        "instructions": SERVER_INSTRUCTIONS,
    }


def server_version() -> str:
    """Our distribution's version (metadata, no import of anything heavy); the SDK server gets it too."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codex-memories")
    except PackageNotFoundError:
        return "unknown"


def tools_list_result(*, notes_enabled: bool) -> dict[str, Any]:
    """What the SDK answers to `tools/list` (first page, which is all of them)."""
    listing = json.loads(TOOLS_LISTING_FILE.read_text(encoding="utf-8"))
    if not notes_enabled:
        listing["tools"] = [tool for tool in listing["tools"] if tool.get("name") != NOTE_TOOL]
    return listing


def early_answer(message: dict[str, Any], *, notes_enabled: bool) -> dict[str, Any] | None:
    """The answer the front gives at once (before the SDK has loaded) to `initialize` and to a
    first-page `tools/list`: what a client waits for while it starts the server. None otherwise."""
    if "id" not in message:
        return None
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if message.get("method") == "initialize":
        result = initialize_result(params)
    elif message.get("method") == "tools/list" and not params.get("cursor"):
        result = tools_list_result(notes_enabled=notes_enabled)
    else:
        return None
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


# -- serving --------------------------------------------------------------------------------------


class _Lines:
    """stdout, one whole line per message, from any thread."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, payload: dict[str, Any] | str) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()


def run_stdio(memory_root: Path, *, notes_enabled: bool = True) -> None:
    """Serve the memory tools over stdin/stdout until the client disconnects."""
    stdin = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - lives as long as the process
    stdout = open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    # Anything else that prints (a library's warning) must not land on the wire.
    sys.stdout = sys.stderr
    serve(Path(memory_root), stdin, stdout, notes_enabled=notes_enabled)


def serve(memory_root: Path, stdin: Any, stdout: Any, *, notes_enabled: bool = True, answer_early: bool = True) -> None:
    """The loop of `run_stdio` over any text streams (tests pass pipes). `answer_early=False`
    leaves every answer to the SDK (how the tests read the SDK's own)."""
    import queue

    out = _Lines(stdout)
    inbox: queue.Queue[str | None] = queue.Queue()
    early_answers: dict[Any, dict[str, Any]] = {}
    sdk = threading.Thread(
        target=_run_sdk, args=(memory_root, notes_enabled, inbox, out, early_answers), name="mcp-sdk", daemon=True,
    )
    # Started once the first line is answered or handed on, not before: the SDK's import holds
    # the GIL for seconds, and the handshake's answers would wait for their share of it.
    for line in stdin:
        if not line.strip():
            continue
        screened = screen_message(line)
        if screened.error is not None:
            out.write(screened.error)
            continue
        answer = early_answer(screened.message or {}, notes_enabled=notes_enabled) if answer_early else None
        if answer is not None:
            early_answers[answer["id"]] = answer
            out.write(answer)
        inbox.put(line)  # the SDK sees every message, these too (it must know it was initialized)
        if sdk.ident is None:
            sdk.start()
    inbox.put(None)
    if sdk.ident is not None:
        sdk.join()


def _run_sdk(memory_root: Path, notes_enabled: bool, inbox: Any, out: _Lines, early_answers: dict[Any, dict[str, Any]]) -> None:
    """Load the SDK and the tools, then run the SDK's server over the screened lines."""
    import anyio

    anyio.run(_serve_sdk, memory_root, notes_enabled, inbox, out, early_answers)


async def _serve_sdk(memory_root: Path, notes_enabled: bool, inbox: Any, out: _Lines, early_answers: dict[Any, dict[str, Any]]) -> None:
    import anyio
    import mcp_types as types
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    from codex_memories.read.mcp_tools_server import build_server

    server = build_server(
        memory_root, name=SERVER_NAME, instructions=SERVER_INSTRUCTIONS, version=server_version(), notes_enabled=notes_enabled
    )
    lowlevel = server._lowlevel_server  # noqa: SLF001 - what MCPServer.run_stdio_async runs, on our streams
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def feed() -> None:
        async with read_writer:
            while True:
                line = await anyio.to_thread.run_sync(inbox.get)
                if line is None:
                    return
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as error:  # noqa: BLE001 - the SDK's schema refused it: a JSON-RPC error, named
                    request_id = _usable_id(json.loads(line))
                    out.write(error_response(request_id, INVALID_REQUEST, f"Invalid Request: {_first_line(error)}"))
                    continue
                await read_writer.send(SessionMessage(message))

    async def drain() -> None:
        async with write_reader:
            async for session_message in write_reader:
                text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                answered = json.loads(text)
                request_id = answered.get("id")
                if request_id in early_answers and ("result" in answered or "error" in answered):
                    early = early_answers.pop(request_id)  # the front answered it already
                    if answered != early:
                        sys.stderr.write(f"codex-memories mcp: the early answer differs from the SDK's: {early} != {answered}\n")
                    continue
                out.write(text)

    async with anyio.create_task_group() as group:
        group.start_soon(feed)
        group.start_soon(drain)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()


def _first_line(error: Exception) -> str:
    return str(error).strip().split("\n", 1)[0][:300]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m codex_memories.read.mcp_server", description="Serve a memory folder over MCP (stdio).")
    parser.add_argument("--memory-root", type=Path, required=True, help="The memory folder, e.g. ~/.codex/memories.")
    parser.add_argument("--no-notes", action="store_true", help="Do not offer the add_ad_hoc_note tool.")
    arguments = parser.parse_args(argv)
    run_stdio(arguments.memory_root.expanduser(), notes_enabled=not arguments.no_notes)


if __name__ == "__main__":
    main()
