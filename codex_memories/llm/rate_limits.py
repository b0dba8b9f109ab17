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
   (`ingest.rate_limits.newest_rollout_snapshot`), while its windows have not reset (`resets_at`).

A window whose `resets_at` has passed no longer limits anything; a snapshot with no live window
left is ignored. `snapshot_allows` is the spec's boundary: allow iff every live window has
`used_percent <= 100 - clamp(min_remaining_percent, 0, 100)`, and deny when Codex says a limit
was reached. No signal at all allows (as Codex does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

SOURCE_RESPONSE_HEADERS = "response headers of our last model call"
SOURCE_ROLLOUT = "newest token_count in the user's rollouts"


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


def as_number(value: Any) -> float | None:
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
        return as_number(text)
    unit_seconds = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(amount) * unit_seconds[unit] for amount, unit in parts)


def snapshot_from_headers(headers: Mapping[str, str], observed_at: float) -> RateLimitSnapshot | None:
    """Codex's `x-codex-{primary,secondary}-*` headers if present, else OpenAI's
    `x-ratelimit-*` pairs (requests and tokens, used = 100 * (1 - remaining / limit))."""
    lowered = {str(key).lower(): str(value) for key, value in headers.items()}
    windows: list[RateLimitWindow] = []
    for name in ("primary", "secondary"):
        used = as_number(lowered.get(f"x-codex-{name}-used-percent"))
        if used is None:
            continue
        reset_at = as_number(lowered.get(f"x-codex-{name}-reset-at"))
        if reset_at is None:
            after = as_number(lowered.get(f"x-codex-{name}-reset-after-seconds"))
            reset_at = observed_at + after if after is not None else None
        minutes = as_number(lowered.get(f"x-codex-{name}-window-minutes"))
        windows.append(RateLimitWindow(name, used, int(minutes) if minutes is not None else None, reset_at))
    if not windows:
        for name in ("requests", "tokens"):
            limit = as_number(lowered.get(f"x-ratelimit-limit-{name}"))
            remaining = as_number(lowered.get(f"x-ratelimit-remaining-{name}"))
            if limit is None or remaining is None or limit <= 0:
                continue
            used = max(0.0, min(100.0, 100.0 * (1.0 - remaining / limit)))
            after = parse_reset_duration(lowered.get(f"x-ratelimit-reset-{name}"))
            windows.append(RateLimitWindow(name, used, None, observed_at + after if after is not None else None))
    if not windows:
        return None
    return RateLimitSnapshot(SOURCE_RESPONSE_HEADERS, observed_at, tuple(windows))
