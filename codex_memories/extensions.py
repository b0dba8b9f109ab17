"""Persistent (non-expiring) memory-extension resources (spec 7.4).

A producer (an importer, another tool) owns `extensions/<name>/`: its `instructions.md`, the
resources it lists and `manifest.json`, which remembers which files it wrote.

Contract:
- `sync_persistent_extension_resources(root_dir, name, instructions, resources)` writes
  `instructions.md` when its bytes differ, writes each resource to `resources/<target_file_name>`
  when its bytes differ, deletes the files listed in the previous manifest that are no longer
  wanted (forgetting route 6: the next phase-2 diff shows them as `D`), never touches files it
  did not list, and rewrites `manifest.json` (pretty JSON, `{"version": 1, "resources":
  {"<source_id>": {"targetFileName": …, "contentSha256": …}}}` and a newline) when it differs.
  Returns the relative paths written and removed and the number of resources left unchanged.
  The caller must hold the phase-2 lock (the only writer of the memory folder).
- `persistent_extension_needs_sync(...)` is true when the extension folder is missing (and there
  are resources), the instructions differ, the manifest is missing, unreadable, of another
  version or different, or any resource file differs. Reads only.
- Inputs are validated first (`InvalidExtensionInput`): the name and every target file name are
  one path component, target names end in `.md`, source ids are non-empty, ids and targets are
  unique. A symlink on the way (extension folder, `resources/`, a target) is refused.
- Like every writer into the memory folder, text goes through `redact_secrets` first; the
  comparisons use the redacted text, so a second sync with the same inputs writes nothing.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.redact import redact_secrets

MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1
RESOURCE_SUFFIX = ".md"


class InvalidExtensionInput(ValueError):
    """A name, source id or target file name breaks the extension folder contract."""


@dataclass(frozen=True)
class PersistentResource:
    source_id: str  # stable identity of the source, to detect updates and removals
    target_file_name: str  # flat Markdown file name under the extension's resources/
    content_sha256: str  # hash of the original source content (recorded in the manifest)
    content: str  # the complete text to write


@dataclass
class PersistentSyncResult:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def persistent_extension_needs_sync(
    root_dir: Path, name: str, instructions: str, resources: Sequence[PersistentResource]
) -> bool:
    _validate(name, resources)
    extension = Path(root_dir) / paths.extension_dir(name)
    if not os.path.lexists(extension):
        return bool(resources)
    _require_real_dir(extension)
    if _read_optional(extension / paths.EXTENSION_INSTRUCTIONS_FILE) != redact_secrets(instructions):
        return True
    manifest = _read_manifest(extension)
    if manifest is None or manifest != _desired_manifest(resources):
        return True
    resources_dir = extension / paths.EXTENSION_RESOURCES_DIR
    return any(
        _read_optional(resources_dir / resource.target_file_name) != redact_secrets(resource.content)
        for resource in resources
    )


def sync_persistent_extension_resources(
    root_dir: Path, name: str, instructions: str, resources: Sequence[PersistentResource]
) -> PersistentSyncResult:
    _validate(name, resources)
    root_dir = Path(root_dir)
    extension = _make_real_dir(root_dir, paths.extension_dir(name))
    resources_dir = _make_real_dir(root_dir, paths.extension_resources_dir(name))
    _write_if_changed(extension / paths.EXTENSION_INSTRUCTIONS_FILE, redact_secrets(instructions))

    previous = _read_manifest(extension) or {"resources": {}}
    wanted = {resource.target_file_name for resource in resources}
    result = PersistentSyncResult()
    for resource in resources:
        relative = f"{paths.extension_resources_dir(name)}/{resource.target_file_name}"
        if _write_if_changed(resources_dir / resource.target_file_name, redact_secrets(resource.content)):
            result.written.append(relative)
        else:
            result.unchanged += 1
    for entry in _previous_entries(previous):
        target_name = entry.get("targetFileName")
        if not isinstance(target_name, str) or target_name in wanted or not _is_flat_name(target_name):
            continue
        target = resources_dir / target_name
        if os.path.lexists(target):
            target.unlink()
            result.removed.append(f"{paths.extension_resources_dir(name)}/{target_name}")
    rendered = json.dumps(_desired_manifest(resources), indent=2) + "\n"
    _write_if_changed(extension / MANIFEST_FILE, rendered)
    return result


def _desired_manifest(resources: Sequence[PersistentResource]) -> dict[str, Any]:
    return {
        "version": MANIFEST_VERSION,
        "resources": {
            resource.source_id: {"targetFileName": resource.target_file_name, "contentSha256": resource.content_sha256}
            for resource in sorted(resources, key=lambda resource: resource.source_id)
        },
    }


def _read_manifest(extension: Path) -> dict[str, Any] | None:
    """The previous manifest, or None when it is missing, unreadable or of another version."""
    raw = _read_optional(extension / MANIFEST_FILE)
    if raw is None:
        return None
    try:
        manifest = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return None
    if not isinstance(manifest.get("resources"), dict):
        return None
    return manifest


def _previous_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [entry for entry in manifest.get("resources", {}).values() if isinstance(entry, dict)]


def _validate(name: str, resources: Sequence[PersistentResource]) -> None:
    if not _is_flat_name(name):
        raise InvalidExtensionInput(f"extension name {name!r} must be one path component")
    source_ids: set[str] = set()
    targets: set[str] = set()
    for resource in resources:
        if not resource.source_id:
            raise InvalidExtensionInput("a resource source_id is empty")
        if not _is_flat_name(resource.target_file_name):
            raise InvalidExtensionInput(f"resource target {resource.target_file_name!r} must be one path component")
        if not resource.target_file_name.endswith(RESOURCE_SUFFIX):
            raise InvalidExtensionInput(f"resource target {resource.target_file_name!r} must end with {RESOURCE_SUFFIX}")
        if resource.source_id in source_ids:
            raise InvalidExtensionInput(f"source_id {resource.source_id!r} is listed twice")
        if resource.target_file_name in targets:
            raise InvalidExtensionInput(f"target {resource.target_file_name!r} is listed twice")
        source_ids.add(resource.source_id)
        targets.add(resource.target_file_name)


def _is_flat_name(value: str) -> bool:
    return bool(value) and value not in (".", "..") and "/" not in value and "\\" not in value and "\x00" not in value


def _make_real_dir(root_dir: Path, relative: str) -> Path:
    current = root_dir
    current.mkdir(parents=True, exist_ok=True)
    for component in relative.split("/"):
        current = current / component
        if not os.path.lexists(current):
            current.mkdir(exist_ok=True)
        _require_real_dir(current)
    return current


def _require_real_dir(path: Path) -> None:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        raise InvalidExtensionInput(f"{path} is a symlink or not a directory")


def _read_optional(path: Path) -> str | None:
    if os.path.islink(path):
        raise InvalidExtensionInput(f"{path} is a symlink")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return None  # not text we wrote: it differs, and a sync rewrites it


def _write_if_changed(path: Path, text: str) -> bool:
    if _read_optional(path) == text:
        return False
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return True
