"""Team memory: one project's memories as a Markdown file in its repository, and how a session
gets it after `AGENTS.md` (issue 15, deliverable 2).

Where: `<repository root>/.codex/memories.md` (`paths.TEAM_MEMORY_FILE`). `.codex/` is where a
repository already keeps its Codex configuration (project `config.toml`, hooks), so the file sits
with the other things a team reviews about how Codex works in that repository; Codex itself reads
no file of that name (nothing reaches a session except through our hook, which labels it), and
Codex's `workspace-write` sandbox mounts `.codex/` read-only, so an agent session cannot quietly
rewrite what the team committed. Plain Markdown: a team edits it in review like any other file.

Export side:
- `collect_project_memories(store, key, folder)`: the memory lines of the project, from the
  stage-1 outputs of the threads whose project key is `key` (`store.threads_for_project`; with
  memory mode `enabled` only: a disabled or polluted thread's memory is not shared). A memory
  line is a bullet of a `raw_memory` subsection ("Preference signals:", "Reusable knowledge:",
  ...), `References:` excepted (evidence, not advice). Every line is redacted
  (`redact.redact_secrets`), whitespace-normalised and de-duplicated; a line that says it is
  user-level ("in every repo", "all my projects", "globally", ...) is left out and counted (the
  explicit per-memory scope will replace that guess: see `is_user_level`). Ordered by section,
  then by first appearance over the outputs oldest first (thread id breaks ties).
- `render_team_memory(memories, existing_team_notes)`: pure; the same memories give the same
  bytes (no clock, no machine path in the text). A header says what the file is, that AGENTS.md
  takes precedence and how it was generated.
- `export_team_memory(store, directory)`: writes the file atomically (`SandboxedFolder`: a temp
  file, fsync, rename), only when its bytes change; the `## Team notes` section of the file it
  replaces is kept verbatim (export owns everything above it).

Read side:
- `team_memory_context(cwd, budget_tokens)`: the text the SessionStart hook adds, or None when
  the project has no team memory file. It reads the file and the `AGENTS.md` files Codex loads
  for `cwd` (per folder from the project root down to `cwd`: `AGENTS.override.md`, else
  `AGENTS.md`), drops lines that contradict them (`contradiction`) and lines the injection gate
  refuses, redacts the rest, and keeps whole lines from the top within half of `budget_tokens`
  (counted as Codex counts a hook's text, `tokens.codex_token_count`: the text goes out through the
  SessionStart hook, and Codex cuts by that count). The text
  says memory is history and AGENTS.md is the rule, and names what was dropped (the terms, never
  the dropped advice).

The contradiction rule (`directives` + `contradiction`), per line, on tool-sized terms: a line
"forbids" T for `never (use|run|call|add|install)? T`, `don't/do not (use|...) T`, `avoid T`,
`must not (use|...) T`, `T is not allowed`, `use X, not T`, `X instead of T`, `prefer X over T`;
it "requires" T for `use T`, `prefer T`, `always (use|run|...)? T`, `must (use|...) T`, outside the
spans that forbid. A memory line contradicts AGENTS.md when it requires a term AGENTS.md forbids
or forbids a term AGENTS.md requires. Terms are compared lower-cased without backticks, quotes or
trailing punctuation; articles are skipped. It catches "use requests" against "never use
requests", "use pip, not uv" against "always use uv"; it misses paraphrases ("HTTP calls go
through httpx"), synonyms and conflicts that are not about one named thing.

A forget on request reaches the file too (`codex_memories.forget.team_files`):
- `exported_team_files(store, cwds)`: the team files of the projects of these working directories
  and of the folders `export_team_memory` recorded (`store.record_team_export`) that exist on
  this machine, each with the lines the store gives it before the forget.
- `prune_team_file(store, exported, text=None)`: afterwards, removes the generated lines the store
  no longer gives (and, with `text`, every generated line holding it), re-rendered like an export
  with the team notes kept; lines this machine never gave the file stay.
  `planned_team_file_removal` is its dry run.

Side effects: `export_team_memory` and `prune_team_file` write one file in the repository;
nothing else writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codex_memories import paths
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder
from codex_memories.scopes import project_folder, project_key_for_directory
from codex_memories.tokens import codex_token_count

if TYPE_CHECKING:  # the SessionStart hook imports this module: no SQLAlchemy or pydantic there
    from codex_memories.state.records import Stage1Output
    from codex_memories.state.store import MemoryStore

TEAM_NOTES_HEADING = "## Team notes"
TEAM_NOTES_PLACEHOLDER = "<!-- Lines under this heading are yours: `codex-memories export` keeps them as written. -->"
AGENTS_OVERRIDE_FILE = "AGENTS.override.md"
# The team memory may take at most this share of the SessionStart budget; the memory summary gets
# the rest (the hook's output stays within the one budget the user set).
TEAM_MEMORY_BUDGET_SHARE = 0.5
BEGIN_MARKER = "========= TEAM_MEMORY BEGINS ========="
END_MARKER = "========= TEAM_MEMORY ENDS ========="

# raw_memory subsection titles (prompts/stage_one_system.md) -> the team file's headings, in order.
_SECTION_HEADINGS = {
    "preference signals": "Preferences and corrections",
    "reusable knowledge": "Reusable knowledge",
    "failures and how to do differently": "Failures and how to do differently",
}
_SKIPPED_SECTIONS = {"references"}
_SUBSECTION = re.compile(r"^(?P<title>[A-Za-z][\w ,'-]{1,60}):\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>\S.*)$")

# "This memory is about the user, not the project": conservative, so such a line stays private.
_USER_LEVEL = re.compile(
    r"\b(?:in|for|across)\s+(?:every|all|any)\s+(?:of\s+)?(?:my\s+)?(?:repo(?:sitorie)?s?|projects?|codebases?)\b"
    r"|\b(?:all|every)\s+(?:of\s+)?my\s+(?:repo(?:sitorie)?s?|projects?|codebases?|work)\b"
    r"|\beverywhere\b|\bglobally\b|\bgeneral preference\b|\buser[- ]level\b|\bin general\b"
    r"|所有项目|所有仓库|每个项目|每个仓库|全局",
    re.IGNORECASE,
)


def is_user_level(line: str) -> bool:
    """Whether a memory line says it applies to the user everywhere (never exported).

    A guess from the text; once stage-1 outputs carry an explicit scope, the export keeps only
    `project` entries and this stays as the fallback for entries without one."""
    return _USER_LEVEL.search(line) is not None


# ---- export -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectMemories:
    key: str
    sections: dict[str, list[str]]  # heading -> lines, in file order
    memories_used: int  # stage-1 outputs that gave at least one line
    user_level_left_out: int

    @property
    def line_count(self) -> int:
        return sum(len(lines) for lines in self.sections.values())


def collect_project_memories(store: MemoryStore, key: str, folder: str | None = None) -> ProjectMemories:
    """The project's memory lines (see the module contract)."""
    from codex_memories.state.records import MemoryMode

    outputs: list[Stage1Output] = []
    for thread in store.threads_for_project(key, folder=folder):
        if thread.memory_mode is not MemoryMode.enabled:
            continue
        output = store.get_stage1_output(thread.id)
        if output is not None and (output.raw_memory.strip() or output.rollout_summary.strip()):
            outputs.append(output)
    outputs.sort(key=lambda output: (output.source_updated_at, output.thread_id))
    sections: dict[str, list[str]] = {heading: [] for heading in _SECTION_HEADINGS.values()}
    seen: set[str] = set()
    used = 0
    user_level = 0
    for output in outputs:
        gave_a_line = False
        for title, line in memory_lines(output.raw_memory):
            line = " ".join(redact_secrets(line).split())
            if is_user_level(line):
                user_level += 1
                continue
            if line.casefold() in seen:
                continue
            seen.add(line.casefold())
            sections.setdefault(_SECTION_HEADINGS.get(title.casefold(), title), []).append(line)
            gave_a_line = True
        used += gave_a_line
    return ProjectMemories(
        key=key,
        sections={heading: lines for heading, lines in sections.items() if lines},
        memories_used=used,
        user_level_left_out=user_level,
    )


