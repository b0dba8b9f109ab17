"""Code-written phase-2 inputs (spec 8.2, 8.3) and the storage-size metric.

Contract:
- `render_rollout_summary` is pure and produces the exact bytes Codex writes, so real Codex and
  this pipeline can share one memory folder; the `raw_memories.md` format and the summary file
  names are in `codex_memories.raw_memories`.
- `sync_rollout_summaries` makes `rollout_summaries/` hold exactly one `<stem>.md` per selected
  output: selected files are written only when their bytes differ (so an unchanged selection makes
  no diff), made durable together (one `flush`, not an fsync per file), then every other `*.md`
  there is deleted, hand-made files included. Idempotent.
- `rebuild_raw_memories` rewrites `raw_memories.md` from the selection when its bytes differ.
- Both write what they are given: phase 2's sync (`consolidate.steps.sync_inputs`) has taken out
  what the folder's forget ledger names first (`forget.ledger.ForgetLedger.honoured`). Header
  values are escaped onto one line (`raw_memories.escape_metadata`).
- Every function takes a `MemoryRoot` (or a local path) and does all I/O through it.
"""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_memories.paths import (
    RAW_MEMORIES_FILE,
    ROLLOUT_SUMMARIES_DIR,
    SYNCED_INPUTS_FILE,
    WORKSPACE_STATE_DIR,
    rollout_summary_path,
)
from codex_memories.raw_memories import escape_metadata, render_raw_memories, rfc3339, stem_for
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.state.records import OutputIdentity, Stage1Output, Stage1OutputRef
from codex_memories.storage import MemoryRoot, RootLike, open_memory_root


@dataclass(frozen=True)
class SyncResult:
    written: list[str]
    deleted: list[str]
    unchanged: list[str]


def render_rollout_summary(output: Stage1Output) -> str:
    # Metadata is the session's own text: one escaped line each, never a line of its own choosing.
    lines = [
        f"thread_id: {escape_metadata(output.thread_id)}",
        f"updated_at: {rfc3339(output.source_updated_at)}",
        f"rollout_path: {escape_metadata(output.rollout_path or '')}",
        f"cwd: {escape_metadata(output.cwd or '')}",
    ]
    if output.git_branch:
        lines.append(f"git_branch: {escape_metadata(output.git_branch)}")
    return "\n".join(lines) + "\n\n" + output.rollout_summary.strip() + "\n"


def _write_if_changed(root: MemoryRoot, path: str, text: str, *, durable: bool = True) -> bool:
    return root.write_if_changed(path, text.encode("utf-8"), durable=durable)


def sync_rollout_summaries(root: RootLike, selection: list[Stage1Output]) -> SyncResult:
    """Make `rollout_summaries/` hold exactly the selected summaries (forgetting route 2). The
    caller has taken out what the folder's forget ledger names (`ForgetLedger.honoured`)."""
    root = open_memory_root(root)
    root.makedirs(ROLLOUT_SUMMARIES_DIR)
    written, unchanged = [], []
    keep = set()
    for output in selection:
        path = rollout_summary_path(stem_for(output))
        keep.add(path)
        # No fsync per file (a fresh sync writes thousands): one durable point below instead.
        if _write_if_changed(root, path, render_rollout_summary(output), durable=False):
            written.append(path)
        else:
            unchanged.append(path)
    if written:
        root.flush()
    # Deleting after writing (and after the flush) keeps the old summaries readable until every
    # replacement exists on disk.
    deleted = []
    # An object store has no empty folders: with no summaries the prefix does not exist at all.
    existing = root.list_dir(ROLLOUT_SUMMARIES_DIR) if root.is_dir(ROLLOUT_SUMMARIES_DIR) else []
    for entry in existing:
        if entry.kind != "dir" and entry.name.endswith(".md") and entry.path not in keep:
            root.delete(entry.path)
            deleted.append(entry.path)
    return SyncResult(written=sorted(written), deleted=sorted(deleted), unchanged=sorted(unchanged))


