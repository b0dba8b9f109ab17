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
  A regular file with more than one hard link (possibly a second name for an outside file) is
  refused for reading and writing.
- Writes, edits and deletions stay inside the layout Codex reads (spec 8): `memory_summary.md`,
  `MEMORY.md`, `raw_memories.md`, `rollout_summaries/<name>.md` and `skills/<skill>/.../<name>.md`.
  Every name written must be plain (`sandbox.check_plain_name`: no control or bidi characters, no
  look-alike dots, no `:` or `~`) and must not start with `.`; only Markdown is written and nothing
  written is executable (an existing file's execute bits are dropped).
- Ordinary failures (missing file, `old` text absent or ambiguous, a directory where a file was
  expected, an OS error) come back as `error: ...` results; they are counted but not refusals.
- Text returned by `read_file` and `search_files` goes through `redact_secrets` (inputs are
  already redacted upstream; this is defence in depth). Output is size-capped, and a file larger
  than `MAX_FILE_BYTES` is never loaded (an `error:` for read/edit, listed as not searched).
- All I/O goes through one `sandbox.SandboxedFolder`: descriptor-relative opens with `O_NOFOLLOW`
  on every component, so a symlink swapped in after the checks below is still never followed.
  Writes are atomic (temporary file in the same folder, fsync, rename) and create missing parent
  folders inside the root.
- `TOOL_DEFINITIONS` are strict function schemas; `responses_tools()` / `chat_tools()` give them
  in each API's shape.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import (
    FolderEntry,
    SandboxedFolder,
    SymlinkRefusedError,
    UnsafeNameError,
    UnsafePathError,
    check_plain_name,
    split_relative_path,
)

MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2_000
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_LINE_CHARS = 400
MAX_LIST_ENTRIES = 1_000
MAX_WRITE_CHARS = 2_000_000
# Files larger than this are never loaded by read_file, search_files or edit_file.
MAX_FILE_BYTES = 16 * 1024 * 1024

# Folders that are workspace machinery, not memory content.
FORBIDDEN_TOP_LEVEL = frozenset({paths.GIT_DIR, paths.WORKSPACE_STATE_DIR})
READ_ONLY_FILES = frozenset({paths.WORKSPACE_DIFF_FILE})
READ_ONLY_FOLDERS = (paths.ad_hoc_notes_dir(),)

