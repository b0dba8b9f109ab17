"""What the memory gives the sessions of one folder, for a person to read (`codex-memories show`).

Contract:
- `view_memory(memory_root, *, cwd, budget_tokens, now=None, forgotten=()) -> MemoryView`:
  - the rules (the project's, then the user-level ones), the notes not yet consolidated, the
    project's other knowledge and the index lines: exactly what `injection.read_folder_memory`
    sorts out for a session in `cwd`, the read path's one decision of what a session may see
    (no scoping of its own here);
  - for each of them, whether the SessionStart text holds it (`injection.build_session_context`
    with the same budget, the text the hook prints): an entry that did not fit the budget stays
    in the folder, where recall and the memory tools find it;
  - the repository's team memory as the SessionStart text carries it (its file, lines given,
    lines dropped and why);
  - what the folder holds that sessions here do not get, and why: another project's lines and
    the expired entries (`FolderMemory.left_out`);
  - what was forgotten: the `forget_audit` rows given (`forgotten`, from the state DB when there
    is one), newest first, each in words; a consolidation's own bookkeeping (`ad_hoc_note`,
    `user_edit`) is not forgetting and is left out.
- `MemoryView.as_json()` is the same view as plain JSON values (`show --json`).
- Reads the memory folder and the repository's team file; writes nothing. A folder that does
  not exist is an empty view (`folder_exists` False), not an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codex_memories.read.injection import (
    DEFAULT_SESSION_START_BUDGET_TOKENS,
    Entry,
    LeftOut,
    build_session_context,
    read_folder_memory,
)
from codex_memories.scopes import project_key_for_directory
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute

# How each forgetting route reads to the user; the routes not here are not forgetting.
FORGOTTEN_BY_ROUTE: dict[ForgetRoute, str] = {
    ForgetRoute.thread_deletion: "session forgotten",
    ForgetRoute.disabled: "session's memory disabled",
    ForgetRoute.pollution: "session's memory dropped (external context)",
    ForgetRoute.project_deletion: "project forgotten",
    ForgetRoute.text_match: "lines forgotten",
    ForgetRoute.manual_reset: "everything reset",
    ForgetRoute.entry_expiry: "expired",
    ForgetRoute.extension_expiry: "expired",
    ForgetRoute.retention_prune: "unused for too long",
    ForgetRoute.selection_window: "left the selection",
    ForgetRoute.empty_reextraction: "nothing left after re-extraction",
}


@dataclass(frozen=True)
class ShownEntry:
    """A remembered line sessions here get: in the SessionStart text, or (over its budget) only
    in the folder, where recall and the memory tools find it."""

    text: str
    source: str
    date: str | None
    in_session_start: bool


@dataclass(frozen=True)
class TeamMemoryShown:
    source: str
    lines_given: int
    lines_over_budget: int
    dropped: list[str]  # why each dropped line went


@dataclass(frozen=True)
class ForgottenItem:
    """One forget, in words: when, what kind, what (a thread, a project, a text, a file) and why."""

    at: int  # Unix seconds
    kind: str
    route: str
    target: str
    reason: str


@dataclass(frozen=True)
class MemoryView:
    cwd: str
    project: str | None
    memory_root: str
    folder_exists: bool
    budget_tokens: int
    session_start_tokens: int  # 0: the hook gives these sessions nothing
    project_rules: list[ShownEntry]
    user_rules: list[ShownEntry]
    notes: list[ShownEntry]
    knowledge: list[ShownEntry]
    index: list[str]
    index_lines_cut: int
    team_memory: TeamMemoryShown | None
    left_out: list[LeftOut]
    forgotten: list[ForgottenItem] = field(default_factory=list)

    @property
    def entries(self) -> list[ShownEntry]:
        return [*self.project_rules, *self.user_rules, *self.notes, *self.knowledge]

    @property
    def over_budget(self) -> list[ShownEntry]:
        return [entry for entry in self.entries if not entry.in_session_start]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def view_memory(
    memory_root: Path,
    *,
    cwd: str,
    budget_tokens: int = DEFAULT_SESSION_START_BUDGET_TOKENS,
    now: datetime | None = None,
    forgotten: Iterable[ForgetAuditRecord] = (),
    recorded_project_keys: Mapping[str, str] | None = None,
) -> MemoryView:
    """The view of module contract for a session in `cwd` (`recorded_project_keys` as for
    `build_session_context`)."""
    now = now or datetime.now(UTC)
    root = Path(memory_root).expanduser()
    session_key = project_key_for_directory(cwd, recorded=recorded_project_keys)
    exists = root.is_dir()
    memory = read_folder_memory(root, cwd=cwd, session_key=session_key, now=now) if exists else None
    # The text the SessionStart hook prints, so that "shown" means what a session gets.
    context = build_session_context(
        root, budget_tokens=budget_tokens, cwd=cwd, now=now, recorded_project_keys=recorded_project_keys
    )
    text = context.text if context is not None else ""

    def shown(entries: list[Entry]) -> list[ShownEntry]:
        return [ShownEntry(entry.text, entry.source, entry.date, entry.rendered in text) for entry in entries]

    team = context.team_memory if context is not None else None
    index = memory.index.split("\n") if memory is not None and memory.index.strip() else []
    index_report = context.tiers.get("index") if context is not None else None
    return MemoryView(
        cwd=cwd,
        project=session_key,
        memory_root=str(root.absolute()),
        folder_exists=exists,
        budget_tokens=budget_tokens,
        session_start_tokens=context.codex_tokens if context is not None else 0,
        project_rules=shown(memory.project_rules) if memory else [],
        user_rules=shown(memory.user_rules) if memory else [],
        notes=shown(memory.notes) if memory else [],
        knowledge=shown(memory.knowledge) if memory else [],
        index=index,
        index_lines_cut=len(index) - index_report.shown if index_report is not None and index else len(index),
        team_memory=(
            TeamMemoryShown(str(team.source), team.lines_injected, team.lines_over_budget, list(team.dropped))
            if team is not None
            else None
        ),
        left_out=list(memory.left_out) if memory else [],
        forgotten=forgotten_items(forgotten),
    )


def forgotten_items(records: Iterable[ForgetAuditRecord]) -> list[ForgottenItem]:
    """The audit rows that forgot something, newest first, in words."""
    items = []
    for record in records:
        kind = FORGOTTEN_BY_ROUTE.get(ForgetRoute(record.route))
        if kind is None:
            continue
        target = record.target
        if record.route == ForgetRoute.entry_expiry and isinstance(record.removed, dict) and record.removed.get("entry"):
            target = str(record.removed["entry"])
        items.append(ForgottenItem(record.created_at, kind, ForgetRoute(record.route).value, target, record.reason))
    return sorted(items, key=lambda item: item.at, reverse=True)
