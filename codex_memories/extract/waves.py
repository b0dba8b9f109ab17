"""The rate-limit guard between extraction waves (spec 1.3), cheap enough for the path that gates
the next submission.

Every freed slot asks the guard before the next claim is sent. Asked the full way each time, it
rescans the newest rollout files for Codex's rate-limit snapshot, and as a Prefect task it also
pays a task run (both measured on that path: benchmarks/phase1_efficiency.py). Within one batch
our own last response's headers are the live signal; the rollout snapshot is re-read only when
the one in hand is older than `ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from codex_memories.ratelimit import GuardDecision, RateLimitSnapshot, newest_rollout_snapshot
from codex_memories.runtime import rate_limit_guard
from codex_memories.settings import RuntimeConfig

ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS = 10.0


class WaveGuard:
    def __init__(self, config: RuntimeConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._snapshot: RateLimitSnapshot | None = None
        self._read_at: float | None = None

    def check(self) -> GuardDecision:
        now = self._clock()
        if self._read_at is None or now - self._read_at > ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS:
            self._snapshot = newest_rollout_snapshot(self._config.settings.codex_home_path)
            self._read_at = now
        return rate_limit_guard(self._config, rollout_snapshot=self._snapshot)