def memory_lines(raw_memory: str) -> list[tuple[str, str]]:
    """(subsection title, bullet text) for every bullet of a raw memory outside `References`."""
    found: list[tuple[str, str]] = []
    title: str | None = None
    in_front_matter = False
    for number, line in enumerate(raw_memory.splitlines()):
        if line.strip() == "---" and (number == 0 or in_front_matter):
            in_front_matter = not in_front_matter
            continue
        if in_front_matter:
            continue
        if line.startswith("#"):
            title = None
            continue
        subsection = _SUBSECTION.match(line.strip())
        if subsection:
            title = subsection.group("title").strip()
            continue
        bullet = _BULLET.match(line)
        if bullet and title is not None and title.casefold() not in _SKIPPED_SECTIONS:
            found.append((title, bullet.group("text").strip()))
    return found


def render_team_memory(memories: ProjectMemories, team_notes: str = "") -> str:
    """The team memory file's text: header, generated sections, then the team's own notes."""
    # An origin names the project the same way in every clone; a local path (a repository without
    # an origin) would differ per machine, so only its folder name is shown.
    shown_key = Path(memories.key).name if memories.key.startswith("/") else memories.key
    header = [
        f"# Team memory: {shown_key}",
        "",
        "> What past Codex sessions in this repository learned, exported for the whole team by",
        "> `codex-memories export --project .` from the project's stage-1 memories (secrets redacted;",
        "> user-level memories and other projects' memories left out). Memory is history, not policy:",
        "> `AGENTS.md` takes precedence, and a line here that contradicts it is dropped when a session",
        "> starts. Review and commit it like code. Export rewrites everything above `## Team notes`; to",
        "> drop a generated line for good, run `codex-memories forget --match TEXT` (it edits this file too).",
        "",
        (
            f"Exported from {memories.memories_used} memor{'y' if memories.memories_used == 1 else 'ies'}"
            f" ({memories.line_count} line{'' if memories.line_count == 1 else 's'})."
        ),
        "",
    ]
    body: list[str] = []
    for heading, lines in memories.sections.items():
        body += [f"## {heading}", "", *(f"- {line}" for line in lines), ""]
    notes = team_notes.strip("\n") or TEAM_NOTES_PLACEHOLDER
    return "\n".join([*header, *body, TEAM_NOTES_HEADING, "", notes, ""])


