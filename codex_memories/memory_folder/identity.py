"""Which state DB a memory folder belongs to (issue 36, item 4): a run with a fresh or different
state DB is refused, not allowed to re-extract every session into the live folder.

Why: a state DB path that does not exist yet (a typo, a new machine) used to be created silently,
and its run re-extracted every session into the live folder. The folder's forget ledger already
keeps forgotten memories out (`forget.ledger`); this check keeps a wrong DB from rewriting a
folder it did not build at all (the rollout summaries it does not know deleted, the consolidated
files rebuilt from another history).

The binding: `<root>/.codex-memories/state-binding.json` (`storage.STATE_BINDING_PATH`) holds the
id of the state DB that writes the folder (`MemoryStore.ensure_state_identity`, a row of the
state DB's own); no reset, rebuild or consolidation deletes it.

`check_memory_folder(store, root, rebuild=..., db_shown=...)` is what a run calls first: the
folder is writable (`MemoryRoot.check_writable`), then the binding below.

Contract of `check_state_binding(store, root, *, rebuild)`, run before phase 1 (`run`, `phase1`,
every scheduled phase 1) with a folder already checked writable:
- the folder names this DB: nothing to do (`BindingOutcome.bound`);
- the folder names another DB, or names one while this DB has none (a fresh DB, or one from
  another folder): `StateDbMismatch`, a sentence saying which and what to do; with
  `rebuild=True` (`--rebuild-state`) the folder is bound to this DB instead (`rebound`): the DB
  rebuilds its state from the sessions, and the ledger keeps out what was forgotten;
- the folder names no DB (made before this check existed, or never run into): a folder holding
  memories (the consolidated files or synced inputs, `_holds_memory_files`) met by a DB that has never discovered a session is `StateDbMismatch` too (the
  fresh-DB case) unless `rebuild`; anything else binds the folder to this DB (`first_bound`):
  a new folder, or an existing pair upgraded.
Writes: the binding file (one atomic write) and, the first time, the DB's identity row.
Idempotent once bound.
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from typing import Any

from codex_memories.paths import MEMORY_FILE, MEMORY_SUMMARY_FILE, RAW_MEMORIES_FILE, ROLLOUT_SUMMARIES_DIR
from codex_memories.storage import STATE_BINDING_PATH, MemoryRoot

BINDING_FORMAT = "codex-memories state binding"
BINDING_VERSION = 1
REBUILD_OPTION = "--rebuild-state"


class StateDbMismatch(RuntimeError):
    """The state DB is not the one the memory folder was built with."""


class BindingOutcome(StrEnum):
    bound = "bound"
    first_bound = "first_bound"
    rebound = "rebound"


def check_memory_folder(store: Any, root: MemoryRoot, *, rebuild: bool, db_shown: str) -> BindingOutcome:
    """Before a run writes anything: the folder takes writes (`MemoryRootNotWritable`, a sentence
    naming it) and was built with this state DB (`check_state_binding`)."""
    root.check_writable()
    return check_state_binding(store, root, rebuild=rebuild, db_shown=db_shown)


def check_missing_state_db(root: MemoryRoot, *, rebuild: bool, db_shown: str) -> None:
    """Before a state DB that does not exist yet is created (a SQLite file not there): refused
    as `check_state_binding` would refuse the fresh DB, without leaving an empty DB behind at a
    mistyped path."""
    if rebuild:
        return
    if _quietly_named(root) is not None or _holds_memory_files(root):
        raise StateDbMismatch(_refusal(root, db_shown, "a state DB that does not exist yet (nothing was created)"))


def folder_state_identity(root: MemoryRoot) -> str | None:
    """The state DB id the folder names, or None; an unreadable binding file is a mismatch
    (it is kept: it may be the only trace of which DB built the folder)."""
    if not root.is_file(STATE_BINDING_PATH):
        return None
    try:
        document = json.loads(root.read_bytes(STATE_BINDING_PATH).decode("utf-8"))
        identity = document["state_db"]
        if document.get("format") != BINDING_FORMAT or not isinstance(identity, str) or not identity:
            raise ValueError("not a binding")
        return identity
    except (ValueError, KeyError, TypeError) as error:
        raise StateDbMismatch(
            f"{root.url}/{STATE_BINDING_PATH} cannot be read ({error}): which state DB built this memory folder is unknown; "
            f"run with {REBUILD_OPTION} to bind it to this state DB"
        ) from None


def check_state_binding(store: Any, root: MemoryRoot, *, rebuild: bool, db_shown: str) -> BindingOutcome:
    """Check (and make, when it is safe) the folder's binding to `store` (module contract).
    `db_shown`: the state DB as the refusal names it (its URL with the password masked)."""
    named = folder_state_identity(root) if not rebuild else _quietly_named(root)
    own = store.state_identity()
    if named is not None and named == own:
        return BindingOutcome.bound
    if not rebuild:
        if named is not None:
            why = "a new state DB that has never run" if not store.holds_any_memory_state() else "another state DB"
            raise StateDbMismatch(_refusal(root, db_shown, why))
        if _holds_memory_files(root) and not store.holds_any_memory_state():
            raise StateDbMismatch(_refusal(root, db_shown, "a new state DB that has never run"))
    _write_binding(root, store.ensure_state_identity())
    return BindingOutcome.rebound if rebuild else BindingOutcome.first_bound


def _refusal(root: MemoryRoot, db_shown: str, why: str) -> str:
    return (
        f"the memory folder {root.url} was built with another state DB, and {db_shown} is {why}: "
        f"a typo in the state DB URL or a new machine would re-extract every session into this folder. "
        f"Give the state DB that built it, or run with {REBUILD_OPTION} to rebuild the state from the sessions "
        f"(what was forgotten stays forgotten)"
    )


def _quietly_named(root: MemoryRoot) -> str | None:
    try:
        return folder_state_identity(root)
    except StateDbMismatch:
        return None  # being rebound anyway


def _holds_memory_files(root: MemoryRoot) -> bool:
    """Whether a run has written memories here: the consolidated files or the synced inputs
    (`install` and the MCP server write extensions before any run: they do not count)."""
    if not root.is_dir(None):
        return False
    return any(
        path in (MEMORY_FILE, MEMORY_SUMMARY_FILE, RAW_MEMORIES_FILE) or path.startswith(ROLLOUT_SUMMARIES_DIR + "/")
        for path in root.file_sizes(exclude_internal=True)
    )


def _write_binding(root: MemoryRoot, identity: str) -> None:
    document = {
        "format": BINDING_FORMAT,
        "version": BINDING_VERSION,
        "why": f"the state DB this memory folder is written by; a run with another one is refused unless {REBUILD_OPTION}",
        "state_db": identity,
        "bound_at": int(time.time()),
    }
    root.write_bytes(STATE_BINDING_PATH, (json.dumps(document, indent=1) + "\n").encode("utf-8"))
