"""The rate-limit guard between extraction waves (spec 1.3), cheap enough for the path that gates
the next submission.

Every freed slot asks the guard before the next claim is sent. Asked the full way each time, it
rescans the newest rollout files for Codex's rate-limit snapshot, and as a Prefect task it also
pays a task run (both measured on that path: benchmarks/phase1_efficiency.py). Within one batch
our own last response's headers are the live signal; the rollout snapshot is re-read only when
the one in hand is older than `ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS` ("no snapshot in the rollouts"
counts as one in hand: it used to mean a rescan at every freed slot). The one in hand at the start
is what the guard before the batch (step 6a) decided on, which had just scanned the rollouts
(py-spy of `codex-memories phase1` on 64 sessions: the rescans were 0.9 s of the extraction
window; benchmarks/README.md "Phase-1 efficiency").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from codex_memories.ingest.rate_limits import newest_rollout_snapshot
from codex_memories.llm.rate_limits import GuardDecision, RateLimitSnapshot

ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS = 10.0


class WaveGuard:
    """`before_batch` is the decision of the full guard run just before this batch, if any: its
    snapshot (the freshest current signal then, rollout or our own headers) stands in for the
    rollout scan until it is `ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS` old. Standing in for it with our
    own headers is safe: the provider's live headers are at least as fresh and the freshest
    decides. `decide` is the full guard given a rollout snapshot (`runtime.rate_limit_decision`
    with the run's settings): it reads our provider's own headers, which only the run knows."""

    def __init__(
        self,
        codex_home: Path,
        decide: Callable[[RateLimitSnapshot | None], GuardDecision],
        *,
        before_batch: GuardDecision | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._codex_home = codex_home
        self._decide = decide
        self._clock = clock
        self._snapshot: RateLimitSnapshot | None = None
        self._read_at: float | None = None
        if before_batch is not None:
            self._snapshot, self._read_at = before_batch.snapshot, clock()

    def check(self) -> GuardDecision:
        now = self._clock()
        if self._read_at is None or now - self._read_at > ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS:
            self._snapshot = newest_rollout_snapshot(self._codex_home)
            self._read_at = now
        return self._decide(self._snapshot)
