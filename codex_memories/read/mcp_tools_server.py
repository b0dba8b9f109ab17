"""The memory tools as an MCP server of the official MCP Python SDK (2.x): what `mcp_server`
serves over stdio once the SDK has loaded (spec 5.5, 7.1).

Contract:
- `build_server(memory_root, name=, instructions=, version=, notes_enabled=True)` returns an
  `MCPServer` with the tools `list`, `read` and `search` (annotated read-only) and, when notes are
  enabled, `add_ad_hoc_note` (the only tool that writes, and only new files under
  `extensions/ad_hoc/notes/`).
- Every success is a structured JSON result (the pydantic models of `memory_tools`, also echoed as
  JSON text for clients that ignore structured content).
- Every anticipated failure is a tool error (`is_error`), with one line of text `<Kind>: <message>`
  and structured content `{"error": <Kind>, "message": …}`, where `<Kind>` is the stable error code
  (`InvalidPath`, `NotFile`, `InvalidCursor`, `NoteAlreadyExists`, `NoteTooLong`, …). Arguments
  the tool's schema refuses (a string where a number belongs, an unknown mode) are
  `InvalidArgument`, naming each field and rule without quoting the value. Every size a tool
  accepts is bounded (`memory_tools`, `notes`). Anything else is a crash and reaches the client
  as the SDK's generic tool error, with the traceback in the server log.
- `read` of `MEMORY.md` or `memory_summary.md` marks each line holding an entry a later statement
  replaced (`injection.mark_replaced_lines`, for the project of the server's working folder, the
  one Codex was launched in), so no read serves an old value as current.
- Every string of a result and of an error message goes through `redact.redact_secrets`.
- Importing this module loads the SDK and pydantic (seconds on a busy machine): `mcp_server`
  imports it in the background, after it has answered `initialize`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from codex_memories.memory_folder import notes
from codex_memories.read import memory_tools
from codex_memories.read.injection import mark_replaced_lines
from codex_memories.redact import redact_secrets

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
APPEND_ONLY = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

LIST_DESCRIPTION = (
    "List the files and folders directly inside a memory folder (not recursive), sorted by name. "
    "Pass next_cursor back as cursor to get the next page."
)
READ_DESCRIPTION = (
    "Read a memory file as text, starting at line_offset (1-based) and returning at most max_lines "
    "lines. Very long content is shortened in the middle; truncated tells you whether anything was left out."
)
SEARCH_DESCRIPTION = (
    "Find lines containing query (exact, case-sensitive substring) in one memory file or every file "
    "under a memory folder. Results are sorted by path and line; context_lines adds surrounding lines. "
    "Pages are bounded (at most 200 matches, 256 KiB, long lines cut); pass next_cursor back as cursor for more. "
    "With mode=semantic, query is a question in plain words: the answer is the memory passages relevant "
    "to it, best first, each with its line range and score, even when worded differently; none means "
    "memory holds nothing relevant. Give cwd (the session's working directory) with mode=semantic so that "
    "project's memories come first and other projects' are left out."
)
NOTE_DESCRIPTION = (
    "Record one new ad-hoc memory note. Use only after the user explicitly asks you to remember, "
    "forget or change something. Notes are append-only: an existing note is never overwritten. "
    "Give filename as YYYY-MM-DDTHH-MM-SS-<slug>.md (UTC time, slug of a-z, 0-9 and -), or omit it "
    "and optionally give slug to have the current time used."
)

PathArgument = Annotated[str | None, Field(description="Path relative to the memory root; omit for the root.")]
CursorArgument = Annotated[str | None, Field(description="next_cursor from the previous page.")]

ErrorTypes = (memory_tools.MemoryToolError, notes.NoteError)
INVALID_ARGUMENT = "InvalidArgument"


class _MemoryToolsServer(MCPServer):
    """The SDK's server, with arguments the schema refuses answered as our own one-line error
    instead of pydantic's multi-line report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):  # type: ignore[override]
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                return _error_result(INVALID_ARGUMENT, _describe_invalid_arguments(error.__cause__))
            raise


def _describe_invalid_arguments(error: ValidationError) -> str:
    """Each refused field with its rule (`max_results: Input should be a valid integer`); the
    value itself is never quoted back (it may be huge, or the user's text)."""
    problems = []
    for detail in error.errors(include_url=False, include_input=False, include_context=False):
        field = ".".join(str(part) for part in detail["loc"]) or "arguments"
        problems.append(f"{field}: {detail['msg']}")
    return "; ".join(sorted(problems))


