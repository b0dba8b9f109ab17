"""A forget on request also reaches the team memory files exported on this machine.

`codex-memories export --project DIR` copies a project's memory lines into
`<repository>/.codex/memories.md`, and the SessionStart hook injects that file into every session
in the repository. A forget that left the file alone would keep injecting what the user asked to
forget until someone exported again. So the routes a user asks for (`forget_thread`,
`disable_thread`, `pollute_thread`, `forget_project`, `forget_match`, `reset_memories`) read the
team files of the projects they touch before they change anything (`TeamFiles.before`), and
afterwards remove the generated lines those memories no longer give (`TeamFiles.prune`, through
`team_memory.prune_team_file`). A line this machine did not export (a teammate's, or one the team
edited), and the `## Team notes` section, are never removed. A `forget --match` also removes every
generated line holding its text.

Which files: those under the working directories of the touched threads (the repository root
above each one that still exists on this machine; `forget --match` and a reset look at every
thread's), and every repository an export wrote into (`store.team_export_folders`: a second
checkout, or one where no session ran). The automatic routes (a vanished rollout, retention,
expiry, phase 2's quarantine) change no repository file: only an explicit request writes
outside the memory folder.

The outcome goes into the route's audit row, `removed["team_files"]`: per file its path, the lines
removed and the team-notes lines that still hold a forgotten text, or the error that kept the file
from being rewritten (the forget itself has already happened in the state DB and stays done).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from codex_memories.memory_folder.team_memory import (
    ExportedTeamFile,
    exported_team_files,
    planned_team_file_removal,
    prune_team_file,
)
from codex_memories.state.store import MemoryStore

TEAM_FILES_FACT = "team_files"


@dataclass(frozen=True)
class TeamFiles:
    """The team memory files a forget may reach, read before it changes anything."""

    exported: tuple[ExportedTeamFile, ...] = ()
    text: str | None = None  # `forget --match`: generated lines holding it go too

    @classmethod
    def before(cls, store: MemoryStore, cwds: Iterable[str | None], *, text: str | None = None) -> TeamFiles:
        return cls(tuple(exported_team_files(store, cwds)), text)

    def prune(self, store: MemoryStore) -> list[dict[str, Any]]:
        """Rewrite each file without what the forget took away; one fact per file that changed,
        still holds the text in its team notes, or could not be rewritten."""
        facts: list[dict[str, Any]] = []
        for exported in self.exported:
            try:
                pruned = prune_team_file(store, exported, text=self.text)
            except (OSError, UnicodeDecodeError) as error:
                facts.append(_unreadable(exported, error))
                continue
            if pruned is not None:
                facts.append(pruned.facts())
        return facts

    def planned(self, *, project_key: str | None = None, everything: bool = False) -> list[str]:
        """A dry run's lines: what `prune` would remove when the forget takes every line this
        store gives the files of `project_key` (a project forget) or of every project (a reset),
        and, for `forget --match`, the lines holding the text. Other projects' files, found
        through their recorded exports, lose nothing."""
        described = []
        for exported in self.exported:
            whole = everything or exported.key == project_key
            try:
                pruned = planned_team_file_removal(exported, forgotten=exported.lines if whole else frozenset(), text=self.text)
            except (OSError, UnicodeDecodeError) as error:  # as `prune` reports it: the forget still runs
                described.append(describe_pruned(_unreadable(exported, error)))
                continue
            if pruned is not None:
                described.append(describe_pruned(pruned.facts()))
        return described

    def record(self, store: MemoryStore, removed: dict[str, Any]) -> dict[str, Any]:
        """`removed` with the pruning's facts added under `team_files` (when there are any)."""
        facts = self.prune(store)
        if facts:
            removed[TEAM_FILES_FACT] = facts
        return removed


def _unreadable(exported: ExportedTeamFile, error: Exception) -> dict[str, Any]:
    return {"path": str(exported.path), "error": f"{type(error).__name__}: {error}"}


def describe_pruned(fact: dict[str, Any]) -> str:
    """One `team_files` fact as the terminal and the report show it."""
    if "error" in fact:
        return f"team memory file {fact['path']}: not rewritten ({fact['error']})"
    line = f"team memory file {fact['path']}: {fact['lines_removed']} generated line(s) removed"
    if fact.get("team_notes_holding_text"):
        line += f"; {fact['team_notes_holding_text']} line(s) under `## Team notes` still hold the text (the team's own, left as written)"
    return line
