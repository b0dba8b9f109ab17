"""The rate-limit guard (spec 1.3), for every provider: stop spending the user's quota when little
of it is left.

Signals, the freshest one wins (`decide`):
1. the headers of our own last model response (`openai`: `x-ratelimit-limit/remaining-requests`
   and `-tokens`; any provider whose server sends Codex's `x-codex-primary-*` / `-secondary-*`
   headers: those), kept by the provider (`last_rate_limits()`);
2. what Codex reports for our own calls (`codex`): nothing, measured on 0.147 and 0.171 —
   `codex exec --json` prints no rate limits and `--ephemeral` writes no rollout, so the codex
   provider has no signal of its own and the user's rollouts are what we read;
3. the `rate_limits` of the newest `token_count` event in the user's rollouts
   (`newest_rollout_snapshot`), while its windows have not reset (`resets_at`).

A window whose `resets_at` has passed no longer limits anything; a snapshot with no live window
left is ignored. `snapshot_allows` is the spec's boundary: allow iff every live window has
`used_percent <= 100 - clamp(min_remaining_percent, 0, 100)`, and deny when Codex says a limit
was reached. No signal at all allows (as Codex does).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.ingest.rollout_files import PLAIN_SUFFIX, list_rollouts, open_rollout

SOURCE_RESPONSE_HEADERS = "response headers of our last model call"
SOURCE_ROLLOUT = "newest token_count in the user's rollouts"

# How much of a rollout's end is read for its newest token_count (they come after every turn).
_TAIL_BYTES = 256 * 1024
_MAX_ROLLOUTS_SCANNED = 20


@dataclass(frozen=True)
class RateLimitWindow:
    name: str
    used_percent: float
    window_minutes: int | None = None
    resets_at: float | None = None  # epoch seconds

    def is_live(self, now: float) -> bool:
        return self.resets_at is None or self.resets_at > now


@dataclass(frozen=True)
class RateLimitSnapshot:
    source: str
    observed_at: float  # epoch seconds
    windows: tuple[RateLimitWindow, ...] = ()
    limit_reached: str | None = None
    detail: str = ""

    def live_windows(self, now: float) -> tuple[RateLimitWindow, ...]:
        return tuple(window for window in self.windows if window.is_live(now))

    def is_current(self, now: float) -> bool:
        return bool(self.live_windows(now)) or (self.limit_reached is not None and not self.windows)


@dataclass(frozen=True)
class GuardDecision:
    allowed: bool
    reason: str
    min_remaining_percent: int
    snapshot: RateLimitSnapshot | None = None
    window: RateLimitWindow | None = None
    considered: tuple[str, ...] = field(default_factory=tuple)

    @property
    def figure(self) -> str:
        """The number acted on, e.g. `primary 90.0% used (10.0% left, minimum 25%)`."""
        if self.window is None:
            return self.reason
        left = 100.0 - self.window.used_percent
        return f"{self.window.name} {self.window.used_percent:.1f}% used ({left:.1f}% left, minimum {self.min_remaining_percent}%)"


def max_used_percent(min_remaining_percent: int) -> float:
    return 100.0 - max(0, min(100, min_remaining_percent))


def snapshot_allows(snapshot: RateLimitSnapshot, min_remaining_percent: int, now: float) -> tuple[bool, RateLimitWindow | None]:
    """Spec 1.3: deny when a limit was reached; else allow iff every live window's
    `used_percent <= 100 - min_remaining` (a missing or reset window counts as OK). Returns the
    window that decided (the most used live one)."""
    live = sorted(snapshot.live_windows(now), key=lambda window: window.used_percent, reverse=True)
    worst = live[0] if live else None
    if snapshot.limit_reached:
        return False, worst
    if worst is None:
        return True, None
    return worst.used_percent <= max_used_percent(min_remaining_percent), worst


def decide(snapshots: Iterable[RateLimitSnapshot | None], min_remaining_percent: int, now: float) -> GuardDecision:
    """The freshest current snapshot decides; none at all allows."""
    current = [snapshot for snapshot in snapshots if snapshot is not None and snapshot.is_current(now)]
    considered = tuple(f"{snapshot.source} @ {int(snapshot.observed_at)}" for snapshot in current)
    if not current:
        return GuardDecision(True, "no current rate-limit signal", min_remaining_percent, considered=considered)
    freshest = max(current, key=lambda snapshot: snapshot.observed_at)
    allowed, window = snapshot_allows(freshest, min_remaining_percent, now)
    decision = GuardDecision(allowed, "", min_remaining_percent, freshest, window, considered)
    if freshest.limit_reached and not allowed:
        why = f"rate limit reached ({freshest.limit_reached}) per {freshest.source}"
    else:
        verdict = "below" if not allowed else "within"
        why = f"{decision.figure}: {verdict} the limit, per {freshest.source}"
    return replace(decision, reason=why)


# -- signals ----------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset_duration(text: str | None) -> float | None:
    """OpenAI's `x-ratelimit-reset-*` values: `6m0s`, `1s`, `20ms`, `1h2m3.5s`."""
    if not text:
        return None
    parts = _DURATION_PART.findall(text.strip())
    if not parts:
        return _number(text)
    unit_seconds = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(amount) * unit_seconds[unit] for amount, unit in parts)


def snapshot_from_headers(headers: Mapping[str, str], observed_at: float) -> RateLimitSnapshot | None:
    """Codex's `x-codex-{primary,secondary}-*` headers if present, else OpenAI's
    `x-ratelimit-*` pairs (requests and tokens, used = 100 * (1 - remaining / limit))."""
    lowered = {str(key).lower(): str(value) for key, value in headers.items()}
    windows: list[RateLimitWindow] = []
    for name in ("primary", "secondary"):
        used = _number(lowered.get(f"x-codex-{name}-used-percent"))
        if used is None:
            continue
        reset_at = _number(lowered.get(f"x-codex-{name}-reset-at"))
        if reset_at is None:
            after = _number(lowered.get(f"x-codex-{name}-reset-after-seconds"))
            reset_at = observed_at + after if after is not None else None
        minutes = _number(lowered.get(f"x-codex-{name}-window-minutes"))
        windows.append(RateLimitWindow(name, used, int(minutes) if minutes is not None else None, reset_at))
    if not windows:
        for name in ("requests", "tokens"):
            limit = _number(lowered.get(f"x-ratelimit-limit-{name}"))
            remaining = _number(lowered.get(f"x-ratelimit-remaining-{name}"))
            if limit is None or remaining is None or limit <= 0:
                continue
            used = max(0.0, min(100.0, 100.0 * (1.0 - remaining / limit)))
            after = parse_reset_duration(lowered.get(f"x-ratelimit-reset-{name}"))
            windows.append(RateLimitWindow(name, used, None, observed_at + after if after is not None else None))
    if not windows:
        return None
    return RateLimitSnapshot(SOURCE_RESPONSE_HEADERS, observed_at, tuple(windows))


def snapshot_from_rate_limits(payload: Any, observed_at: float, source: str = SOURCE_ROLLOUT) -> RateLimitSnapshot | None:
    """A rollout `token_count` event's `rate_limits` object (None when it carries no window)."""
    if not isinstance(payload, dict):
        return None
    windows = []
    for name in ("primary", "secondary"):
        window = payload.get(name)
        if not isinstance(window, dict):
            continue
        used = _number(window.get("used_percent"))
        if used is None:
            continue
        minutes = _number(window.get("window_minutes"))
        windows.append(RateLimitWindow(name, used, int(minutes) if minutes is not None else None, _number(window.get("resets_at"))))
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
