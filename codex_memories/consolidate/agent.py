"""The phase-2 consolidation agent: sandboxed memory-file tools and a tool-calling loop (spec 3 step 9).

Contract:
- `MemoryFileTools(root_dir)` exposes six tools over one local memory root: `list_files`,
  `read_file`, `search_files`, `write_file`, `edit_file`, `delete_file`. There is no shell and no
  network tool: the sandbox is this class, not an operating-system policy (spec 11, limitation 7).
- Every path is relative to the root. Refused (the refusal text is the tool result the model sees,
  never an exception): absolute paths, drive prefixes, backslashes, NUL bytes, `..` components,
  anything under `.git/` or our workspace-state folder, a symlink at any component, and anything
  whose resolved location falls outside the root. Writing, editing or deleting
  `phase2_workspace_diff.md` or an ad-hoc note (notes are append-only, spec 7.1) is refused too.
- Ordinary failures (missing file, `old` text absent or ambiguous, a directory where a file was
  expected, an OS error) come back as `error: ...` results; they are counted but not refusals.
- Text returned by `read_file` and `search_files` goes through `redact_secrets` (inputs are
  already redacted upstream; this is defence in depth). Output is size-capped.
- Writes are atomic (temporary file in the same folder, fsync, rename) and create missing parent
  folders inside the root.
- `run_consolidation_agent` sends the rendered prompt as the only user input with the tool
  definitions, executes every function call through `MemoryFileTools.dispatch`, and feeds the
  results back until the model answers without tool calls or a limit is reached. It returns an
  `AgentRun`; it raises only for programming errors (bad arguments). Model failures are a
  `model_error` stop, after up to three retries with backoff for transient ones (connection,
  timeout, 429, 5xx).
- Responses API conversations are stateless: each request resends the whole input list (the
  user prompt, earlier function calls and their `function_call_output` items) with `store=False`,
  so it works with servers that keep no response state (local servers, zero-retention accounts)
  and never leaves the memory contents stored server-side. Reasoning items are not resent.
- `should_continue()` is asked before every model call and before every tool call; once it says
  no, the loop stops at once as `ownership_lost` (the caller's lease heartbeat drives it).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import openai

from codex_memories import paths
from codex_memories.llm.base import TokenUsage
from codex_memories.llm.usage import chat_usage, responses_usage
from codex_memories.prompts import RenderedPrompt
from codex_memories.redact import redact_secrets

MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2_000
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_LINE_CHARS = 400
MAX_LIST_ENTRIES = 1_000
MAX_WRITE_CHARS = 2_000_000

# Folders that are workspace machinery, not memory content.
FORBIDDEN_TOP_LEVEL = frozenset({paths.GIT_DIR, paths.WORKSPACE_STATE_DIR})
READ_ONLY_FILES = frozenset({paths.WORKSPACE_DIFF_FILE})
READ_ONLY_FOLDERS = (paths.ad_hoc_notes_dir(),)

DEFAULT_MAX_STEPS = 80
DEFAULT_MAX_TOTAL_TOKENS = 2_000_000
DEFAULT_TIMEOUT_SECONDS = 1_800.0
MAX_TRANSIENT_RETRIES = 3
DEFAULT_RETRY_BACKOFF_SECONDS = (2.0, 4.0, 8.0)
# A single request never waits longer than this, even when the run has more time left.
MAX_REQUEST_TIMEOUT_SECONDS = 600.0


class ApiMode(StrEnum):
    responses = "responses"
    chat = "chat"


class AgentStopReason(StrEnum):
    finished = "finished"
    step_limit = "step_limit"
    token_budget = "token_budget"
    timeout = "timeout"
    ownership_lost = "ownership_lost"
    model_error = "model_error"


# -- tool definitions ------------------------------------------------------------------------------

_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_INTEGER = {"type": ["integer", "null"]}


def _tool(name: str, description: str, properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    # Strict function schemas: every property required, optional ones nullable, nothing extra.
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    }


TOOL_DEFINITIONS: tuple[dict[str, Any], ...] = (
    _tool(
        "list_files",
        "List the files under a folder of the memory root, recursively, with their sizes in bytes. "
        "Paths are relative to the memory root; null or '.' means the root.",
        {"path": {**_NULLABLE_STRING, "description": "Folder relative to the memory root, or null for the root."}},
    ),
    _tool(
        "read_file",
        "Read a text file of the memory root. Lines are numbered; read long files in ranges.",
        {
            "path": {"type": "string", "description": "File path relative to the memory root."},
            "start_line": {**_NULLABLE_INTEGER, "description": "First line to return (1-based); null means 1."},
            "end_line": {**_NULLABLE_INTEGER, "description": "Last line to return (inclusive); null means the end."},
        },
    ),
    _tool(
        "search_files",
        "Find lines containing a text (case-insensitive substring) in one file or a folder tree of the "
        "memory root. Each match is reported as path:line: text.",
        {
            "query": {"type": "string", "description": "The text to look for."},
            "path": {**_NULLABLE_STRING, "description": "File or folder to search; null means the whole root."},
        },
    ),
    _tool(
        "write_file",
        "Create or replace a whole file inside the memory root (parent folders are created).",
        {
            "path": {"type": "string", "description": "File path relative to the memory root."},
            "content": {"type": "string", "description": "The complete new file content."},
        },
    ),
    _tool(
        "edit_file",
        "Replace one exact occurrence of `old` with `new` in a file. Fails if `old` is missing or "
        "occurs more than once: include enough surrounding text to make it unique.",
        {
            "path": {"type": "string", "description": "File path relative to the memory root."},
            "old": {"type": "string", "description": "The exact text to replace (must occur exactly once)."},
            "new": {"type": "string", "description": "The replacement text."},
        },
    ),
    _tool(
        "delete_file",
        "Delete one file inside the memory root (not a folder).",
        {"path": {"type": "string", "description": "File path relative to the memory root."}},
    ),
)

TOOL_NAMES = tuple(definition["name"] for definition in TOOL_DEFINITIONS)


def responses_tools() -> list[dict[str, Any]]:
    """`TOOL_DEFINITIONS` in the Responses API shape (`{"type": "function", "name": ...}`)."""
    return [{"type": "function", **definition, "strict": True} for definition in TOOL_DEFINITIONS]


def chat_tools() -> list[dict[str, Any]]:
    """`TOOL_DEFINITIONS` in the chat-completions shape (`{"type": "function", "function": {...}}`)."""
    return [{"type": "function", "function": {**definition, "strict": True}} for definition in TOOL_DEFINITIONS]


# -- sandboxed file tools --------------------------------------------------------------------------


class PathRefused(Exception):
    """The path breaks a sandbox rule. The message is shown to the model."""


class ToolFailure(Exception):
    """A legitimate call that cannot be done (missing file, ambiguous edit, ...)."""


@dataclass(frozen=True)
class _Resolved:
    relative: str
    absolute: Path


class MemoryFileTools:
    """The agent's only tools. One method per tool; `dispatch` runs a model's function call.

    Counters (`calls_by_name`, `refused_calls`) and the ordered `files_written` / `files_deleted`
    lists describe everything the model did, for the run report.
    """

    def __init__(self, root_dir: Path) -> None:
        root = Path(root_dir)
        if not root.is_dir():
            raise ValueError(f"memory root {root} is not a directory")
        # Resolve once so a root reached through a symlinked parent (/tmp on macOS) still works;
        # symlinks *inside* the root are what the rules refuse.
        self.root = root.resolve(strict=True)
        self.calls_by_name: Counter[str] = Counter()
        self.refused_calls = 0
        self.failed_calls = 0
        self.files_written: list[str] = []
        self.files_deleted: list[str] = []

    # -- dispatch ---------------------------------------------------------------------------------

    def dispatch(self, name: str, arguments_json: str) -> str:
        """Run one function call; always returns the text the model should see."""
        self.calls_by_name[name] += 1
        if name not in TOOL_NAMES:
            self.failed_calls += 1
            return f"error: unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}"
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError as error:
            self.failed_calls += 1
            return f"error: the arguments are not valid JSON ({error.msg})"
        if not isinstance(arguments, dict):
            self.failed_calls += 1
            return "error: the arguments must be a JSON object"
        try:
            call = _checked_arguments(name, arguments)
            return getattr(self, name)(**call)
        except PathRefused as refusal:
            self.refused_calls += 1
            return f"refused: {refusal}"
        except ToolFailure as failure:
            self.failed_calls += 1
            return f"error: {failure}"
        except OSError as error:
            self.failed_calls += 1
            return f"error: {error.strerror or type(error).__name__}"

    # -- tools ------------------------------------------------------------------------------------

    def list_files(self, path: str | None = ".") -> str:
        target = self._resolve(path or ".")
        mode = _lstat_mode(target.absolute)
        if mode is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if stat.S_ISREG(mode):
            return f"{target.relative} ({target.absolute.stat().st_size} bytes)"
        if not stat.S_ISDIR(mode):
            raise ToolFailure(f"{_shown(target)} is not a file or folder")
        lines: list[str] = []
        truncated = False
        for relative, kind, size in self._walk(target):
            if len(lines) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            if kind == "dir":
                lines.append(f"{relative}/")
            elif kind == "file":
                lines.append(f"{relative} ({size} bytes)")
            else:
                lines.append(f"{relative} (symlink, not followed)")
        if not lines:
            return f"{_shown(target)} is empty"
        if truncated:
            lines.append(f"[listing truncated at {MAX_LIST_ENTRIES} entries; list a subfolder]")
        return "\n".join(lines)

    def read_file(self, path: str, start_line: int | None = 1, end_line: int | None = None) -> str:
        target = self._resolve(path)
        text = self._read_text(target)
        start = 1 if start_line is None else start_line
        if start < 1:
            raise ToolFailure("start_line is 1-based and must be at least 1")
        if end_line is not None and end_line < start:
            raise ToolFailure("end_line must not be smaller than start_line")
        lines = text.splitlines()
        if not lines:
            return f"{target.relative} is empty"
        if start > len(lines):
            raise ToolFailure(f"start_line {start} is past the end of {target.relative} ({len(lines)} lines)")
        last = len(lines) if end_line is None else min(end_line, len(lines))
        rendered: list[str] = []
        used = 0
        number = start
        for number in range(start, last + 1):
            line = redact_secrets(lines[number - 1])
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line truncated]"
            entry = f"{number:>6}\t{line}"
            if used + len(entry) + 1 > MAX_READ_CHARS and rendered:
                rendered.append(
                    f"[output truncated after line {number - 1} of {len(lines)}; "
                    f"call read_file again with start_line={number}]"
                )
                break
            rendered.append(entry)
            used += len(entry) + 1
        else:
            if last < len(lines):
                rendered.append(f"[lines {last + 1}-{len(lines)} not shown]")
        return "\n".join(rendered)

    def search_files(self, query: str, path: str | None = ".") -> str:
        if not query.strip():
            raise ToolFailure("query must not be empty")
        target = self._resolve(path or ".")
        mode = _lstat_mode(target.absolute)
        if mode is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if stat.S_ISREG(mode):
            files = [target.relative]
        elif stat.S_ISDIR(mode):
            files = [relative for relative, kind, _ in self._walk(target) if kind == "file"]
        else:
            raise ToolFailure(f"{_shown(target)} is not a file or folder")
        needle = query.lower()
        matches: list[str] = []
        for relative in files:
            try:
                text = (self.root / relative).read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                continue  # Binary files hold no text worth matching.
            for number, line in enumerate(text.splitlines(), start=1):
                if needle not in line.lower():
                    continue
                if len(matches) >= MAX_SEARCH_MATCHES:
                    matches.append("[more matches not shown; narrow the query or the path]")
                    return "\n".join(matches)
                shown = redact_secrets(line)
                if len(shown) > MAX_SEARCH_LINE_CHARS:
                    shown = shown[:MAX_SEARCH_LINE_CHARS] + " [line truncated]"
                matches.append(f"{relative}:{number}: {shown}")
        if not matches:
            return f"no matches for {query!r} in {_shown(target)}"
        return "\n".join(matches)

    def write_file(self, path: str, content: str) -> str:
        target = self._resolve(path, for_change=True)
        if len(content) > MAX_WRITE_CHARS:
            raise ToolFailure(f"content is larger than {MAX_WRITE_CHARS} characters; split it into several files")
        mode = _lstat_mode(target.absolute)
        if mode is not None and not stat.S_ISREG(mode):
            raise ToolFailure(f"{target.relative} exists and is not a regular file")
        self._make_parents(target)
        _atomic_write(target.absolute, content)
        _remember(self.files_written, target.relative)
        return f"wrote {target.relative} ({len(content.encode('utf-8'))} bytes)"

    def edit_file(self, path: str, old: str, new: str) -> str:
        target = self._resolve(path, for_change=True)
        if not old:
            raise ToolFailure("old must not be empty")
        text = self._read_text(target)
        occurrences = text.count(old)
        if occurrences == 0:
            raise ToolFailure(f"the old text was not found in {target.relative}")
        if occurrences > 1:
            raise ToolFailure(
                f"the old text occurs {occurrences} times in {target.relative}; include more context to make it unique"
            )
        _atomic_write(target.absolute, text.replace(old, new, 1))
        _remember(self.files_written, target.relative)
        return f"edited {target.relative}"

    def delete_file(self, path: str) -> str:
        target = self._resolve(path, for_change=True)
        mode = _lstat_mode(target.absolute)
        if mode is None:
            raise ToolFailure(f"{target.relative} does not exist")
        if not stat.S_ISREG(mode):
            raise ToolFailure(f"{target.relative} is not a file; only files can be deleted")
        target.absolute.unlink()
        _remember(self.files_deleted, target.relative)
        if target.relative in self.files_written:
            self.files_written.remove(target.relative)
        return f"deleted {target.relative}"

    # -- path rules -------------------------------------------------------------------------------

    def _resolve(self, path: str, *, for_change: bool = False) -> _Resolved:
        if not isinstance(path, str) or not path.strip():
            raise PathRefused("a path relative to the memory root is required")
        if "\x00" in path:
            raise PathRefused("paths must not contain NUL characters")
        if "\\" in path:
            raise PathRefused(f"{path!r}: use '/' as the separator; backslashes are not allowed")
        windows = PureWindowsPath(path)
        if PurePosixPath(path).is_absolute() or windows.drive or windows.root:
            raise PathRefused(f"{path!r} is absolute; paths must be relative to the memory root")
        components = [part for part in path.split("/") if part not in ("", ".")]
        if ".." in components:
            raise PathRefused(f"{path!r} contains '..'; paths must stay inside the memory root")
        if components and components[0] in FORBIDDEN_TOP_LEVEL or paths.GIT_DIR in components:
            raise PathRefused(f"{path!r} is workspace machinery (.git or workspace state) and is off limits")
        relative = "/".join(components)

        current = self.root
        for index, component in enumerate(components):
            current = current / component
            mode = _lstat_mode(current)
            if mode is None:
                break  # The rest does not exist yet; nothing further can be a symlink.
            if stat.S_ISLNK(mode):
                shown = "/".join(components[: index + 1])
                raise PathRefused(f"{shown!r} is a symlink; symlinks are never followed")
            if index < len(components) - 1 and not stat.S_ISDIR(mode):
                raise ToolFailure(f"{'/'.join(components[: index + 1])!r} is a file, not a folder")
        absolute = self.root.joinpath(*components)
        if not absolute.resolve(strict=False).is_relative_to(self.root):
            raise PathRefused(f"{path!r} resolves outside the memory root")

        if for_change:
            if not components:
                raise PathRefused("the memory root itself cannot be written or deleted")
            if relative in READ_ONLY_FILES:
                raise PathRefused(f"{relative} is read-only: read it, never edit or delete it")
            for folder in READ_ONLY_FOLDERS:
                if relative == folder or relative.startswith(folder + "/"):
                    raise PathRefused(f"{relative} is an ad-hoc note: notes are append-only and never edited or deleted")
        return _Resolved(relative=relative, absolute=absolute)

    def _read_text(self, target: _Resolved) -> str:
        mode = _lstat_mode(target.absolute)
        if mode is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if not stat.S_ISREG(mode):
            raise ToolFailure(f"{_shown(target)} is not a regular file")
        try:
            return target.absolute.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(f"{target.relative} is not UTF-8 text") from None

    def _make_parents(self, target: _Resolved) -> None:
        current = self.root
        for component in target.relative.split("/")[:-1]:
            current = current / component
            mode = _lstat_mode(current)
            if mode is None:
                current.mkdir()
            elif stat.S_ISLNK(mode):
                raise PathRefused(f"{current.relative_to(self.root)} is a symlink; symlinks are never followed")
            elif not stat.S_ISDIR(mode):
                raise ToolFailure(f"{current.relative_to(self.root)} is a file, not a folder")

    def _walk(self, target: _Resolved) -> list[tuple[str, str, int]]:
        """(relative path, kind, size) under a folder, sorted, machinery folders left out."""
        found: list[tuple[str, str, int]] = []
        pending = [target.absolute]
        while pending:
            folder = pending.pop()
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
            for entry in entries:
                relative = Path(entry.path).relative_to(self.root).as_posix()
                if relative.split("/")[0] in FORBIDDEN_TOP_LEVEL:
                    continue
                entry_mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISLNK(entry_mode):
                    found.append((relative, "symlink", 0))
                elif stat.S_ISDIR(entry_mode):
                    found.append((relative, "dir", 0))
                    pending.append(Path(entry.path))
                elif stat.S_ISREG(entry_mode):
                    found.append((relative, "file", entry.stat(follow_symlinks=False).st_size))
        found.sort(key=lambda item: item[0])
        return found


def _checked_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    definition = next(tool for tool in TOOL_DEFINITIONS if tool["name"] == name)
    properties: dict[str, dict[str, Any]] = definition["parameters"]["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolFailure(f"{name} has no parameter(s) {', '.join(unknown)}; expected {', '.join(properties)}")
    checked: dict[str, Any] = {}
    for parameter, schema in properties.items():
        value = arguments.get(parameter)
        allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if value is None:
            if "null" not in allowed:
                raise ToolFailure(f"{name} needs the parameter {parameter!r}")
            continue  # Leave the method's own default in place.
        if "string" in allowed and isinstance(value, str):
            checked[parameter] = value
        elif "integer" in allowed and isinstance(value, int) and not isinstance(value, bool):
            checked[parameter] = value
        else:
            raise ToolFailure(f"{name}: parameter {parameter!r} must be of type {' or '.join(allowed)}")
    return checked


def _lstat_mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _shown(target: _Resolved) -> str:
    return target.relative or "the memory root"


def _remember(items: list[str], relative: str) -> None:
    if relative not in items:
        items.append(relative)


def _atomic_write(destination: Path, content: str) -> None:
    descriptor, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- the tool-calling loop ---------------------------------------------------------------------------


@dataclass
class AgentRun:
    completed: bool
    stop_reason: AgentStopReason
    steps: int
    tool_calls: int
    tool_calls_by_name: dict[str, int]
    refused_calls: int
    usage: TokenUsage
    final_message: str | None
    files_written: list[str]
    files_deleted: list[str] = field(default_factory=list)
    # Why the model call failed (`model_error`) or the request that timed out; never secret text.
    error: str | None = None


@dataclass(frozen=True)
class _FunctionCall:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class _ModelTurn:
    text: str | None
    calls: list[_FunctionCall]
    usage: TokenUsage
    # Items to append to the conversation so the next request carries this turn.
    history_items: list[dict[str, Any]]
    incomplete: str | None = None


class _ModelCallFailed(Exception):
    def __init__(self, reason: str, *, transient: bool, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient
        self.timed_out = timed_out


def run_consolidation_agent(
    root_dir: Path,
    *,
    model: str,
    prompt: RenderedPrompt,
    client: openai.OpenAI | None = None,
    client_factory: Callable[[], openai.OpenAI] | None = None,
    api_mode: ApiMode | str = ApiMode.responses,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_total_tokens: int = DEFAULT_MAX_TOTAL_TOKENS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    should_continue: Callable[[], bool] = lambda: True,
    retry_backoff_seconds: Sequence[float] = DEFAULT_RETRY_BACKOFF_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> AgentRun:
    """Let the model consolidate the memory root with `MemoryFileTools` until it is done or a limit hits.

    A step is one model request. Limits are checked before every request: `should_continue()`
    (`ownership_lost`), `max_steps` (`step_limit`), `max_total_tokens` summed over all responses
    (`token_budget`) and `timeout_seconds` of wall time (`timeout`, also when a request times out
    past the deadline). Tool calls of a response that pushed the run over the token budget are
    still executed; no further request is made.
    """
    if (client is None) == (client_factory is None):
        raise ValueError("pass exactly one of client or client_factory")
    if max_steps < 1 or max_total_tokens < 1 or timeout_seconds <= 0:
        raise ValueError("max_steps, max_total_tokens and timeout_seconds must be positive")
    mode = ApiMode(api_mode)
    openai_client = client if client is not None else client_factory()  # type: ignore[misc]
    tools = MemoryFileTools(Path(root_dir))
    conversation: list[dict[str, Any]] = [_user_item(mode, prompt.text)]
    started = clock()
    steps = 0
    usage = TokenUsage()

    def finish(reason: AgentStopReason, final_message: str | None = None, error: str | None = None) -> AgentRun:
        return AgentRun(
            completed=reason is AgentStopReason.finished,
            stop_reason=reason,
            steps=steps,
            tool_calls=sum(tools.calls_by_name.values()),
            tool_calls_by_name=dict(sorted(tools.calls_by_name.items())),
            refused_calls=tools.refused_calls,
            usage=usage,
            final_message=final_message,
            files_written=list(tools.files_written),
            files_deleted=list(tools.files_deleted),
            error=error,
        )

    while True:
        if not should_continue():
            return finish(AgentStopReason.ownership_lost)
        if steps >= max_steps:
            return finish(AgentStopReason.step_limit)
        if usage.total_tokens >= max_total_tokens:
            return finish(AgentStopReason.token_budget)
        if clock() - started >= timeout_seconds:
            return finish(AgentStopReason.timeout)

        attempt = 0
        while True:
            remaining = timeout_seconds - (clock() - started)
            try:
                turn = _call_model(openai_client, mode, model, conversation, min(remaining, MAX_REQUEST_TIMEOUT_SECONDS))
                break
            except _ModelCallFailed as failure:
                if failure.timed_out and clock() - started >= timeout_seconds:
                    return finish(AgentStopReason.timeout, error=failure.reason)
                if not failure.transient or attempt >= MAX_TRANSIENT_RETRIES:
                    return finish(AgentStopReason.model_error, error=failure.reason)
                backoff = retry_backoff_seconds[min(attempt, len(retry_backoff_seconds) - 1)] if retry_backoff_seconds else 0.0
                attempt += 1
                if clock() - started + backoff >= timeout_seconds:
                    return finish(AgentStopReason.timeout, error=failure.reason)
                sleep(backoff)
                if not should_continue():
                    return finish(AgentStopReason.ownership_lost, error=failure.reason)

        steps += 1
        usage = usage + turn.usage
        conversation.extend(turn.history_items)
        if turn.incomplete is not None:
            return finish(AgentStopReason.model_error, final_message=turn.text, error=turn.incomplete)
        if not turn.calls:
            return finish(AgentStopReason.finished, final_message=turn.text)
        for call in turn.calls:
            if not should_continue():
                return finish(AgentStopReason.ownership_lost)
            result = tools.dispatch(call.name, call.arguments)
            conversation.append(_tool_result_item(mode, call.call_id, result))


def _user_item(mode: ApiMode, text: str) -> dict[str, Any]:
    if mode is ApiMode.responses:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"role": "user", "content": text}


def _tool_result_item(mode: ApiMode, call_id: str, result: str) -> dict[str, Any]:
    if mode is ApiMode.responses:
        return {"type": "function_call_output", "call_id": call_id, "output": result}
    return {"role": "tool", "tool_call_id": call_id, "content": result}


def _call_model(
    client: openai.OpenAI, mode: ApiMode, model: str, conversation: list[dict[str, Any]], timeout: float
) -> _ModelTurn:
    request_client = client.with_options(timeout=max(timeout, 1.0), max_retries=0)
    endpoint = "responses" if mode is ApiMode.responses else "chat.completions"
    try:
        if mode is ApiMode.responses:
            response = request_client.responses.create(
                model=model,
                input=conversation,
                tools=responses_tools(),
                store=False,
            )
            return _responses_turn(response)
        completion = request_client.chat.completions.create(model=model, messages=conversation, tools=chat_tools())
        return _chat_turn(completion)
    except openai.APITimeoutError:
        raise _ModelCallFailed(f"{endpoint}: timeout", transient=True, timed_out=True) from None
    except openai.APIConnectionError:
        raise _ModelCallFailed(f"{endpoint}: connection error", transient=True) from None
    except openai.APIStatusError as error:
        status = error.status_code
        code = getattr(error, "code", None)
        reason = f"{endpoint}: HTTP {status}" + (f" ({code})" if code else "")
        raise _ModelCallFailed(reason, transient=status == 429 or status >= 500) from None
    except openai.APIError as error:
        raise _ModelCallFailed(f"{endpoint}: {type(error).__name__}", transient=False) from None


def _responses_turn(response: Any) -> _ModelTurn:
    texts: list[str] = []
    calls: list[_FunctionCall] = []
    history: list[dict[str, Any]] = []
    for item in getattr(response, "output", None) or []:
        kind = getattr(item, "type", None)
        if kind == "message":
            text = "".join(
                getattr(part, "text", "") or ""
                for part in getattr(item, "content", None) or []
                if getattr(part, "type", None) == "output_text"
            )
            if text:
                texts.append(text)
                history.append({"role": "assistant", "content": text})
        elif kind == "function_call":
            call = _FunctionCall(call_id=item.call_id, name=item.name, arguments=item.arguments or "")
            calls.append(call)
            history.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
        # Reasoning items are not resent: without server-side storage they cannot be referenced.
    incomplete = None
    if getattr(response, "status", None) == "incomplete" and not calls:
        details = getattr(response, "incomplete_details", None)
        incomplete = f"responses: incomplete output ({getattr(details, 'reason', None) or 'unknown reason'})"
    return _ModelTurn(
        text="\n".join(texts) if texts else None,
        calls=calls,
        usage=responses_usage(response),
        history_items=history,
        incomplete=incomplete,
    )


def _chat_turn(completion: Any) -> _ModelTurn:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return _ModelTurn(None, [], chat_usage(completion), [], incomplete="chat.completions: no choices")
    choice = choices[0]
    message = choice.message
    calls = [
        _FunctionCall(call_id=tool_call.id, name=tool_call.function.name, arguments=tool_call.function.arguments or "")
        for tool_call in (getattr(message, "tool_calls", None) or [])
        if getattr(tool_call, "type", "function") == "function"
    ]
    assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
    if calls:
        assistant["tool_calls"] = [
            {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in calls
        ]
    incomplete = None
    if getattr(choice, "finish_reason", None) == "length" and not calls:
        incomplete = "chat.completions: incomplete output (length)"
    return _ModelTurn(
        text=message.content or None,
        calls=calls,
        usage=chat_usage(completion),
        history_items=[assistant],
        incomplete=incomplete,
    )