def rebuild_raw_memories(root: RootLike, selection: list[Stage1Output]) -> bool:
    """Rewrite `raw_memories.md` from the selection (the caller has taken out what the folder's
    forget ledger names); True when its bytes changed."""
    root = open_memory_root(root)
    return _write_if_changed(root, RAW_MEMORIES_FILE, render_raw_memories(selection))


def storage_bytes(root: RootLike) -> int:
    """Total size of the regular memory files (`.git` excluded, symlinks not followed)."""
    return sum(open_memory_root(root).file_sizes(exclude_internal=True).values())


# --------------------------------------------------------------------------------------------
# What the last sync wrote: lets a no-change phase 2 skip loading, rendering and comparing.
#
# `.codex-memories/synced-inputs.json` (local workspace only; never diffed, mirrored or counted)
# holds a fingerprint of the synced selection (every field the files are made of except the
# payloads, which only change together with `source_updated_at`/`generated_at`) and the size and
# mtime of every file the sync wrote. The next sync may skip its work only when the selection
# fingerprint is the same AND every one of those files is still exactly there, unchanged, with no
# extra summary beside them: a user edit, a deleted or hand-made summary, or a half-finished
# earlier sync (the record is deleted before a sync starts) all fall back to a full sync.

_SYNCED_INPUTS_VERSION = 1


def output_ref(output: Stage1Output) -> Stage1OutputRef:
    return Stage1OutputRef.model_validate(output.model_dump(include=set(Stage1OutputRef.model_fields)))


def selection_fingerprint(refs: list[Stage1OutputRef]) -> str:
    ordered = sorted((ref.model_dump(mode="json") for ref in refs), key=lambda ref: ref["thread_id"])
    return hashlib.sha256(json.dumps(ordered, sort_keys=True).encode("utf-8")).hexdigest()


_SYNCED_INPUTS_PATH = f"{WORKSPACE_STATE_DIR}/{SYNCED_INPUTS_FILE}"


def _synced_file_stats(root_dir: Path) -> dict[str, list[int]] | None:
    """Size and mtime of raw_memories.md and every rollout summary; None if any is a link."""
    folder = SandboxedFolder(root_dir)
    stats: dict[str, list[int]] = {}
    try:
        raw = folder.lstat(RAW_MEMORIES_FILE)
        if raw is None or not stat.S_ISREG(raw.st_mode) or raw.st_nlink > 1:
            return None
        stats[RAW_MEMORIES_FILE] = [raw.st_size, raw.st_mtime_ns]
        if folder.kind(ROLLOUT_SUMMARIES_DIR) != "dir":
            return None
        entries = folder.list_dir(ROLLOUT_SUMMARIES_DIR)
    except UnsafePathError:
        return None  # a symlinked folder: nothing trustworthy to record or compare
    for entry in entries:
        if entry.kind == "symlink" or (entry.kind == "file" and entry.nlink > 1):
            return None
        if entry.kind == "file":
            stats[entry.path] = [entry.size, entry.mtime_ns]
        elif entry.kind == "dir":  # recorded by name so one appearing or vanishing is a change
            stats[f"{entry.path}/"] = [-1, -1]
    return stats


def forget_synced_inputs(root_dir: Path) -> None:
    SandboxedFolder(root_dir).delete(_SYNCED_INPUTS_PATH, missing_ok=True)


def record_synced_inputs(root_dir: Path, refs: list[Stage1OutputRef]) -> None:
    stats = _synced_file_stats(root_dir)
    if stats is None:
        return  # nothing trustworthy to record: the next sync simply does the full work
    record = {"version": _SYNCED_INPUTS_VERSION, "selection": selection_fingerprint(refs), "files": stats}
    SandboxedFolder(root_dir).write_bytes(_SYNCED_INPUTS_PATH, json.dumps(record, sort_keys=True).encode("utf-8"))