def read_team_file(folder: Path) -> str | None:
    """The text of the team memory file of the repository at `folder`; None when it has none."""
    try:
        return SandboxedFolder(folder).read_bytes(paths.TEAM_MEMORY_FILE).decode("utf-8")
    except FileNotFoundError:
        return None


def existing_team_notes(text: str) -> str:
    """What the team wrote under `## Team notes` (empty when the heading is missing)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == TEAM_NOTES_HEADING:
            return "\n".join(lines[index + 1 :]).strip("\n")
    return ""


@dataclass(frozen=True)
class ExportResult:
    path: Path
    changed: bool
    memories: ProjectMemories


def export_team_memory(store: MemoryStore, directory: str | Path) -> ExportResult:
    """Write `<project folder>/.codex/memories.md` for the project of `directory`."""
    start = Path(directory).expanduser()
    if not start.is_dir():
        raise NotADirectoryError(f"{directory}: not a directory")
    folder = project_folder(start)
    key = project_key_for_directory(start)
    if key is None:
        raise ValueError(f"{directory}: no project key (no git origin, repository root or folder)")
    memories = collect_project_memories(store, key, str(folder))
    repository = SandboxedFolder(folder)
    previous = read_team_file(folder) or ""
    text = render_team_memory(memories, existing_team_notes(previous))
    repository.makedirs(str(Path(paths.TEAM_MEMORY_FILE).parent))
    changed = repository.write_if_changed(paths.TEAM_MEMORY_FILE, text.encode("utf-8"), executable=False)
    store.record_team_export(str(folder), key)  # so a forget finds this checkout (forget.team_files)
    return ExportResult(path=folder / paths.TEAM_MEMORY_FILE, changed=changed, memories=memories)


# ---- a forget reaches an exported file -------------------------------------------------------


@dataclass(frozen=True)
class ExportedTeamFile:
    """A project's team memory file on this machine, with the lines this store's memories give
    it, read before a forget (`exported_team_files`). `prune_team_file` then removes the lines
    the forget took away and no others: a line a teammate's export added, one the team edited,
    and the team's own notes stay."""

    folder: Path
    key: str
    lines: frozenset[str]  # casefolded, as `collect_project_memories` gives them
    memories_used: int

    @property
    def path(self) -> Path:
        return self.folder / paths.TEAM_MEMORY_FILE


