"""Rebuild: consolidate again from the stage-1 outputs, from scratch (issue 15, #30299).

Phase 2 itself does the consolidating (the `memories-rebuild` flow runs it forced, through the
normal flow: same lease, gate, audit and run artifact); this module only gives it a fresh folder
and keeps the old one until the new one is good.

Contract:
- `set_aside_consolidation(store, root_dir)`: refuses while a phase 2 holds its lease
  (`ResetRefused`), then moves every entry of the local memory folder into a sibling folder
  `.<name>.rebuild-<id>`, except the inputs that are not the consolidation's: `extensions/` (the
  ad-hoc notes and other producers' resources) and the recall index (derived; phase 2 refreshes
  it). The git baseline goes too, so phase 2 starts from INIT: every input is new to it, the
  notes included (audited again as `ad_hoc_note`). Entries are renamed, never copied or followed
  (a symlink moves as a link). Returns the `SetAside` record.
- `settle_rebuild(aside, outcome)`: after phase 2; a success (`succeeded`,
  `succeeded_no_workspace_changes`) keeps the new folder and deletes the set-aside one; any other
  outcome (a failure, a lost or busy lease, the rate-limit guard) removes what the run left and
  moves the old entries back, so a failed rebuild loses nothing. Returns whether the new folder
  was kept.
- Local memory folders only (`RebuildRefused` for an object-store URL): the set-aside is a rename
  on one file system.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from codex_memories import paths
from codex_memories.forget.manual import refuse_while_consolidating
from codex_memories.outcomes import Outcome
from codex_memories.state.store import MemoryStore

KEPT_ENTRIES = frozenset({paths.EXTENSIONS_DIR})
KEPT_STATE_FILES = frozenset({paths.RECALL_INDEX_FILE})
KEEP_OUTCOMES = frozenset({Outcome.succeeded, Outcome.succeeded_no_workspace_changes})


class RebuildRefused(RuntimeError):
    """A rebuild cannot start here (an object-store root, a folder that does not exist)."""


@dataclass(frozen=True)
class SetAside:
    root: str
    backup: str
    entries: tuple[str, ...]  # relative paths moved, in move order


def set_aside_consolidation(store: MemoryStore, root_dir: str | Path) -> SetAside:
    """Move the consolidation out of the memory folder (see the module contract)."""
    if "://" in str(root_dir):
        raise RebuildRefused(f"rebuild needs a local memory folder; {root_dir} is an object-store URL")
    root = Path(root_dir).expanduser()
    if not root.is_dir():
        raise RebuildRefused(f"no memory folder at {root}: nothing to rebuild (run phase 2 instead)")
    refuse_while_consolidating(store, "rebuild")
    backup = root.parent / f".{root.name}.rebuild-{uuid.uuid4().hex[:12]}"
    backup.mkdir()
    moved: list[str] = []
    try:
        for relative in _consolidation_entries(root):
            target = backup / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / relative, target)
            moved.append(relative)
    except OSError:
        _move_back(root, backup, moved)
        raise
    return SetAside(root=str(root), backup=str(backup), entries=tuple(moved))


def settle_rebuild(aside: SetAside, outcome: Outcome | None) -> bool:
    """Keep the rebuilt folder after a success, else put the old one back; True when kept."""
    root, backup = Path(aside.root), Path(aside.backup)
    if outcome in KEEP_OUTCOMES:
        shutil.rmtree(backup)
        return True
    for relative in _consolidation_entries(root):
        _remove(root / relative)
    _move_back(root, backup, list(aside.entries))
    return False


def _consolidation_entries(root: Path) -> list[str]:
    entries = []
    for name in sorted(os.listdir(root)):
        if name in KEPT_ENTRIES:
            continue
        if name == paths.WORKSPACE_STATE_DIR and (root / name).is_dir() and not (root / name).is_symlink():
            entries += [f"{name}/{inner}" for inner in sorted(os.listdir(root / name)) if inner not in KEPT_STATE_FILES]
            continue
        entries.append(name)
    return entries


def _move_back(root: Path, backup: Path, moved: list[str]) -> None:
    for relative in reversed(moved):
        destination = root / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(backup / relative, destination)
    shutil.rmtree(backup)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
