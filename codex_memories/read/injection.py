"""Developer instructions that put the memory summary in front of a new session (spec 5.1, 5.2).

Contract:
- `build_developer_instructions(memory_root, budget_tokens=5000, cwd=None)` reads
  `<memory_root>/memory_summary.md`, strips it, and returns the rendered `prompts/read_path.md`
  (`base_path` = the absolute memory root, `memory_summary` = the summary cut to the budget), or
  None when the file is missing or blank: nothing is injected then.
- Budget: the summary (not the surrounding instructions) is at most `budget_tokens` tokens of
  o200k_base. Cutting is middle truncation (`tokens.truncate_middle`): the beginning and the end
  survive and a `…N tokens truncated…` marker shows where text went; multi-byte characters are
  never split.
- Current project first (upstream issue #17496: the read path ignored `cwd`, so with a small
  budget the current project could vanish from the summary). With `cwd`, the `### <scope>`
  sections under `## What's in Memory` whose scope names the cwd, one of its parent folders or
  its last path component are kept whole and placed first when the summary does not fit; the rest
  of the summary is truncated into what remains. A summary that fits is injected unchanged.
- Scopes (issue 15): before budgeting, other projects' lines leave the summary. The session's
  project is `scopes.project_key_for_directory(cwd)`; a `###` section whose heading carries
  another project's `project=<key>` marker is dropped whole (up to the next heading of level 3
  or above), and so is every bullet (with its indented continuation) that carries one (a
  project's preference or tip). Unmarked text and user-level sections stay. Without `cwd` no
  project is current: every marked line goes. Memory is history: a rule said "in this repo"
  must never reach a session in another repository.
- Budgets: Codex itself injects at most 2,500 tokens since PR #23148 (it was 5,000 before); we
  default to 5,000 as our issue asks, and callers may pass Codex's value.
- Reads one file; writes nothing; the same files and arguments give the same text.
- `build_session_context(memory_root, budget_tokens, cwd)`: what the SessionStart hook adds: the
  developer instructions above, then the repository's team memory
  (`read.team_memory.team_memory_context`: after AGENTS.md in precedence, contradicting lines
  dropped). One budget for both: the team memory takes at most half of `budget_tokens` and the
  summary gets what it leaves. None when there is neither.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path

from codex_memories import paths
from codex_memories.prompts import render_prompt
from codex_memories.read.team_memory import TeamMemoryContext, team_memory_context
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.scopes import (
    marked_project_key,
    project_key_for_directory,
    project_keys_match,
    scope_matches_cwd,
    text_is_for_other_project,
)
from codex_memories.tokens import count_tokens, truncate_middle

READ_PATH_TEMPLATE = "read_path"
DEFAULT_SUMMARY_BUDGET_TOKENS = 5_000
CODEX_SUMMARY_BUDGET_TOKENS = 2_500
CURRENT_PROJECT_HEADING = "## What's in Memory for the current project"
REST_OF_SUMMARY_HEADING = "## Rest of the memory summary"

_INDEX_HEADING = re.compile(r"^##\s+What['’]s in Memory\s*$", re.IGNORECASE)
_OUTER_HEADING = re.compile(r"^#{1,2}\s")
_LEVEL_THREE_HEADING = re.compile(r"^###\s+(?P<scope>.+?)\s*$")
_HEADING = re.compile(r"^(?P<marks>#{1,6})\s+(?P<title>.*?)\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+")
# Joining pieces can merge tokens at the seams, so every result is re-counted against the budget.
_MAX_FIT_ATTEMPTS = 8


@dataclass(frozen=True)
class _Section:
    start: int
    end: int  # Line indices, end exclusive.


def build_developer_instructions(
    memory_root: Path, *, budget_tokens: int = DEFAULT_SUMMARY_BUDGET_TOKENS, cwd: str | None = None
) -> str | None:
    """The read-path developer instructions for a session, or None when there is no summary."""
    if budget_tokens < 1:
        raise ValueError("budget_tokens must be at least 1")
    summary = read_memory_summary(memory_root)
    if not summary:
        return None
    session_key = project_key_for_directory(cwd) if cwd else None
    summary = summary_for_project(summary, session_key)
    budgeted = budget_memory_summary(summary, budget_tokens, cwd=cwd, project_key=session_key)
    if not budgeted.strip():
        return None
    base_path = str(Path(memory_root).expanduser().absolute())
    return render_prompt(READ_PATH_TEMPLATE, base_path=base_path, memory_summary=budgeted).text


@dataclass(frozen=True)
class SessionContext:
    text: str
    summary_injected: bool
    team_memory: TeamMemoryContext | None


def build_session_context(
    memory_root: Path, *, budget_tokens: int = DEFAULT_SUMMARY_BUDGET_TOKENS, cwd: str | None = None
) -> SessionContext | None:
    """The summary instructions and the repository's team memory, within one budget."""
    team = team_memory_context(cwd, budget_tokens) if cwd else None
    summary_budget = budget_tokens - (count_tokens(team.text) if team else 0)
    instructions = build_developer_instructions(memory_root, budget_tokens=max(1, summary_budget), cwd=cwd)
    parts = [part for part in (instructions, team.text if team else None) if part]
    if not parts:
        return None
    return SessionContext(text="\n\n".join(parts), summary_injected=bool(instructions), team_memory=team)