def files_changed_since_sync(root_dir: Path) -> set[str] | None:
    """The synced input files (raw_memories.md, rollout summaries) that are not as the last
    input sync left them: written, rewritten or added since. None when there is no trustworthy
    record of that sync (then every input file counts as changed)."""
    try:
        record = json.loads(SandboxedFolder(root_dir).read_bytes(_SYNCED_INPUTS_PATH).decode("utf-8"))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePathError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or record.get("version") != _SYNCED_INPUTS_VERSION or not isinstance(record.get("files"), dict):
        return None
    now = _synced_file_stats(root_dir)
    if now is None:
        return None
    return {path for path, facts in now.items() if not path.endswith("/") and record["files"].get(path) != facts}


def synced_inputs_unchanged(root_dir: Path, refs: list[Stage1OutputRef]) -> bool:
    """True when the files on disk are exactly what syncing `refs` wrote last time."""
    record = _read_state_record(root_dir, _SYNCED_INPUTS_PATH, _SYNCED_INPUTS_VERSION)
    if record is None:
        return False  # no trustworthy record (missing, linked, corrupt): the sync does the full work
    if record.get("selection") != selection_fingerprint(refs):
        return False
    return record.get("files") == _synced_file_stats(root_dir)


# --------------------------------------------------------------------------------------------
# What the last successful phase 2 settled on: lets a rerun where nothing that decides the
# selection changed (and the folder is still its baseline) finish before any workspace work.
#
# `.codex-memories/phase2-settled.json` (local roots only; never diffed, mirrored or counted)
# holds the fingerprint of the selection's inputs taken at that run's start, the baseline commit
# the folder was left at, the first moment time alone changes the outcome (an output ageing out
# of `max_unused_days`, an extension resource expiring), the selection as marked in the DB and
# the storage size. `consolidate.steps.check_settled` decides; any doubt means the full run.

_SETTLED_VERSION = 1
_SETTLED_PATH = f"{WORKSPACE_STATE_DIR}/phase2-settled.json"


@dataclass(frozen=True)
class SettledRecord:
    fingerprint: str
    baseline_commit: str
    next_change_at: int | None  # epoch seconds; None: nothing ages out
    selected: list[OutputIdentity]  # as marked at the success
    storage_bytes: int


def _read_state_record(root_dir: Path, path: str, version: int) -> dict[str, Any] | None:
    """A JSON object of our bookkeeping folder with this `version`, or None (missing, linked,
    corrupt, another version): the caller then does the full work."""
    try:
        record = json.loads(SandboxedFolder(root_dir).read_bytes(path).decode("utf-8"))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePathError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or record.get("version") != version:
        return None
    return record


def read_settled_record(root_dir: Path) -> SettledRecord | None:
    record = _read_state_record(root_dir, _SETTLED_PATH, _SETTLED_VERSION)
    if record is None:
        return None  # no trustworthy record: the run does the full work
    try:
        return SettledRecord(
            fingerprint=str(record["fingerprint"]),
            baseline_commit=str(record["baseline_commit"]),
            next_change_at=None if record["next_change_at"] is None else int(record["next_change_at"]),
            selected=[OutputIdentity(str(thread_id), int(version)) for thread_id, version in record["selected"]],
            storage_bytes=int(record["storage_bytes"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def write_settled_record(root_dir: Path, record: SettledRecord) -> None:
    payload = {
        "version": _SETTLED_VERSION,
        "fingerprint": record.fingerprint,
        "baseline_commit": record.baseline_commit,
        "next_change_at": record.next_change_at,
        "selected": [list(pair) for pair in record.selected],
        "storage_bytes": record.storage_bytes,
    }
    SandboxedFolder(root_dir).write_bytes(_SETTLED_PATH, json.dumps(payload).encode("utf-8"))


def forget_settled_record(root_dir: Path) -> None:
    SandboxedFolder(root_dir).delete(_SETTLED_PATH, missing_ok=True)
