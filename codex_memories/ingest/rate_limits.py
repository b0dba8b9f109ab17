"""The rate limits Codex recorded in the user's rollouts: the `rate_limits` of the newest
`token_count` event (signal 3 of the guard in `llm.rate_limits`), read from the end of the most
recently modified plain rollouts."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.ingest.rollout_files import PLAIN_SUFFIX, list_rollouts, open_rollout
from codex_memories.llm.rate_limits import SOURCE_ROLLOUT, RateLimitSnapshot, RateLimitWindow, as_number

# How much of a rollout's end is read for its newest token_count (they come after every turn).
_TAIL_BYTES = 256 * 1024
_MAX_ROLLOUTS_SCANNED = 20


def snapshot_from_rate_limits(payload: Any, observed_at: float, source: str = SOURCE_ROLLOUT) -> RateLimitSnapshot | None:
    """A rollout `token_count` event's `rate_limits` object (None when it carries no window)."""
    if not isinstance(payload, dict):
        return None
    windows = []
    for name in ("primary", "secondary"):
        window = payload.get(name)
        if not isinstance(window, dict):
            continue
        used = as_number(window.get("used_percent"))
        if used is None:
            continue
        minutes = as_number(window.get("window_minutes"))
        windows.append(RateLimitWindow(name, used, int(minutes) if minutes is not None else None, as_number(window.get("resets_at"))))
    reached = payload.get("rate_limit_reached_type")
    reached_text = str(reached) if reached not in (None, "", False) else None
    if not windows and reached_text is None:
        return None
    limit_id = payload.get("limit_id")
    return RateLimitSnapshot(source, observed_at, tuple(windows), reached_text, f"limit_id={limit_id}" if limit_id else "")


def _timestamp(value: Any, fallback: float) -> float:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return fallback
    return fallback


def rollout_snapshot(path: Path) -> RateLimitSnapshot | None:
    """The newest `token_count` with rate limits in one plain rollout (its last `_TAIL_BYTES`).
    A file that cannot be read as a rollout (`rollout_files.open_rollout`) is no signal."""
    try:
        with open_rollout(path, sequential=False) as handle:
            status = os.fstat(handle.fileno())
            handle.seek(max(0, status.st_size - _TAIL_BYTES))
            tail = handle.read(_TAIL_BYTES)
    except OSError:
        return None
    fallback = status.st_mtime
    for raw in reversed(tail.splitlines()):
        if b"token_count" not in raw or b"rate_limits" not in raw:
            continue
        try:
            line = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        payload = line.get("payload") if isinstance(line, dict) else None
        if not isinstance(payload, dict) or payload.get("type") != "token_count":
            continue
        snapshot = snapshot_from_rate_limits(payload.get("rate_limits"), _timestamp(line.get("timestamp"), fallback))
        if snapshot is not None:
            return replace(snapshot, detail=f"{path.name}" + (f", {snapshot.detail}" if snapshot.detail else ""))
    return None


def newest_rollout_snapshot(codex_home: Path, *, max_files: int = _MAX_ROLLOUTS_SCANNED) -> RateLimitSnapshot | None:
    """The newest rate-limit snapshot among the most recently modified plain rollouts (the regular
    files `rollout_files.list_rollouts` lists; Codex compresses only old sessions)."""
    candidates: list[tuple[int, Path]] = []
    for folder in (paths.SESSIONS_DIR, paths.ARCHIVED_SESSIONS_DIR):
        listing = list_rollouts(codex_home / folder, suffixes=(PLAIN_SUFFIX,))
        candidates += [(rollout.mtime_ns, rollout.path) for rollout in listing.rollouts]
    candidates.sort(reverse=True)
    found = [snapshot for _, path in candidates[:max_files] if (snapshot := rollout_snapshot(path)) is not None]
    return max(found, key=lambda snapshot: snapshot.observed_at) if found else None