def read_memory_summary(memory_root: Path) -> str:
    """The stripped summary text; empty when the file does not exist.

    Read through `sandbox.SandboxedFolder`: a summary that is a symlink or a hard link (possibly
    an outside file) is never injected; it is a `PermissionError` naming the reason.
    """
    try:
        data = SandboxedFolder(memory_root).read_bytes(paths.MEMORY_SUMMARY_FILE)
    except FileNotFoundError:
        return ""
    except UnsafePathError as error:
        raise PermissionError(errno.EACCES, f"refused to inject it: {error}", paths.MEMORY_SUMMARY_FILE) from error
    return data.decode("utf-8").strip()


def summary_for_project(summary: str, session_key: str | None) -> str:
    """`summary` without the sections and bullets marked for a project other than `session_key`."""
    kept: list[str] = []
    skipping_level: int | None = None  # inside a dropped `###` section of this heading level
    skipping_bullet = False
    for line in summary.split("\n"):
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group("marks"))
            skipping_bullet = False
            if skipping_level is not None and level > skipping_level:
                continue
            skipping_level = None
            if level >= 3 and text_is_for_other_project(heading.group("title"), session_key):
                skipping_level = level
                continue
            kept.append(line)
            continue
        if skipping_level is not None:
            continue
        if skipping_bullet and line[:1] in (" ", "\t") and line.strip():
            continue
        skipping_bullet = False
        if _BULLET.match(line) and text_is_for_other_project(line, session_key):
            skipping_bullet = True
            continue
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def budget_memory_summary(
    summary: str, budget_tokens: int, *, cwd: str | None = None, project_key: str | None = None
) -> str:
    """`summary` cut to `budget_tokens`, keeping the current project's sections whole when possible."""
    if count_tokens(summary) <= budget_tokens:
        return summary
    lines = summary.split("\n")
    if cwd and project_key is None:
        project_key = project_key_for_directory(cwd)
    sections = project_sections(lines, cwd, project_key) if cwd else []
    if not sections:
        return fit_to_budget(summary, budget_tokens)

    in_project = {index for section in sections for index in range(section.start, section.end)}
    project_text = "\n".join(
        [CURRENT_PROJECT_HEADING, ""] + ["\n".join(lines[section.start : section.end]).strip() + "\n" for section in sections]
    ).rstrip()
    rest_text = "\n".join(line for index, line in enumerate(lines) if index not in in_project).strip()
    prefix = f"{project_text}\n\n{REST_OF_SUMMARY_HEADING}\n\n"
    remaining = budget_tokens - count_tokens(prefix)
    if remaining < 1 or not rest_text:
        return fit_to_budget(project_text, budget_tokens)
    for _ in range(_MAX_FIT_ATTEMPTS):
        combined = prefix + fit_to_budget(rest_text, remaining)
        excess = count_tokens(combined) - budget_tokens
        if excess <= 0:
            return combined
        remaining -= excess
        if remaining < 1:
            break
    return fit_to_budget(project_text, budget_tokens)


def fit_to_budget(text: str, budget_tokens: int) -> str:
    """Middle-truncate `text` so that the result, marker included, counts at most `budget_tokens`."""
    limit = budget_tokens
    for _ in range(_MAX_FIT_ATTEMPTS):
        candidate = truncate_middle(text, limit).text
        excess = count_tokens(candidate) - budget_tokens
        if excess <= 0:
            return candidate
        limit -= excess
        if limit < 1:
            break
    return ""


def project_sections(lines: list[str], cwd: str, project_key: str | None = None) -> list[_Section]:
    """The `### <scope>` sections of `## What's in Memory` about the session: a `project=<key>`
    heading matching `project_key`, or an unmarked heading naming `cwd`."""
    sections: list[_Section] = []
    inside_index = False
    open_start: int | None = None
    open_matches = False
    for index, line in enumerate(lines):
        scope_heading = _LEVEL_THREE_HEADING.match(line)
        outer_heading = _OUTER_HEADING.match(line) is not None
        if (scope_heading or outer_heading) and open_start is not None:
            if open_matches:
                sections.append(_Section(open_start, index))
            open_start = None
        if outer_heading:
            inside_index = _INDEX_HEADING.match(line) is not None
        elif inside_index and scope_heading:
            open_start = index
            open_matches = _section_is_current(scope_heading.group("scope"), cwd, project_key)
    if open_start is not None and open_matches:
        sections.append(_Section(open_start, len(lines)))
    return sections


def _section_is_current(scope: str, cwd: str, project_key: str | None) -> bool:
    marked = marked_project_key(scope)
    if marked is not None:
        return project_keys_match(marked, project_key)
    return scope_matches_cwd(scope, cwd)
