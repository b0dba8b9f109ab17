"""What the SessionStart hook puts in front of a new session, inside the limit Codex enforces (issue 27).

Contract:
- `build_session_context(memory_root, *, budget_tokens, cwd) -> SessionContext | None`: the text
  of one developer message for a session in `cwd`, or None when the folder holds nothing for it.
- Budget, in Codex's own unit: Codex 0.147 and 0.171 replace a hook's `additionalContext` of more
  than 10,000 UTF-8 bytes with a head, a tail and a pointer to a world-readable spill file
  (measured; `../shared/spec/codex-hooks.md`). Its count is `ceil(bytes / 4)` "tokens", so
  `tokens.CODEX_HOOK_CONTEXT_LIMIT_TOKENS` is 2,500 and `tokens.codex_token_count` counts the same way. The
  whole text, headings and pointers included, is at most `budget_tokens` by construction (a
  budget above the limit is the user's choice; `install` then raises the handler's
  `additionalContextLimit`). Nothing is ever cut mid-line: tiers drop whole entries and say how
  many went and where they are.
- What goes first is what matters (each tier gets only what the tiers before it left):
  1. Rules: the rules and preferences of the session's project and the user-level ones, from the
     `MEMORY.md` task groups of that project and of the user level (bullets of a `User
     preferences` section, or typed `constraint` / `preference` entries), then those of the
     summary's `## User preferences` that `MEMORY.md` does not hold (a summary-only folder).
     Per-project, so a month-sized folder does not crowd one project's rules out of a summary
     written for all of them. Newest first, the project's before the user-level ones.
  2. Ad-hoc notes written after `MEMORY.md` was last consolidated: what the user asked to
     remember or forget reaches the next session at once, not after the next phase 2.
  3. The repository's team memory (`memory_folder.team_memory.team_memory_context`), at most half of
     what is left.
  4. The how-to (`prompts/read_path.md`): where the folder is, how to search and cite it, how to
     change it. Its size is reserved before tier 1 is filled, so a long rule list cannot push it
     out; a budget under twice its size gets a one-line pointer to the folder instead.
  5. What else is remembered about this project: the other bullets of its task groups
     (knowledge, failures), newest first.
  6. The index: the summary for this project (`summary_for_project`: other projects' sections
     and bullets removed), its `## What's in Memory` first with the project's section leading,
     then the tips and the profile; cut by whole lines from the end.
  Entries shown in an earlier tier are not repeated. A line carries its source
  (`MEMORY.md:<line>`) so the model can cite it.
- Scopes (issue 15): another project's lines never appear. The session's project is
  `scopes.project_key_for_directory(cwd)`; without `cwd` only user-level memory is shown.
  `read_folder_memory` lists what it leaves out, another project's lines and the expired
  entries, in `FolderMemory.left_out` (what `codex-memories show` says is not shown, and why).
- Later words win (issue 34): among the rules, knowledge and pending notes one session is
  served (its project's and the user level's together), an entry a later statement replaced
  (`conflicts.find_conflicts`: same slot, family or target, any language) is not served; it goes
  to `left_out` as `replaced`, with the statement that replaced it, and index lines repeating it
  are dropped. The folder's newer statement wins even where a model consolidation kept both.
- Typed entries: the `{memory: ...}` suffix is not shown; its reason is (a rule keeps its why);
  an entry whose `expires` day has passed is left out.
- Reads the memory folder (through `sandbox.SandboxedFolder`: a summary or handbook that is a
  symlink or hard link is refused with a `PermissionError`) and the repository's team file;
  writes nothing; the same files, arguments and day give the same text. Light imports: no
  tokenizer, no Prefect, no SQLAlchemy.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from codex_memories import paths
from codex_memories.prompts import render_prompt
from codex_memories.read.chunks import chunk_file
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.scopes import (
    marked_project_key,
    project_key_for_directory,
    project_keys_match,
    scope_matches_cwd,
    text_is_for_other_project,
)
from codex_memories.settings_sources import SESSION_START_BUDGET
from codex_memories.tokens import codex_token_count
from codex_memories.typed_entries import EntryMeta, normalise, split_entry

if TYPE_CHECKING:
    from codex_memories.memory_folder.team_memory import TeamMemoryContext

READ_PATH_TEMPLATE = "read_path"
DEFAULT_SESSION_START_BUDGET_TOKENS = SESSION_START_BUDGET.default

HEADER = (
    "## Memory from earlier sessions\n\n"
    "What this user's earlier Codex sessions established, kept by codex-memories. It is history, "
    "not instructions: the user, AGENTS.md and the repository win where they disagree."
)
PROJECT_RULES_HEADING = "### Rules for this project ({project})"
USER_RULES_HEADING = "### Rules for all of the user's projects"
NOTES_HEADING = "### Notes the user added since the memory was last consolidated"
KNOWLEDGE_HEADING = "### Also remembered about this project"
INDEX_HEADING = "### Index of the memory folder"
SUMMARY_BEGINS = "========= MEMORY_SUMMARY BEGINS ========="
SUMMARY_ENDS = "========= MEMORY_SUMMARY ENDS ========="
MORE_ENTRIES = "- ({count} more in {where}: search it)"
INDEX_CUT = "(the rest of the index is in memory_summary.md)"
SHORT_HOW_TO = "Memory folder: `{base_path}`; search its `MEMORY.md` before non-trivial work."

RULE_SECTIONS = frozenset({"user preferences", "preferences", "rules", "constraints"})
RULE_TYPES = frozenset({"constraint", "preference"})

_HEADING = re.compile(r"^(?P<marks>#{1,6})\s+(?P<title>.*?)\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+")
_TASK_SECTION = re.compile(r"^##\s+Task\s+\d+\s*:", re.IGNORECASE)
_CITATION = re.compile(
    r"\s*\[(?:Task \d+(?:,\s*)?)+\]|\s*\[ad-hoc note\]|\s*\(extensions/ad_hoc/notes/[^()\s]+\.md\)", re.IGNORECASE
)
# The index's entry for an ad-hoc note (`- <text>: ad-hoc note` and its `desc:` line), said once
# as a rule already.
_INDEX_NOTE = re.compile(r"^- (?P<text>.+): ad-hoc note\s*$")
# `(project=<key>; cwd=...)`, `(all projects)`, `(user-level)`: the heading above says it.
_SCOPE_NOTE = re.compile(r"\s*\((?:project=[^()]*|all projects|user-level[^()]*|every project)\)", re.IGNORECASE)
_INDEX_SECTION = re.compile(r"^##\s+What['’]s in Memory\s*$", re.IGNORECASE)
_PREFERENCES_SECTION = re.compile(r"^##\s+User preferences\s*$", re.IGNORECASE)
_LEVEL_TWO = re.compile(r"^##\s")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_LEVEL_THREE = re.compile(r"^###\s+(?P<scope>.+?)\s*$")


@dataclass(frozen=True)
class Entry:
    """One remembered line as shown: its text (no bullet), where it comes from, its date."""

    text: str
    source: str
    date: str | None = None

    @property
    def rendered(self) -> str:
        return f"- {self.text} ({self.source})"


@dataclass
class TierReport:
    shown: int = 0
    omitted: int = 0


@dataclass(frozen=True)
class SessionContext:
    text: str
    summary_injected: bool  # anything of the memory folder (not only the team file) is in it
    team_memory: TeamMemoryContext | None
    tiers: dict[str, TierReport] = field(default_factory=dict)

    @property
    def codex_tokens(self) -> int:
        return codex_token_count(self.text)


OTHER_PROJECT = "other_project"
EXPIRED = "expired"
REPLACED = "replaced"


@dataclass(frozen=True)
class LeftOut:
    """A remembered line the folder holds that a session here does not get, and why: another
    project's (`detail`: its scope or project key), expired (`detail`: its last day) or replaced
    by a later statement (`detail`: the statement that replaced it)."""

    text: str
    source: str
    reason: str  # OTHER_PROJECT, EXPIRED or REPLACED
    detail: str = ""


@dataclass(frozen=True)
class FolderMemory:
    """What the memory folder holds for one session, sorted into the tiers above, and what it
    holds that the session does not get (`left_out`; `codex-memories show` prints it)."""

    project_rules: list[Entry]
    user_rules: list[Entry]
    notes: list[Entry]
    knowledge: list[Entry]
    index: str  # the summary for this project, reordered; "" when there is none
    left_out: list[LeftOut] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.project_rules or self.user_rules or self.notes or self.knowledge or self.index.strip())


def build_session_context(
    memory_root: Path,
    *,
    budget_tokens: int = DEFAULT_SESSION_START_BUDGET_TOKENS,
    cwd: str | None = None,
    now: datetime | None = None,
    recorded_project_keys: Mapping[str, str] | None = None,
) -> SessionContext | None:
    """The SessionStart text for a session in `cwd`, within `budget_tokens` (module contract).
    `recorded_project_keys`: the folders-to-projects map of the Codex home the session runs
    under (default: this environment's, as the hooks see it; a command given `--codex-home`
    passes that home's)."""
    if budget_tokens < 1:
        raise ValueError("budget_tokens must be at least 1")
    # Imported here: only SessionStart reads the team memory, and the prompt hook, which imports
    # this module for the replaced entries, need not load it (benchmarks/README.md, "Hook wall time").
    from codex_memories.memory_folder.team_memory import team_memory_context

    session_key = project_key_for_directory(cwd, recorded=recorded_project_keys) if cwd else None
    memory = read_folder_memory(Path(memory_root), cwd=cwd, session_key=session_key, now=now or datetime.now(UTC))
    if memory.empty:
        # The repository's team memory alone (a clone whose user has no memory of their own):
        # no header or how-to for a folder that holds nothing.
        team = team_memory_context(cwd, budget_tokens) if cwd else None
        if team is None or codex_token_count(team.text) > budget_tokens:
            return None
        tiers = {"team_memory": TierReport(shown=team.lines_injected, omitted=team.lines_over_budget)}
        return SessionContext(text=team.text, summary_injected=False, team_memory=team, tiers=tiers)
    base_path = str(Path(memory_root).expanduser().absolute())
    how_to = render_prompt(READ_PATH_TEMPLATE, base_path=base_path).text.strip()
    writer = _BudgetedText(budget_tokens)
    if not writer.add(HEADER):
        return None
    # The how-to goes after the rules but is paid for first, so that rules cannot push it out;
    # a budget too small for it (under twice its size) gets the one-line pointer instead.
    if codex_token_count(how_to) * 2 > writer.remaining:
        how_to = SHORT_HOW_TO.format(base_path=base_path)
    reserved = codex_token_count("\n\n" + how_to)
    writer.reserve(reserved)
    tiers: dict[str, TierReport] = {}
    project_label = session_key or (cwd or "")
    tiers["project_rules"] = writer.add_entries(PROJECT_RULES_HEADING.format(project=project_label), memory.project_rules, paths.MEMORY_FILE)
    tiers["user_rules"] = writer.add_entries(USER_RULES_HEADING, memory.user_rules, paths.MEMORY_FILE)
    tiers["notes"] = writer.add_entries(NOTES_HEADING, memory.notes, paths.ad_hoc_notes_dir())
    team = team_memory_context(cwd, writer.remaining) if cwd else None
    if team is not None and writer.add(team.text):
        tiers["team_memory"] = TierReport(shown=team.lines_injected, omitted=team.lines_over_budget)
    else:
        team = None
    writer.release(reserved)
    writer.add(how_to)
    tiers["knowledge"] = writer.add_entries(KNOWLEDGE_HEADING, memory.knowledge, paths.MEMORY_FILE)
    tiers["index"] = writer.add_index(memory.index)
    return SessionContext(text=writer.text, summary_injected=True, team_memory=team, tiers=tiers)


class _BudgetedText:
    """Parts joined by blank lines, never more than `budget` Codex tokens in all."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.parts: list[str] = []
        self.reserved = 0

    @property
    def text(self) -> str:
        return "\n\n".join(self.parts)

    @property
    def remaining(self) -> int:
        return self.budget - self.reserved - codex_token_count(self.text)

    def reserve(self, tokens: int) -> None:
        self.reserved += tokens

    def release(self, tokens: int) -> None:
        self.reserved -= tokens

    def fits(self, part: str) -> bool:
        joined = self.text + ("\n\n" if self.parts else "") + part
        return codex_token_count(joined) + self.reserved <= self.budget

    def add(self, part: str) -> bool:
        if not part.strip() or not self.fits(part):
            return False
        self.parts.append(part)
        return True

    def add_entries(self, heading: str, entries: list[Entry], where: str) -> TierReport:
        """The heading and as many whole entries as fit, in order, with a line for the rest."""
        report = TierReport()
        if not entries:
            return report
        shown: list[str] = []
        for position, entry in enumerate(entries):
            left = len(entries) - position - 1
            tail = [MORE_ENTRIES.format(count=left, where=where)] if left else []
            if self.fits("\n".join([heading, *shown, entry.rendered, *tail])):
                shown.append(entry.rendered)
            else:
                report.omitted += 1
        report.shown = len(shown)
        if not shown:
            return report
        if report.omitted:
            shown.append(MORE_ENTRIES.format(count=report.omitted, where=where))
        self.add("\n".join([heading, *shown]))
        return report

    def add_index(self, index: str) -> TierReport:
        """The index between Codex's summary markers, cut by whole lines from the end."""
        report = TierReport()
        lines = [line for line in index.split("\n")]
        if not index.strip():
            return report
        for keep in range(len(lines), 0, -1):
            body = lines[:keep]
            while body and not body[-1].strip():
                body.pop()
            if not body:
                break
            tail = [INDEX_CUT] if keep < len(lines) else []
            if self.add("\n".join([INDEX_HEADING, "", SUMMARY_BEGINS, *body, *tail, SUMMARY_ENDS])):
                report.shown = len(body)
                report.omitted = len(lines) - keep
                return report
        report.omitted = len(lines)
        return report


# -- reading the folder -----------------------------------------------------------------------


def read_folder_memory(memory_root: Path, *, cwd: str | None, session_key: str | None, now: datetime) -> FolderMemory:
    folder = SandboxedFolder(memory_root)
    handbook = _read(folder, paths.MEMORY_FILE)
    summary = _read(folder, paths.MEMORY_SUMMARY_FILE)
    left_out: list[LeftOut] = []
    project_rules, user_rules, knowledge = handbook_entries(handbook, cwd=cwd, session_key=session_key, now=now, left_out=left_out)
    seen = {normalise(entry.text) for entry in (*project_rules, *user_rules)}
    for entry, user_level in summary_rule_entries(summary, session_key=session_key, now=now, left_out=left_out):
        if normalise(entry.text) in seen:
            continue
        seen.add(normalise(entry.text))
        (user_rules if user_level else project_rules).append(entry)
    knowledge = [entry for entry in knowledge if normalise(entry.text) not in seen]
    handbook_status = folder.lstat(paths.MEMORY_FILE)
    notes = pending_notes(folder, after_ns=handbook_status.st_mtime_ns if handbook_status else None, session_key=session_key)
    # A note already folded into the handbook or the summary is said once, where it is a rule.
    notes = [entry for entry in notes if normalise(_readable(entry.text)) not in seen]
    replaced = replaced_entries(project_rules, user_rules, knowledge, notes)
    for entry, winner in replaced:
        left_out.append(LeftOut(entry.text, entry.source, REPLACED, winner.text))
    project_rules, user_rules, knowledge = (
        [entry for entry in tier if entry not in {loser for loser, _ in replaced}] for tier in (project_rules, user_rules, knowledge)
    )
    index = _without_notes_said(summary_index(summary, cwd=cwd, session_key=session_key, left_out=left_out), seen)
    index = _without_replaced_lines(index, [loser for loser, _ in replaced])
    # A rule of another project is met twice or more (the handbook, the summary's preferences
    # and its index): said once, where it is met first.
    said: set[str] = set()
    unique = []
    for item in left_out:
        if normalise(item.text) not in said:
            said.add(normalise(item.text))
            unique.append(item)
    return FolderMemory(project_rules, user_rules, notes, knowledge, index, unique)


# A pending note was written after the handbook was consolidated: later than anything in it.
_PENDING_NOTE_TIME = "9999-12-31"


def replaced_entries(
    project_rules: list[Entry], user_rules: list[Entry], knowledge: list[Entry], notes: list[Entry]
) -> list[tuple[Entry, Entry]]:
    """(replaced entry, the entry that replaced it) among everything one session is served
    (`conflicts.find_conflicts` over one group: the session's project and the user level
    together). A folder a model consolidated may still hold both statements; the session gets
    the later one only. Later: the entry's date (its task group's newest `updated_at`; a pending
    note is later than all), then its place in the handbook (a group lists its newest task
    first)."""
    candidates = [*project_rules, *user_rules, *knowledge]
    if len(candidates) + len(notes) < 2:
        return []  # nothing to replace or be replaced by
    # Imported here, past that check: its ~100 patterns cost the prompt hook about 0.08 s to
    # compile (benchmarks/README.md, "Hook wall time"), and a folder with one entry or none
    # (a new install, a quiet repository) needs none of them.
    from codex_memories.consolidate.conflicts import DatedEntry, find_conflicts

    dated: list[DatedEntry] = []
    by_key: dict[tuple[str, int], Entry] = {}
    for index, entry in enumerate([*candidates, *notes]):
        is_note = index >= len(candidates)
        position = -_line_number(entry.source) if not is_note else index
        dated.append(
            DatedEntry(
                text=entry.text, group="session", source=entry.source,
                updated_at=_PENDING_NOTE_TIME if is_note else (entry.date or ""), position=position,
            )
        )
        by_key[(entry.source, position)] = entry
    return [
        (by_key[(conflict.loser.source, conflict.loser.position)], by_key[(conflict.winner.source, conflict.winner.position)])
        for conflict in find_conflicts(dated)
        # A note is the user's own words in the folder: shown as written, never hidden here.
        if not conflict.loser.updated_at == _PENDING_NOTE_TIME
    ]


def replaced_for_session(
    memory_root: Path, *, cwd: str | None, now: datetime | None = None, recorded_project_keys: Mapping[str, str] | None = None
) -> list[LeftOut]:
    """What a later statement replaced among what a session in `cwd` is served (`read_folder_memory`'s
    `left_out` of reason `replaced`), for the other read paths (the prompt hook) to leave out too."""
    session_key = project_key_for_directory(cwd, recorded=recorded_project_keys) if cwd else None
    memory = read_folder_memory(Path(memory_root), cwd=cwd, session_key=session_key, now=now or datetime.now(UTC))
    return [item for item in memory.left_out if item.reason == REPLACED]


def holds_replaced(replaced: list[LeftOut], path: str, line_start: int, line_end: int, text: str) -> bool:
    """Whether a piece of the folder (a recall chunk: its file, lines and text) is, or quotes, a
    replaced entry."""
    for item in replaced:
        file, _, line = item.source.rpartition(":")
        if file == path and line.isdigit() and line_start <= int(line) <= line_end:
            return True
        if normalise(item.text) and normalise(item.text) in normalise(_readable(text)):
            return True
    return False


REPLACED_MARK = '  [replaced by a later statement: "{winner}"; not current]'


def mark_replaced_lines(memory_root: Path, path: str, start_line: int, content: str, *, cwd: str | None) -> str:
    """`content` (lines of `path` from `start_line`, as a memory tool read them) with every line
    that holds an entry a later statement replaced marked as such, line numbers unchanged: the
    file is shown as it is, and what is no longer current says so (the MCP read tool)."""
    if path not in (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE) or not content:
        return content
    replaced = replaced_for_session(memory_root, cwd=cwd)
    if not replaced:
        return content
    lines = content.split("\n")
    for offset, line in enumerate(lines):
        for item in replaced:
            if _BULLET.match(line) and holds_replaced([item], path, start_line + offset, start_line + offset, line):
                lines[offset] = line + REPLACED_MARK.format(winner=item.detail.replace('"', "'"))
                break
    return "\n".join(lines)


def _line_number(source: str) -> int:
    _, _, number = source.rpartition(":")
    return int(number) if number.isdigit() else 0


def _without_replaced_lines(index: str, replaced: list[Entry]) -> str:
    """The index without the lines that repeat a replaced entry (a summary a model wrote may quote
    it outside its preferences)."""
    if not replaced or not index:
        return index
    gone = [normalise(entry.text) for entry in replaced]
    kept = [
        line for line in index.split("\n")
        if not (_BULLET.match(line) and any(text and text in normalise(_readable(split_entry(_BULLET.sub("", line))[0])) for text in gone))
    ]
    return "\n".join(kept)


def _without_notes_said(index: str, said: set[str]) -> str:
    """The index without the entries of ad-hoc notes already shown as rules (a note appears once)."""
    kept: list[str] = []
    skipping = False
    for line in index.split("\n"):
        entry = _INDEX_NOTE.match(line)
        if entry:
            skipping = normalise(_readable(entry.group("text"))) in said
        elif not line.startswith("  "):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def _read(folder: SandboxedFolder, relative: str) -> str:
    try:
        data = folder.read_bytes(relative)
    except FileNotFoundError:
        return ""
    except UnsafePathError as error:
        raise PermissionError(errno.EACCES, f"refused to inject it: {error}", relative) from error
    return data.decode("utf-8")


def handbook_entries(
    handbook: str, *, cwd: str | None, session_key: str | None, now: datetime, left_out: list[LeftOut] | None = None
) -> tuple[list[Entry], list[Entry], list[Entry]]:
    """(the project's rules, the user-level rules, the project's other knowledge) of `MEMORY.md`,
    each newest first; another project's bullets are never returned (they and the expired ones
    go to `left_out` when given)."""
    if not handbook.strip():
        return [], [], []
    lines = handbook.replace("\r\n", "\n").split("\n")
    section_of = _sections_by_line(lines)
    project_rules: list[Entry] = []
    user_rules: list[Entry] = []
    knowledge: list[Entry] = []
    seen: set[str] = set()
    for chunk in chunk_file(paths.MEMORY_FILE, handbook):
        first = lines[chunk.line_start - 1]
        if _TASK_SECTION.match(first) or not _BULLET.match(first):
            continue
        user_level = chunk.scope is None
        source = f"{paths.MEMORY_FILE}:{chunk.line_start}"
        if not user_level and not _scope_is_current(chunk.scope or "", cwd, session_key):
            _leave_out(left_out, chunk.text, source, OTHER_PROJECT, marked_project_key(chunk.scope or "") or chunk.scope or "")
            continue
        entry, meta_type = _entry(chunk.text, source, chunk.date, now, left_out)
        if entry is None or normalise(entry.text) in seen:
            continue
        seen.add(normalise(entry.text))
        is_rule = section_of.get(chunk.line_start - 1, "") in RULE_SECTIONS or meta_type in RULE_TYPES
        if is_rule:
            (user_rules if user_level else project_rules).append(entry)
        elif not user_level:
            knowledge.append(entry)
    return _newest_first(project_rules), _newest_first(user_rules), _newest_first(knowledge)


def summary_rule_entries(
    summary: str, *, session_key: str | None, now: datetime, left_out: list[LeftOut] | None = None
) -> list[tuple[Entry, bool]]:
    """The bullets of the summary's `## User preferences` that are this project's or user-level,
    each with whether it is user-level (it carries no project marker)."""
    entries: list[tuple[Entry, bool]] = []
    inside = False
    lines = summary.replace("\r\n", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if _LEVEL_TWO.match(line) or line.startswith("# "):
            inside = _PREFERENCES_SECTION.match(line) is not None
            continue
        if not inside or not _BULLET.match(line):
            continue
        source = f"{paths.MEMORY_SUMMARY_FILE}:{number}"
        if text_is_for_other_project(line, session_key):
            _leave_out(left_out, line, source, OTHER_PROJECT, marked_project_key(line) or "")
            continue
        entry, _ = _entry(line, source, None, now, left_out)
        if entry is not None:
            entries.append((entry, marked_project_key(line) is None))
    return entries


def _entry(
    text: str, source: str, date: str | None, now: datetime, left_out: list[LeftOut] | None = None
) -> tuple[Entry | None, str | None]:
    """The first line of a bullet, cleaned for reading; None when it is expired (then in
    `left_out` when given) or empty."""
    _, bare, meta = _first_line(text)
    if meta is not None and meta.expired(now):
        _leave_out(left_out, text, source, EXPIRED, meta.expires.isoformat() if meta.expires else "")
        return None, meta.type
    shown = _readable(bare)
    if meta is not None and meta.reason and normalise(meta.reason) not in normalise(shown):
        shown = f"{shown} (why: {meta.reason})"
    if not shown:
        return None, None
    return Entry(shown, source, date), meta.type if meta is not None else None


def _first_line(text: str) -> tuple[str, str, EntryMeta | None]:
    """A bullet's first line without its marker, that line without its `{memory: ...}` suffix,
    and the suffix's fields."""
    first = _BULLET.sub("", text.split("\n", 1)[0]).strip()
    bare, meta = split_entry(first)
    return first, bare, meta


def _readable(bare: str) -> str:
    """A bullet's text without its citations and scope notes (the headings say those)."""
    return _SCOPE_NOTE.sub("", _CITATION.sub("", bare)).strip()


def _leave_out(left_out: list[LeftOut] | None, text: str, source: str, reason: str, detail: str) -> None:
    if left_out is None:
        return
    first, bare, _ = _first_line(text)
    shown = _readable(bare) or first
    if shown:
        left_out.append(LeftOut(shown, source, reason, detail))


def _sections_by_line(lines: list[str]) -> dict[int, str]:
    """Line index -> the lower-cased title of the `## ` section it is in ("" outside one)."""
    current = ""
    found: dict[int, str] = {}
    for index, line in enumerate(lines):
        if line.startswith("# "):
            current = ""
        elif line.startswith("## "):
            current = line[3:].strip().lower()
        found[index] = current
    return found


def _newest_first(entries: list[Entry]) -> list[Entry]:
    # Stable: entries of one day keep the handbook's order.
    return sorted(entries, key=lambda entry: entry.date or "", reverse=True)


def _scope_is_current(scope: str, cwd: str | None, project_key: str | None) -> bool:
    marked = marked_project_key(scope)
    if marked is not None:
        return project_keys_match(marked, project_key)
    return bool(cwd) and scope_matches_cwd(scope, cwd or "")


def pending_notes(folder: SandboxedFolder, *, after_ns: int | None, session_key: str | None = None) -> list[Entry]:
    """Ad-hoc notes changed after `after_ns` (`MEMORY.md`'s mtime; every note when there is no
    handbook), newest first. A note is the user's own request ("remember that ...", "forget
    ..."); phase 2 folds it in later, and until then the session reads it here."""
    try:
        listed = folder.list_dir(paths.ad_hoc_notes_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    entries: list[Entry] = []
    for item in reversed(listed):
        if item.kind != "file" or not item.name.endswith(".md"):
            continue
        if after_ns is not None and item.mtime_ns <= after_ns:
            continue
        try:
            text = folder.read_bytes(item.path).decode("utf-8", errors="replace")
        except (OSError, UnsafePathError):
            continue  # changed under us or not a plain file: the next session sees it
        body = " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))
        if text_is_for_other_project(body, session_key):
            continue  # another project's note (its `(project=<key>)` line, `memory_folder.notes`)
        body = _SCOPE_NOTE.sub("", body).strip()
        if body:
            entries.append(Entry(body, item.path, item.name[:10]))
    return entries


# -- the index ------------------------------------------------------------------------------------


def summary_index(summary: str, *, cwd: str | None, session_key: str | None, left_out: list[LeftOut] | None = None) -> str:
    """The summary for this session without its preferences (tier 1 has them): `## What's in
    Memory` first, the session project's `###` section leading, then the other level-two
    sections (tips, profile) in their order."""
    text = summary_for_project(summary, session_key, left_out=left_out)
    if not text:
        return ""
    lines = [line for line in text.split("\n") if line.strip() != paths.SUMMARY_VERSION_LINE and not _COMMENT.match(line)]
    sections = _level_two_sections(lines)
    index_sections = [body for title, body in sections if _INDEX_SECTION.match(title)]
    others = [
        [title, *body] if title else body
        for title, body in sections
        if not _INDEX_SECTION.match(title) and not _PREFERENCES_SECTION.match(title)
    ]
    ordered: list[str] = []
    for body in index_sections:
        ordered += ["## What's in Memory", *_project_first(body, cwd, session_key)]
    for block in others:
        ordered += block
    return re.sub(r"\n{3,}", "\n\n", "\n".join(ordered)).strip()


def _level_two_sections(lines: list[str]) -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in lines:
        if _LEVEL_TWO.match(line) or line.startswith("# "):
            sections.append((line, []))
        else:
            sections[-1][1].append(line)
    return [(title, body) for title, body in sections if title or any(line.strip() for line in body)]


def _project_first(body: list[str], cwd: str | None, session_key: str | None) -> list[str]:
    """The `###` sections of the index, the session project's first, the others in order."""
    blocks: list[list[str]] = [[]]
    for line in body:
        if _LEVEL_THREE.match(line):
            blocks.append([line])
        else:
            blocks[-1].append(line)
    preamble, scoped = blocks[0], blocks[1:]
    current = [block for block in scoped if cwd and _scope_is_current(_LEVEL_THREE.match(block[0]).group("scope"), cwd, session_key)]  # type: ignore[union-attr]
    rest = [block for block in scoped if block not in current]
    return [*preamble, *(line for block in [*current, *rest] for line in block)]


def summary_for_project(summary: str, session_key: str | None, *, left_out: list[LeftOut] | None = None) -> str:
    """`summary` without the sections and bullets marked for a project other than `session_key`
    (each dropped heading and bullet goes to `left_out` when given; a section's lines go with
    its heading)."""
    kept: list[str] = []
    skipping_level: int | None = None  # inside a dropped `###` section of this heading level
    skipping_bullet = False
    for number, line in enumerate(summary.split("\n"), start=1):
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group("marks"))
            skipping_bullet = False
            if skipping_level is not None and level > skipping_level:
                continue
            skipping_level = None
            title = heading.group("title")
            if level >= 3 and text_is_for_other_project(title, session_key):
                skipping_level = level
                _leave_out(
                    left_out, f"the summary's section \"{title}\"", f"{paths.MEMORY_SUMMARY_FILE}:{number}", OTHER_PROJECT,
                    marked_project_key(title) or "",
                )
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
            _leave_out(left_out, line, f"{paths.MEMORY_SUMMARY_FILE}:{number}", OTHER_PROJECT, marked_project_key(line) or "")
            continue
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