@dataclass(frozen=True)
class PrunedTeamFile:
    path: str
    lines_removed: int
    # Lines under `## Team notes` that hold the forgotten text: the team's own words, left alone.
    team_notes_holding_text: int = 0

    def facts(self) -> dict[str, object]:
        return {"path": self.path, "lines_removed": self.lines_removed, "team_notes_holding_text": self.team_notes_holding_text}


def exported_team_files(store: MemoryStore, cwds: Iterable[str | None]) -> list[ExportedTeamFile]:
    """The team memory files of the projects these working directories belong to and of every
    folder an export recorded (those on this machine that still have one), each with the lines
    the store gives it now. A recorded file of an unrelated project loses nothing in a prune:
    the forget took none of its lines."""
    found: dict[Path, ExportedTeamFile] = {}
    for cwd in dict.fromkeys([*cwds, *store.team_export_folders()]):
        if not cwd or not Path(cwd).is_dir():
            continue
        folder = project_folder(cwd)
        if folder in found or not (folder / paths.TEAM_MEMORY_FILE).is_file():
            continue
        key = project_key_for_directory(folder)
        if key is None:
            continue
        memories = collect_project_memories(store, key, str(folder))
        found[folder] = ExportedTeamFile(folder, key, _casefolded_lines(memories), memories.memories_used)
    return list(found.values())


def prune_team_file(store: MemoryStore, exported: ExportedTeamFile, *, text: str | None = None) -> PrunedTeamFile | None:
    """Remove from `exported`'s file the generated lines the store no longer gives it, and, with
    `text` (a `forget --match`), every generated line holding `text`; None when nothing changed
    and the team notes do not hold `text`. Written like an export (atomically, kept notes)."""
    after = collect_project_memories(store, exported.key, str(exported.folder))
    forgotten = exported.lines - _casefolded_lines(after)
    if not forgotten and text is None:
        return None
    previous = read_team_file(exported.folder)
    if previous is None:
        return None
    notes = existing_team_notes(previous)
    notes_hits = _notes_holding(notes, text)
    sections, removed = _generated_sections(previous, forgotten, text.casefold() if text else None)
    if removed:
        memories = ProjectMemories(
            key=exported.key,
            sections=sections,
            memories_used=max(0, _exported_from(previous) - (exported.memories_used - after.memories_used)),
            user_level_left_out=0,
        )
        rendered = render_team_memory(memories, notes).encode("utf-8")
        SandboxedFolder(exported.folder).write_if_changed(paths.TEAM_MEMORY_FILE, rendered, executable=False)
    if not removed and not notes_hits:
        return None
    return PrunedTeamFile(str(exported.path), removed, notes_hits)


def planned_team_file_removal(exported: ExportedTeamFile, *, forgotten: frozenset[str] = frozenset(), text: str | None = None) -> PrunedTeamFile | None:
    """What `prune_team_file` would remove when the store stops giving `forgotten` (casefolded
    lines) and, with `text`, every generated line holding it; reads only (a dry run)."""
    previous = read_team_file(exported.folder)
    if previous is None:
        return None
    _, removed = _generated_sections(previous, forgotten, text.casefold() if text else None)
    notes_hits = _notes_holding(existing_team_notes(previous), text)
    return PrunedTeamFile(str(exported.path), removed, notes_hits) if removed or notes_hits else None


def _notes_holding(notes: str, text: str | None) -> int:
    return sum(text.casefold() in line.casefold() for line in notes.splitlines()) if text else 0


def _casefolded_lines(memories: ProjectMemories) -> frozenset[str]:
    return frozenset(line.casefold() for lines in memories.sections.values() for line in lines)


_EXPORTED_FROM = re.compile(r"^Exported from (?P<count>\d+) memor(?:y|ies)\b")


