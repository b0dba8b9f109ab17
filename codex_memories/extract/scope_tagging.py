"""The scope lines of a stage-1 raw memory: which task blocks are user-level, which belong to the
project, and the key of that project.

Contract:
- `tag_raw_memory(raw_memory, task_scopes, project_key)` returns the raw memory with one
  `scope: user|project` line in every `### Task <n>:` block (after the block's own `key: value`
  lines) and `scope: user|project|mixed` plus `project_key: <key>` lines in the front matter (a
  front matter is added when the memory has none). `task_scopes[n]` decides block n; a block
  beyond the list keeps a valid `scope:` line it already had, else it is project-level: a fact of
  a repository is only ever user-level because the user said so. Scope lines already present are
  replaced, so tagging twice gives the same text. An empty memory stays empty.
- `block_scopes(raw_memory)` reads the scopes back (the front matter's when there is no block);
  `row_scope` folds them into what the `stage1_outputs.scope` column stores;
  `split_raw_memory_by_scope` cuts a memory into its user-level and project-level parts (each
  with the front matter), for export and forgetting by project.
- Pure text functions. The lines are plain `key: value` lines inside Codex's raw-memory format, so
  a reader that knows nothing of scopes (Codex's own consolidation agent) reads them as context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codex_memories.scopes import MEMORY_SCOPES, PROJECT_SCOPE, USER_SCOPE

MIXED_SCOPE = "mixed"
SCOPE_KEY = "scope"
PROJECT_KEY_KEY = "project_key"

_TASK_HEADING = re.compile(r"^#{2,4}\s*Task\s+\d+\s*:", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^(?P<key>[a-z_][a-z0-9_]*):[ \t]*(?P<value>.*?)\s*$")


def tag_raw_memory(raw_memory: str, task_scopes: Sequence[str], project_key: str | None) -> str:
    """`raw_memory` with its scope lines set (module docstring)."""
    if not raw_memory.strip():
        return raw_memory
    front, body = _split_front_matter(raw_memory.strip("\n").split("\n"))
    tagged_body: list[str] = []
    scopes: list[str] = []
    block = -1
    position = 0
    while position < len(body):
        line = body[position]
        tagged_body.append(line)
        position += 1
        if not _TASK_HEADING.match(line.strip()):
            continue
        block += 1
        header: list[str] = []
        existing: str | None = None
        while position < len(body) and _KEY_VALUE.match(body[position].strip()):
            match = _KEY_VALUE.match(body[position].strip())
            assert match is not None
            if match.group("key") == SCOPE_KEY:
                existing = match.group("value").lower()
            else:
                header.append(body[position])
            position += 1
        scope = _scope_for(block, task_scopes, existing)
        scopes.append(scope)
        tagged_body += header + [f"{SCOPE_KEY}: {scope}"]
    kept_front = [line for line in (front or []) if _key_of(line) not in (SCOPE_KEY, PROJECT_KEY_KEY)]
    if not scopes:
        previous = next((_value_of(line) for line in front or [] if _key_of(line) == SCOPE_KEY), None)
        scopes = [_scope_for(0, task_scopes, previous)]
    kept_front.append(f"{SCOPE_KEY}: {_fold(scopes)}")
    if project_key:
        kept_front.append(f"{PROJECT_KEY_KEY}: {project_key}")
    return "\n".join(["---", *kept_front, "---", *([""] if front is None and body and body[0].strip() else []), *tagged_body]) + "\n"


def block_scopes(raw_memory: str) -> list[str]:
    """The scope of each task block in order; the front matter's (or project) without blocks."""
    front, body = _split_front_matter(raw_memory.strip("\n").split("\n"))
    found: list[str | None] = []
    inside_header = False
    for line in body:
        stripped = line.strip()
        if _TASK_HEADING.match(stripped):
            found.append(None)
            inside_header = True
            continue
        if inside_header:
            match = _KEY_VALUE.match(stripped)
            if match is None:
                inside_header = False
            elif match.group("key") == SCOPE_KEY and match.group("value").lower() in MEMORY_SCOPES:
                found[-1] = match.group("value").lower()
    scopes = [scope or PROJECT_SCOPE for scope in found]
    if scopes:
        return scopes
    value = next((_value_of(line) for line in front or [] if _key_of(line) == SCOPE_KEY), None)
    return [value if value in MEMORY_SCOPES else PROJECT_SCOPE]


def row_scope(raw_memory: str) -> str:
    """`user`, `project` or `mixed`: the value of the `stage1_outputs.scope` column."""
    return _fold(block_scopes(raw_memory))


def front_matter_project_key(raw_memory: str) -> str | None:
    front, _ = _split_front_matter(raw_memory.strip("\n").split("\n"))
    for line in front or []:
        match = _KEY_VALUE.match(line.strip())
        if match and match.group("key") == PROJECT_KEY_KEY:
            return match.group("value") or None
    return None


def split_raw_memory_by_scope(raw_memory: str) -> dict[str, str]:
    """`{"user": ..., "project": ...}`: the front matter with the blocks of that scope (an empty
    string when a scope has no block). A memory without blocks goes whole to its one scope."""
    lines = raw_memory.strip("\n").split("\n")
    front, body = _split_front_matter(lines)
    front_lines = ["---", *front, "---", ""] if front is not None else []
    starts = [index for index, line in enumerate(body) if _TASK_HEADING.match(line.strip())]
    scopes = block_scopes(raw_memory)
    parts: dict[str, list[str]] = {USER_SCOPE: [], PROJECT_SCOPE: []}
    if not starts:
        parts[scopes[0]] = body
    else:
        preamble = body[: starts[0]]
        parts[PROJECT_SCOPE] += preamble
        for number, start in enumerate(starts):
            end = starts[number + 1] if number + 1 < len(starts) else len(body)
            parts[scopes[number]] += body[start:end]
    return {
        scope: ("\n".join(front_lines + block).strip("\n") + "\n" if any(line.strip() for line in block) else "")
        for scope, block in parts.items()
    }


def _scope_for(block: int, task_scopes: Sequence[str], existing: str | None) -> str:
    if block < len(task_scopes) and task_scopes[block] in MEMORY_SCOPES:
        return task_scopes[block]
    return existing if existing in MEMORY_SCOPES else PROJECT_SCOPE


def _fold(scopes: Sequence[str]) -> str:
    distinct = set(scopes)
    return MIXED_SCOPE if len(distinct) > 1 else (scopes[0] if scopes else PROJECT_SCOPE)


def _split_front_matter(lines: list[str]) -> tuple[list[str] | None, list[str]]:
    if lines and lines[0].strip() == "---":
        closing = next((index for index in range(1, len(lines)) if lines[index].strip() == "---"), None)
        if closing is not None:
            return lines[1:closing], lines[closing + 1 :]
    return None, lines


def _key_of(line: str) -> str | None:
    match = _KEY_VALUE.match(line.strip())
    return match.group("key") if match else None


def _value_of(line: str) -> str:
    match = _KEY_VALUE.match(line.strip())
    return match.group("value").lower() if match else ""
