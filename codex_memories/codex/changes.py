"""What install and uninstall share when they change a Codex home: the report of what changed, the
backup of a file before it is replaced, and the error that stops a change before anything is
written.

Contract:
- `ChangeReport`: what `install` / `uninstall` did (or, with `dry_run`, would do), one line each,
  then the notes; the backups of `hooks.json` and `config.toml` it made.
- `backup_file(path)` copies an existing file to `<name>.bak-<UTC timestamp>` beside it.
- `CodexHomeError`: a Codex home we must not write (unreadable or malformed hooks.json or
  config.toml, a failed `codex mcp`): raised before any write.
- `current_text(path)`: a file of the Codex home as it is now, None when there is none; a file
  that cannot be read is a `CodexHomeError`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

BACKUP_SUFFIX = ".bak-"


class CodexHomeError(RuntimeError):
    """A Codex home we must not write (unreadable or malformed hooks.json, failed `codex mcp`)."""


def current_text(path: Path) -> str | None:
    """The file's text, None when it does not exist; unreadable is a `CodexHomeError`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise CodexHomeError(f"cannot read {path}: {error}") from error


@dataclass
class ChangeReport:
    """What install / uninstall did (or, with dry_run, would do)."""

    dry_run: bool
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None  # of hooks.json
    config_backup: Path | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def lines(self) -> list[str]:
        prefix = "would " if self.dry_run else ""
        shown = [f"{prefix}{change}" for change in self.changes] or ["nothing to change"]
        return shown + self.notes


def backup_file(path: Path, now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}{BACKUP_SUFFIX}{stamp}")
    shutil.copy2(path, target)
    return target
