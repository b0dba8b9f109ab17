"""Phase 2's note quarantine: a live ad-hoc note the injection gate refuses leaves the memory, and
the rest consolidates.

A note is the user's own input and goes live at once, but an older note, or one pasted from
somewhere, can break the gate's rules (a `curl ... | sh`, an order addressed to AI readers). Left
in place, every later phase 2 would fail on it while the SessionStart hook kept serving it.

Contract:
- `quarantine_refused_notes(root_dir, store)`: every regular `extensions/ad_hoc/notes/*.md` of
  the workspace is read and judged by the gate's own decision (`evidence.screen.find_injections`);
  a refused note is moved to `extensions/ad_hoc/quarantine/` (`memory_folder.notes.quarantine_note`: not
  live, never consolidated, listed by `codex-memories show`), with one forget-audit row (route
  `ad_hoc_note`) naming it and the rules, so the run's report names it too. When the audit row
  cannot be written the note is put back: the folder and the DB change together or not at all.
- Returns the notes quarantined. A note the gate passes is untouched; same notes, same result.
"""

from __future__ import annotations

from pathlib import Path

from codex_memories import paths
from codex_memories.evidence.screen import MAX_GATED_FILE_BYTES, GatedFile, excerpt, find_injections
from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.memory_folder.notes import HeldNote, quarantine_note, remove_held_note, write_ad_hoc_note
from codex_memories.sandbox import SandboxedFolder
from codex_memories.state.records import ForgetRoute
from codex_memories.state.store import MemoryStore

QUARANTINE_REASON = "quarantined: phase 2's injection gate refuses this note ({rules}); it is not live until dropped"


def refused_notes(root_dir: Path) -> dict[str, tuple[str, ...]]:
    """Live notes the gate refuses -> the rules they break."""
    folder = SandboxedFolder(Path(root_dir))
    try:
        entries = folder.list_dir(paths.ad_hoc_notes_dir())
    except (FileNotFoundError, NotADirectoryError):
        return {}
    files = []
    for entry in entries:
        if entry.kind == "file" and entry.name.endswith(".md") and entry.size <= MAX_GATED_FILE_BYTES:
            data = folder.read_bytes(entry.path)
            text = data.decode("utf-8", "replace")
            files.append(GatedFile(entry.path, text))
    refused: dict[str, list[str]] = {}
    for finding in find_injections(files):
        rules = refused.setdefault(finding.path, [])
        if finding.rule not in rules:
            rules.append(finding.rule)
    return {path: tuple(rules) for path, rules in sorted(refused.items())}


def quarantine_refused_notes(root_dir: Path, store: MemoryStore) -> list[HeldNote]:
    quarantined = []
    for path, rules in refused_notes(root_dir).items():
        held = quarantine_note(root_dir, path, rules)
        action = ForgetAction(
            route=ForgetRoute.ad_hoc_note,
            target=path,
            reason=QUARANTINE_REASON.format(rules=", ".join(rules)),
            removed={"note": excerpt(held.text), "rules": list(rules), "quarantine": held.record_path},
        )
        try:
            record_actions(store, [action])
        except Exception:
            # Put the note back as it was, then let the failure be the run's.
            write_ad_hoc_note(root_dir, held.name, held.text, project_key=held.project_key)
            remove_held_note(root_dir, held)
            raise
        quarantined.append(held)
    return quarantined
