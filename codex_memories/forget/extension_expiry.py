"""Forgetting route 6, extension resource expiry: timestamped resources older than 7 days (spec 6, 7.3).

Contract:
- `expire_extension_resources(root, now)` deletes, for every `extensions/<name>/` that has an
  `instructions.md`, each `resources/*.md` whose name starts with a UTC timestamp
  (`%Y-%m-%dT%H-%M-%S`) older than `now - retention_days`, and returns one `ForgetAction` per
  deleted file, sorted by path. Resources whose names do not start with a timestamp, non-`.md`
  files and folders without `instructions.md` are never touched. `now` must be timezone-aware.
- `prune_old_extension_resources` is the same deletion returning the paths only;
  `resource_timestamp` parses a resource name's timestamp prefix (pure).
- `next_extension_expiry(root)` is the moment the oldest timestamped resource expires: phase 2's
  early finish keeps a settled folder until then (`forget.routes`).

Inputs: a `MemoryRoot` (or a local path), all I/O through it. Side effects: the file deletions
only; the caller (`consolidate.steps.prune_extension_resources`, phase 2, under the global lock)
records the actions. Idempotent: a second call finds nothing expired and returns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from codex_memories.forget.audit import ForgetAction
from codex_memories.paths import EXTENSION_INSTRUCTIONS_FILE, EXTENSION_RESOURCES_DIR, EXTENSIONS_DIR, extension_dir
from codex_memories.state.records import ForgetRoute
from codex_memories.storage import Entry, MemoryRoot, RootLike, open_memory_root

RESOURCE_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"
EXTENSION_RESOURCE_RETENTION_DAYS = 7
# strptime alone would accept one-digit months and days; the resource prefix must be exact.
_RESOURCE_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}")


def expire_extension_resources(
    root: RootLike, now: datetime, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS
) -> list[ForgetAction]:
    """Delete the expired extension resources; one action per file deleted."""
    return expiry_actions(prune_old_extension_resources(root, now, retention_days), retention_days=retention_days)


def expiry_actions(deleted_paths: list[str], *, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS) -> list[ForgetAction]:
    """The actions for extension resources the expiry deleted (pure)."""
    return [
        ForgetAction(
            route=ForgetRoute.extension_expiry,
            target=path,
            reason=f"extension resource older than {retention_days} days",
            removed={"file": path},
        )
        for path in deleted_paths
    ]


def prune_old_extension_resources(
    root: RootLike, now: datetime, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS
) -> list[str]:
    """Delete `extensions/<name>/resources/<timestamp>….md` older than `now - retention_days`.

    Returns the deleted paths, sorted."""
    root = open_memory_root(root)
    expired = expired_extension_resources(root, now, retention_days)
    for path in expired:
        root.delete(path)
    return expired


def expired_extension_resources(
    root: RootLike, now: datetime, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS
) -> list[str]:
    """The resources `prune_old_extension_resources` would delete, sorted; read-only."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    cutoff = now - timedelta(days=retention_days)
    return sorted(
        resource.path
        for resource, created in _timestamped_resources(open_memory_root(root), instructed_only=True)
        if resource.kind == "file" and created < cutoff
    )


def next_extension_expiry(root: RootLike, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS) -> int | None:
    """Epoch seconds at which the oldest timestamped extension resource expires, or None. Every
    `extensions/*/resources/*.md` counts, with or without `instructions.md`: an earlier moment
    only costs one full run."""
    oldest = min((created for _, created in _timestamped_resources(open_memory_root(root), instructed_only=False)), default=None)
    return None if oldest is None else int((oldest + timedelta(days=retention_days)).timestamp())


def _timestamped_resources(root: MemoryRoot, *, instructed_only: bool) -> Iterator[tuple[Entry, datetime]]:
    """Every `extensions/<name>/resources/<timestamp>….md` entry with its time; `instructed_only`:
    only in extensions that have an `instructions.md` (the ones the expiry may delete from)."""
    if not root.is_dir(EXTENSIONS_DIR):
        return
    for extension in root.list_dir(EXTENSIONS_DIR):
        if extension.kind != "dir":
            continue
        base = extension_dir(extension.name)
        if instructed_only and not root.is_file(f"{base}/{EXTENSION_INSTRUCTIONS_FILE}"):
            continue
        resources = f"{base}/{EXTENSION_RESOURCES_DIR}"
        if not root.is_dir(resources):
            continue
        for resource in root.list_dir(resources):
            created = resource_timestamp(resource.name) if resource.name.endswith(".md") else None
            if created is not None:
                yield resource, created


def resource_timestamp(file_name: str) -> datetime | None:
    """The UTC time a resource's name starts with, or None when it does not start with one."""
    prefix = file_name[:19]
    if not _RESOURCE_TIMESTAMP.fullmatch(prefix):
        return None
    try:
        return datetime.strptime(prefix, RESOURCE_TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None
