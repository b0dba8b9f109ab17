"""The consolidation agent's sandboxed memory-file tools (spec 3 step 9).

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
- `TOOL_DEFINITIONS` are strict function schemas; `responses_tools()` / `chat_tools()` give them
  in each API's shape.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from codex_memories import paths
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