def build_server(memory_root: Path, *, name: str, instructions: str, version: str, notes_enabled: bool = True) -> MCPServer:
    """An MCP server whose tools work on `memory_root`; nothing is read until a tool is called.
    `name`, `instructions` and `version` are the stdio front's (`mcp_server`), which answers
    `initialize` with them before this module has loaded."""
    root = Path(memory_root)
    server = _MemoryToolsServer(name=name, instructions=instructions, version=version)

    def list_tool(
        path: PathArgument = None,
        cursor: CursorArgument = None,
        max_results: Annotated[
            int, Field(description=f"Page size, at most {memory_tools.MAX_LIST_RESULTS}.")
        ] = memory_tools.DEFAULT_LIST_MAX_RESULTS,
    ) -> Annotated[CallToolResult, memory_tools.ListResult]:
        return _call(lambda: memory_tools.list_entries(root, path=path, cursor=cursor, max_results=max_results))

    def read_tool(
        path: Annotated[str, Field(description="File path relative to the memory root.")],
        line_offset: Annotated[int, Field(description="1-based line to start from.")] = 1,
        max_lines: Annotated[int | None, Field(description="Maximum number of lines to return.")] = None,
    ) -> Annotated[CallToolResult, memory_tools.ReadResult]:
        return _call(lambda: _with_replaced_marked(root, memory_tools.read_file(root, path, line_offset=line_offset, max_lines=max_lines)))

    def search_tool(
        query: Annotated[str, Field(description="Text to find, case-sensitive.")],
        path: Annotated[
            str | None, Field(description="File or folder to search, relative to the memory root; omit for all.")
        ] = None,
        cursor: CursorArgument = None,
        context_lines: Annotated[
            int, Field(description=f"Lines of context before and after each match, at most {memory_tools.MAX_CONTEXT_LINES}.")
        ] = 0,
        max_results: Annotated[
            int, Field(description=f"Page size, at most {memory_tools.MAX_SEARCH_RESULTS}.")
        ] = memory_tools.DEFAULT_SEARCH_MAX_RESULTS,
        mode: Annotated[
            memory_tools.SearchMode,
            Field(description="literal (default): exact substring per line. semantic: passages relevant to a question."),
        ] = "literal",
        cwd: Annotated[
            str | None,
            Field(description="semantic mode: the session's working directory (absolute); its project's memories first, other projects' left out."),
        ] = None,
    ) -> Annotated[CallToolResult, memory_tools.SearchResult]:
        return _call(
            lambda: memory_tools.search(
                root, query, path=path, cursor=cursor, context_lines=context_lines, max_results=max_results, mode=mode,
                cwd=cwd,
            )
        )

    def add_ad_hoc_note_tool(
        note: Annotated[str, Field(description="The note, written as given with secrets redacted. Must not be blank.")],
        filename: Annotated[
            str | None, Field(description="YYYY-MM-DDTHH-MM-SS-<slug>.md, 24 to 128 characters; omit to use the current UTC time.")
        ] = None,
        slug: Annotated[
            str | None, Field(description="Only without filename: a-z, 0-9 and -, at most 80 characters; derived from the note if omitted.")
        ] = None,
    ) -> Annotated[CallToolResult, memory_tools.NoteAdded]:
        return _call(lambda: memory_tools.add_ad_hoc_note(root, note, filename=filename, slug=slug))

    server.add_tool(list_tool, name="list", description=LIST_DESCRIPTION, annotations=READ_ONLY)
    server.add_tool(read_tool, name="read", description=READ_DESCRIPTION, annotations=READ_ONLY)
    server.add_tool(search_tool, name="search", description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    if notes_enabled:
        server.add_tool(add_ad_hoc_note_tool, name="add_ad_hoc_note", description=NOTE_DESCRIPTION, annotations=APPEND_ONLY)
    return server


def _with_replaced_marked(root: Path, result: memory_tools.ReadResult) -> memory_tools.ReadResult:
    """A read of `MEMORY.md` or the summary with the entries a later statement replaced marked
    (issue 34), for the project of this server's working folder (Codex starts it from the folder
    it was launched in; elsewhere, the user-level replacements and that folder's project's)."""
    marked = mark_replaced_lines(root, result.path, result.start_line_number, result.content, cwd=str(Path.cwd()))
    return result if marked == result.content else result.model_copy(update={"content": marked})


def _call(operation: Callable[[], BaseModel]) -> CallToolResult:
    try:
        result = operation()
    except ErrorTypes as error:
        return _error_result(error.kind, redact_secrets(str(error)))
    # The folder is redacted when written; this is the read path's own wall (issue 36.6): a file
    # written by hand, by Codex or by an older version reaches the model only redacted.
    payload = _redacted(result.model_dump(mode="json"))
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))], structured_content=payload)


def _redacted(value: Any) -> Any:
    """Every string of a JSON result (text, lines, names) through `redact_secrets`."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


def _error_result(kind: str, message: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{kind}: {message}")],
        structured_content={"error": kind, "message": message},
        is_error=True,
    )

