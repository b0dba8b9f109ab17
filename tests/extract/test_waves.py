"""The guard between extraction waves: it starts from the decision taken before the batch and
rescans the rollouts only once that is `ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS` old, also when the
rollouts hold no snapshot at all (which used to mean a rescan at every freed slot)."""

from __future__ import annotations

import time
from functools import partial

from codex_memories.extract import waves
from codex_memories.extract.waves import ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS, WaveGuard
from codex_memories.llm.rate_limits import GuardDecision, RateLimitSnapshot, RateLimitWindow
from codex_memories.runtime import rate_limit_decision
from codex_memories.settings import load_runtime_config


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _guard(tmp_path, **options):
    config = load_runtime_config(codex_home=str(tmp_path), provider="openai", base_url="http://127.0.0.1:9/v1")
    return WaveGuard(tmp_path, partial(rate_limit_decision, config), **options)


def test_no_snapshot_in_the_rollouts_is_read_once_per_max_age_not_per_freed_slot(tmp_path, monkeypatch):
    scans = []
    monkeypatch.setattr(waves, "newest_rollout_snapshot", lambda home: scans.append(home))
    clock = Clock()
    guard = _guard(tmp_path, clock=clock)
    for _ in range(20):
        assert guard.check().allowed
    assert len(scans) == 1
    clock.now += ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS + 1
    guard.check()
    assert len(scans) == 2


def test_the_decision_before_the_batch_stands_in_for_the_first_scan_and_still_blocks(tmp_path, monkeypatch):
    scans = []
    monkeypatch.setattr(waves, "newest_rollout_snapshot", lambda home: scans.append(home))
    now = time.time()
    exhausted = RateLimitSnapshot(
        source="rollout", observed_at=now, windows=(RateLimitWindow(name="primary", used_percent=99.0, resets_at=now + 3600),)
    )
    before = GuardDecision(False, "below the limit", 25, snapshot=exhausted)
    clock = Clock()
    guard = _guard(tmp_path, before_batch=before, clock=clock)
    decision = guard.check()
    assert not decision.allowed  # the snapshot step 6a saw still decides
    assert scans == []
    clock.now += ROLLOUT_SNAPSHOT_MAX_AGE_SECONDS + 1
    assert guard.check().allowed  # rescanned: the rollouts no longer hold it
    assert len(scans) == 1