def _exported_from(text: str) -> int:
    for line in text.splitlines():
        match = _EXPORTED_FROM.match(line.strip())
        if match:
            return int(match.group("count"))
    return 0


def _generated_sections(text: str, forgotten: frozenset[str], needle: str | None) -> tuple[dict[str, list[str]], int]:
    """(heading -> generated lines kept, lines removed) of a team memory file: the bullets above
    `## Team notes`, without those in `forgotten` (casefolded) or holding `needle`."""
    sections: dict[str, list[str]] = {}
    heading: str | None = None
    removed = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == TEAM_NOTES_HEADING:
            break
        if stripped.startswith("## "):
            heading = stripped[3:].strip()
            sections.setdefault(heading, [])
            continue
        if heading is None or not stripped.startswith("- "):
            continue
        bullet = " ".join(stripped[2:].split())
        if bullet.casefold() in forgotten or (needle is not None and needle in bullet.casefold()):
            removed += 1
        else:
            # Redacted like an export's lines: a line typed into the file is written back too.
            sections[heading].append(redact_secrets(bullet))
    return {name: lines for name, lines in sections.items() if lines}, removed


# ---- the contradiction rule ---------------------------------------------------------------

_TERM = r"[`'\"]?(?P<term>[\w@][\w./@+#-]*)[`'\"]?"
_ARTICLE = r"(?:(?:the|a|an)\s+)?"
_VERB = r"(?:(?:use|using|run|running|call|calling|add|adding|install|installing|import|importing)\s+)"
_FORBIDS = (
    re.compile(rf"\bnever\s+{_VERB}?{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\b(?:don'?t|do\s+not|must\s+not|should\s+not|shouldn'?t|stop)\s+{_VERB}{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\bavoid\s+{_VERB}?{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"{_TERM}\s+is\s+(?:not\s+allowed|forbidden|banned)", re.IGNORECASE),
    re.compile(rf"[,;(]\s*not\s+{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\binstead\s+of\s+{_VERB}?{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\bprefer\s+\S+\s+(?:over|to)\s+{_ARTICLE}{_TERM}", re.IGNORECASE),
)
_REQUIRES = (
    re.compile(rf"\b(?:use|prefer)\s+{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\balways\s+{_VERB}?{_ARTICLE}{_TERM}", re.IGNORECASE),
    re.compile(rf"\bmust\s+{_VERB}{_ARTICLE}{_TERM}", re.IGNORECASE),
)
_NOT_TERMS = frozenset(
    {"it", "this", "that", "them", "these", "those", "any", "anything", "something", "to", "in", "of", "be", "and", "or",
     "not", "no", "more", "only", "when", "if", "we", "you", "i", "your", "our", "my", "all", "one"}
)


@dataclass(frozen=True)
class Directives:
    requires: frozenset[str] = frozenset()
    forbids: frozenset[str] = frozenset()


def _term(match: re.Match[str]) -> str | None:
    term = match.group("term").strip("`'\".,;:!?)").casefold()
    return term if term and term not in _NOT_TERMS else None


def directives(text: str) -> Directives:
    """The terms a text requires and forbids (the rule in the module contract)."""
    requires: set[str] = set()
    forbids: set[str] = set()
    for line in text.splitlines():
        forbidden_spans: list[tuple[int, int]] = []
        for pattern in _FORBIDS:
            for match in pattern.finditer(line):
                term = _term(match)
                if term:
                    forbids.add(term)
                forbidden_spans.append(match.span())
        for pattern in _REQUIRES:
            for match in pattern.finditer(line):
                inside = any(start <= match.start() < end for start, end in forbidden_spans)
                term = _term(match)
                if term and not inside and term not in forbids:
                    requires.add(term)
    return Directives(frozenset(requires), frozenset(forbids))


def contradiction(line: str, rules: Directives) -> str | None:
    """Why a memory line contradicts AGENTS.md (e.g. "`requests`: AGENTS.md forbids it"), or None."""
    said = directives(line)
    clashes = sorted(said.requires & rules.forbids)
    if clashes:
        return f"`{clashes[0]}`: AGENTS.md forbids it"
    clashes = sorted(said.forbids & rules.requires)
    if clashes:
        return f"`{clashes[0]}`: AGENTS.md requires it"
    return None


# ---- the read side ------------------------------------------------------------------------


@dataclass(frozen=True)
class TeamMemoryContext:
    text: str
    source: Path
    lines_injected: int
    dropped: list[str] = field(default_factory=list)  # why each dropped line went (no line text)
    lines_over_budget: int = 0


def agents_files(folder: Path, cwd: Path) -> list[Path]:
    """The AGENTS files Codex loads for `cwd`: per folder from `folder` down to `cwd`, the
    override when there is one, else `AGENTS.md`."""
    chain = [folder]
    try:
        relative = cwd.relative_to(folder)
    except ValueError:
        relative = Path()
    for part in relative.parts:
        chain.append(chain[-1] / part)
    found = []
    for directory in chain:
        for name in (AGENTS_OVERRIDE_FILE, paths.AGENTS_FILE):
            if (directory / name).is_file():
                found.append(directory / name)
                break
    return found


def team_memory_context(cwd: str | Path, budget_tokens: int) -> TeamMemoryContext | None:
    """What a session in `cwd` gets from its repository's team memory (module contract)."""
    working = Path(cwd).expanduser().absolute()
    folder = project_folder(working)
    raw = read_team_file(folder)
    if raw is None:
        return None
    # Imported only for a repository that has team memory: every other session start skips it.
    from codex_memories.evidence.screen import GatedFile, find_injections

    rules = Directives()
    for agents in agents_files(folder, working):
        said = directives(agents.read_text(encoding="utf-8", errors="replace"))
        rules = Directives(rules.requires | said.requires, rules.forbids | said.forbids)
    refused = {finding.line for finding in find_injections([GatedFile(paths.TEAM_MEMORY_FILE, raw)]) if finding.line}
    kept: list[str] = []
    dropped: list[str] = []
    for number, text in _memory_body(raw):
        if number in refused:
            dropped.append(f"line {number}: looks like an injected instruction")
            continue
        why = contradiction(text, rules)
        if why:
            dropped.append(f"line {number}: {why}")
            continue
        kept.append(redact_secrets(text))
    if not any(line.strip() and not line.startswith("#") for line in kept):
        return None
    budget = max(1, int(budget_tokens * TEAM_MEMORY_BUDGET_SHARE))
    source = folder / paths.TEAM_MEMORY_FILE

    def fits(count: int) -> bool:
        return codex_token_count(_render_context(source, kept[:count], dropped, len(kept) - count)) <= budget

    # Whole lines from the top: the most lines whose rendering fits (binary search; fewer lines
    # never render longer, the "more lines" marker aside, which is one short line).
    low, high = 0, len(kept)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    if not fits(low):
        return None
    shown = kept[:low]
    injected = sum(1 for line in shown if line.strip() and not line.startswith("#"))
    if not injected:
        return None
    text = _render_context(source, shown, dropped, len(kept) - low)
    return TeamMemoryContext(text, source, injected, dropped, len(kept) - low)


def _memory_body(raw: str) -> list[tuple[int, str]]:
    """(line number, line) of the file without its generated header and HTML comments."""
    lines = raw.splitlines()
    body: list[tuple[int, str]] = []
    in_comment = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith(("# ", ">", "Exported from ")):
            continue
        if not stripped and (not body or not body[-1][1].strip()):
            continue
        body.append((number, line.rstrip()))
    while body and not body[-1][1].strip():
        body.pop()
    return body


def _render_context(source: Path, lines: list[str], dropped: list[str], over_budget: int) -> str:
    parts = [
        "### Team memory of this repository",
        "",
        f"From `{source}`, committed by the team: what past Codex sessions here learned. Memory is",
        "history, AGENTS.md is the rule: where a line below disagrees with AGENTS.md or with the",
        "user, follow AGENTS.md and the user.",
    ]
    if dropped:
        parts += ["", f"Dropped {len(dropped)} line(s) of the file that contradict AGENTS.md or look injected:"]
        parts += [f"- {why}" for why in dropped]
    parts += ["", BEGIN_MARKER, *lines]
    if over_budget:
        parts.append(f"(... {over_budget} more line(s) in the file, over the budget)")
    parts.append(END_MARKER)
    return "\n".join(parts)
