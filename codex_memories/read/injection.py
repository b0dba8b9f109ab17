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
from codex_memories.scopes import scope_matches_cwd
from codex_memories.tokens import count_tokens, truncate_middle

READ_PATH_TEMPLATE = "read_path"
DEFAULT_SUMMARY_BUDGET_TOKENS = 5_000
CODEX_SUMMARY_BUDGET_TOKENS = 2_500
CURRENT_PROJECT_HEADING = "## What's in Memory for the current project"
REST_OF_SUMMARY_HEADING = "## Rest of the memory summary"

_INDEX_HEADING = re.compile(r"^##\s+What['’]s in Memory\s*$", re.IGNORECASE)
_OUTER_HEADING = re.compile(r"^#{1,2}\s")
_LEVEL_THREE_HEADING = re.compile(r"^###\s+(?P<scope>.+?)\s*$")
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
    budgeted = budget_memory_summary(summary, budget_tokens, cwd=cwd)
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


def budget_memory_summary(summary: str, budget_tokens: int, *, cwd: str | None = None) -> str:
    """`summary` cut to `budget_tokens`, keeping the current project's sections whole when possible."""
    if count_tokens(summary) <= budget_tokens:
        return summary
    lines = summary.split("\n")
    sections = project_sections(lines, cwd) if cwd else []
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


def project_sections(lines: list[str], cwd: str) -> list[_Section]:
    """The `### <scope>` sections of `## What's in Memory` whose scope names `cwd`."""
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
            open_matches = scope_matches_cwd(scope_heading.group("scope"), cwd)
    if open_start is not None and open_matches:
        sections.append(_Section(open_start, len(lines)))
    return sections