# What the agent may change: the files Codex reads from the memory root (spec 8). The summary,
# the handbook and skills are the agent's own; raw_memories.md and rollout summaries are written
# by code before the run, but the agent has always been allowed to rewrite or prune them and
# keeps that. Everything it writes is Markdown: skills hold procedures, never scripts.
WRITABLE_TOP_LEVEL_FILES = frozenset({paths.MEMORY_SUMMARY_FILE, paths.MEMORY_FILE, paths.RAW_MEMORIES_FILE})
WRITABLE_SUFFIX = ".md"


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
    relative: str  # "" is the memory root
    kind: str | None  # "file", "dir", "symlink", "other", or None when nothing is there


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
        self.folder = SandboxedFolder(self.root)
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
        except (PathRefused, UnsafePathError) as refusal:
            # UnsafePathError: the folder refused at open time (a symlink or hard link that
            # appeared after the checks in `_resolve`); it is a refusal like any other.
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
        if target.kind is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if target.kind == "file":
            return f"{target.relative} ({self._size(target.relative)} bytes)"
        if target.kind != "dir":
            raise ToolFailure(f"{_shown(target)} is not a file or folder")
        lines: list[str] = []
        truncated = False
        for entry in self._walk(target):
            if len(lines) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            if entry.kind == "dir":
                lines.append(f"{entry.path}/")
            elif entry.kind == "symlink":
                lines.append(f"{entry.path} (symlink, not followed)")
            elif entry.nlink > 1:
                lines.append(f"{entry.path} (hard link, not read)")
            else:
                lines.append(f"{entry.path} ({entry.size} bytes)")
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
        if target.kind is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if target.kind == "file":
            files = [target.relative]
        elif target.kind == "dir":
            # Links are neither followed nor read: a hard-linked file may be an outside file.
            files = [entry.path for entry in self._walk(target) if entry.kind == "file" and entry.nlink == 1]
        else:
            raise ToolFailure(f"{_shown(target)} is not a file or folder")
        needle = query.lower()
        matches: list[str] = []
        skipped_large: list[str] = []
        for relative in files:
            data = self._read_capped(relative)
            if data is None:
                skipped_large.append(relative)
                continue
            try:
                text = data.decode("utf-8")
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
        if skipped_large:
            matches.append(f"[not searched, larger than {MAX_FILE_BYTES} bytes: {', '.join(skipped_large[:20])}]")
        if not matches:
            return f"no matches for {query!r} in {_shown(target)}"
        return "\n".join(matches)

    def write_file(self, path: str, content: str) -> str:
        target = self._resolve(path, for_change=True)
        if len(content) > MAX_WRITE_CHARS:
            raise ToolFailure(f"content is larger than {MAX_WRITE_CHARS} characters; split it into several files")
        if target.kind is not None and target.kind != "file":
            raise ToolFailure(f"{target.relative} exists and is not a regular file")
        data = content.encode("utf-8")
        self.folder.write_bytes(target.relative, data, executable=False)
        _remember(self.files_written, target.relative)
        return f"wrote {target.relative} ({len(data)} bytes)"

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
        self.folder.write_bytes(target.relative, text.replace(old, new, 1).encode("utf-8"), executable=False)
        _remember(self.files_written, target.relative)
        return f"edited {target.relative}"

    def delete_file(self, path: str) -> str:
        target = self._resolve(path, for_change=True)
        if target.kind is None:
            raise ToolFailure(f"{target.relative} does not exist")
        if target.kind != "file":
            raise ToolFailure(f"{target.relative} is not a file; only files can be deleted")
        self.folder.delete(target.relative)
        _remember(self.files_deleted, target.relative)
        if target.relative in self.files_written:
            self.files_written.remove(target.relative)
        return f"deleted {target.relative}"

    # -- path rules (policy only: the folder does the resolving and opening) ---------------------

    def _resolve(self, path: str, *, for_change: bool = False) -> _Resolved:
        if not isinstance(path, str) or not path.strip():
            raise PathRefused("a path relative to the memory root is required")
        try:
            components = split_relative_path(path)
        except UnsafePathError as error:
            raise PathRefused(str(error)) from None
        if components and components[0] in FORBIDDEN_TOP_LEVEL or paths.GIT_DIR in components:
            raise PathRefused(f"{path!r} is workspace machinery (.git or workspace state) and is off limits")
        relative = "/".join(components)
        if not components:
            if for_change:
                _check_writable(relative, components)
            return _Resolved(relative="", kind="dir")
        try:
            kind = self.folder.kind(relative)
        except SymlinkRefusedError as refusal:
            raise PathRefused(str(refusal)) from None
        except NotADirectoryError as error:
            raise ToolFailure(f"{error.filename!r} is a file, not a folder") from None
        if kind == "symlink":
            raise PathRefused(f"{relative!r} is a symlink; symlinks are never followed")
        if for_change and kind != "dir":
            # A folder is never written or deleted; the tool says so as an ordinary error.
            _check_writable(relative, components)
        return _Resolved(relative=relative, kind=kind)

    def _read_text(self, target: _Resolved) -> str:
        if target.kind is None:
            raise ToolFailure(f"{_shown(target)} does not exist")
        if target.kind != "file":
            raise ToolFailure(f"{_shown(target)} is not a regular file")
        data = self._read_capped(target.relative)
        if data is None:
            raise ToolFailure(
                f"{target.relative} is larger than {MAX_FILE_BYTES} bytes; it is not memory content this agent can read or edit"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(f"{target.relative} is not UTF-8 text") from None

    def _read_capped(self, relative: str) -> bytes | None:
        """The file's bytes, or None when it is larger than `MAX_FILE_BYTES` (never loaded whole)."""
        with self.folder.open_file(relative) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        return None if len(data) > MAX_FILE_BYTES else data

    def _size(self, relative: str) -> int:
        status = self.folder.lstat(relative)
        return 0 if status is None else status.st_size

    def _walk(self, target: _Resolved) -> list[FolderEntry]:
        """Every entry under a folder, sorted by path, machinery folders left out, links not entered."""
        entries = self.folder.walk(
            target.relative or None,
            skip=lambda entry: entry.path.split("/")[0] in FORBIDDEN_TOP_LEVEL or entry.kind == "other",
        )
        return sorted(entries, key=lambda entry: entry.path)


def _check_writable(relative: str, components: list[str]) -> None:
    """Refuse a change outside the layout Codex reads, to a read-only file, or with an odd name."""
    if not components:
        raise PathRefused("the memory root itself cannot be written or deleted")
    if relative in READ_ONLY_FILES:
        raise PathRefused(f"{relative} is read-only: read it, never edit or delete it")
    for folder in READ_ONLY_FOLDERS:
        if relative == folder or relative.startswith(folder + "/"):
            raise PathRefused(f"{relative} is an ad-hoc note: notes are append-only and never edited or deleted")
    for component in components:
        try:
            check_plain_name(component)
        except UnsafeNameError as refusal:
            raise PathRefused(str(refusal)) from None
        if component.startswith("."):
            raise PathRefused(f"{relative!r}: names starting with '.' are not part of the memory layout")
    if not relative.endswith(WRITABLE_SUFFIX):
        raise PathRefused(
            f"{relative!r}: only Markdown files ({WRITABLE_SUFFIX}) are written; skills hold procedures, not scripts"
        )
    top = components[0]
    if relative in WRITABLE_TOP_LEVEL_FILES:
        return
    if top == paths.ROLLOUT_SUMMARIES_DIR and len(components) == 2:
        return
    if top == paths.SKILLS_DIR and len(components) >= 3:
        return
    raise PathRefused(
        f"{relative!r} is outside the memory layout Codex reads; write {paths.MEMORY_SUMMARY_FILE}, "
        f"{paths.MEMORY_FILE}, {paths.SKILLS_DIR}/<skill>/SKILL.md (and Markdown next to it), "
        f"{paths.RAW_MEMORIES_FILE} or {paths.ROLLOUT_SUMMARIES_DIR}/<name>.md"
    )


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


def _shown(target: _Resolved) -> str:
    return target.relative or "the memory root"


def _remember(items: list[str], relative: str) -> None:
    if relative not in items:
        items.append(relative)
