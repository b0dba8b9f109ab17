"""The rate-limit guard's pure decision (spec 1.3, scenarios 41-44) and its signal parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_memories.ingest.rate_limits import newest_rollout_snapshot, snapshot_from_rate_limits
from codex_memories.llm.rate_limits import (
    SOURCE_RESPONSE_HEADERS,
    SOURCE_ROLLOUT,
    RateLimitSnapshot,
    RateLimitWindow,
    decide,
    parse_reset_duration,
    snapshot_allows,
    snapshot_from_headers,
)
from tests.support.hostile_files import NOT_A_FILE_KINDS, plant

NOW = 1_800_000_000.0
LATER = NOW + 3600


def snap(primary: float | None, secondary: float | None = None, *, reached: str | None = None, at: float = NOW, resets: float = LATER, source: str = SOURCE_ROLLOUT) -> RateLimitSnapshot:
    windows = tuple(
        RateLimitWindow(name, used, 300, resets) for name, used in (("primary", primary), ("secondary", secondary)) if used is not None
    )
    return RateLimitSnapshot(source, at, windows, reached)


@pytest.mark.parametrize(
    ("primary", "secondary", "minimum", "allowed"),
    [
        (89.9, 50.0, 10, True),  # scenario 41
        (89.9, 50.0, 11, False),
        (75.1, 10.0, 25, False),  # scenario 42
        (10.0, 75.1, 25, False),
        (74.9, 74.9, 25, True),
        (75.0, 10.0, 25, True),  # the inclusive boundary: used <= 100 - min
        (100.0, None, 0, True),  # min 0: anything up to 100 % used
        (0.1, None, 100, False),  # min 100: nothing may be used
        (0.0, None, 100, True),
        (50.0, None, 101, False),  # clamped to 100
        (99.0, None, -1, True),  # clamped to 0
        (None, None, 25, True),  # no window: OK
        (None, 80.0, 25, False),  # a missing primary counts as OK, the secondary decides
    ],
)
def test_snapshot_allows_iff_every_window_is_within_the_limit(primary, secondary, minimum, allowed):
    assert snapshot_allows(snap(primary, secondary), minimum, NOW)[0] is allowed


def test_a_reached_limit_denies_whatever_the_windows_say():  # scenario 43
    assert snapshot_allows(snap(10.0, 10.0, reached="primary"), 25, NOW)[0] is False


def test_a_window_that_has_reset_no_longer_limits():
    stale = snap(95.0, resets=NOW - 1)
    assert snapshot_allows(stale, 25, NOW) == (True, None)
    decision = decide([stale], 25, NOW)
    assert decision.allowed and decision.snapshot is None  # not current: ignored entirely


def test_no_signal_allows():  # scenario 44: no auth / fetch error -> proceed
    decision = decide([None, None], 25, NOW)
    assert decision.allowed and decision.reason == "no current rate-limit signal"


@pytest.mark.parametrize(
    ("older", "newer", "allowed"),
    [
        (snap(10.0, at=NOW - 60), snap(90.0, at=NOW - 1, source=SOURCE_RESPONSE_HEADERS), False),
        (snap(90.0, at=NOW - 60), snap(10.0, at=NOW - 1, source=SOURCE_RESPONSE_HEADERS), True),
        (snap(90.0, at=NOW - 1), snap(10.0, at=NOW - 60, source=SOURCE_RESPONSE_HEADERS), False),
    ],
)
def test_the_freshest_signal_wins(older, newer, allowed):
    decision = decide([older, newer], 25, NOW)
    assert decision.allowed is allowed
    assert decision.snapshot is max(older, newer, key=lambda s: s.observed_at)


def test_the_decision_names_the_figure_it_acted_on():
    decision = decide([snap(90.0, 40.0)], 25, NOW)
    assert not decision.allowed
    assert decision.figure == "primary 90.0% used (10.0% left, minimum 25%)"
    assert decision.reason.startswith("primary 90.0% used (10.0% left, minimum 25%): below the limit, per newest token_count")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("6m0s", 360.0), ("1s", 1.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("17", 17.0), (None, None), ("soon", None)],
)
def test_openai_reset_durations(text, seconds):
    assert parse_reset_duration(text) == seconds


def test_openai_headers_become_requests_and_tokens_windows():
    headers = {
        "X-RateLimit-Limit-Requests": "100",
        "x-ratelimit-remaining-requests": "10",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "900",
        "x-ratelimit-reset-requests": "6m0s",
    }
    snapshot = snapshot_from_headers(headers, NOW)
    assert snapshot is not None and snapshot.source == SOURCE_RESPONSE_HEADERS
    requests, tokens = snapshot.windows
    assert (requests.name, requests.used_percent, requests.resets_at) == ("requests", 90.0, NOW + 360)
    assert (tokens.name, round(tokens.used_percent, 6), tokens.resets_at) == ("tokens", 10.0, None)
    assert decide([snapshot], 25, NOW).allowed is False


def test_codex_headers_win_over_openai_ones_and_missing_headers_give_no_signal():
    headers = {"x-codex-primary-used-percent": "80", "x-codex-primary-reset-after-seconds": "60", "x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "100"}
    snapshot = snapshot_from_headers(headers, NOW)
    assert [(w.name, w.used_percent, w.resets_at) for w in snapshot.windows] == [("primary", 80.0, NOW + 60)]
    assert snapshot_from_headers({"content-type": "text/event-stream"}, NOW) is None
    assert snapshot_from_headers({"x-ratelimit-limit-requests": "0", "x-ratelimit-remaining-requests": "0"}, NOW) is None


def test_rollout_rate_limits_as_codex_writes_them():
    payload = {"limit_id": "codex", "primary": {"used_percent": 90.0, "window_minutes": 300, "resets_at": LATER}, "secondary": None, "credits": None, "plan_type": None, "rate_limit_reached_type": None}
    snapshot = snapshot_from_rate_limits(payload, NOW)
    assert [(w.name, w.used_percent, w.window_minutes) for w in snapshot.windows] == [("primary", 90.0, 300)]
    assert snapshot_from_rate_limits({"primary": None, "secondary": None}, NOW) is None
    assert snapshot_from_rate_limits(None, NOW) is None


def _token_count(timestamp: str, rate_limits: object) -> str:
    return json.dumps({"timestamp": timestamp, "type": "event_msg", "payload": {"type": "token_count", "info": None, "rate_limits": rate_limits}})


def test_the_newest_token_count_of_the_newest_rollouts_is_read(tmp_path: Path):
    folder = tmp_path / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True)
    window = lambda used: {"primary": {"used_percent": used, "window_minutes": 300, "resets_at": LATER}}  # noqa: E731
    (folder / "rollout-a.jsonl").write_text(
        "\n".join([_token_count("2026-12-01T09:00:00.000Z", window(20.0)), _token_count("2026-12-01T09:05:00.000Z", window(91.5)), "{not json", _token_count("2026-12-01T09:06:00.000Z", None)]) + "\n"
    )
    (folder / "rollout-b.jsonl").write_text(_token_count("2026-12-01T08:00:00.000Z", window(5.0)) + "\n")
    snapshot = newest_rollout_snapshot(tmp_path)
    assert snapshot is not None and snapshot.windows[0].used_percent == 91.5
    assert "rollout-a.jsonl" in snapshot.detail
    assert newest_rollout_snapshot(tmp_path / "missing") is None


@pytest.mark.timeout(120)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(NOT_A_FILE_KINDS), min_size=1, max_size=5), garbage_tail=st.binary(max_size=300))
def test_the_guard_reads_its_signal_beside_any_entry_named_like_a_rollout(tmp_path_factory, kinds: list[str], garbage_tail: bytes):
    """Issue 29: a FIFO named like a rollout hung the guard for good, a symlink to /dev/zero ate
    memory until MemoryError. Newer than the real rollout, they are the first ones it looks at."""
    home = tmp_path_factory.mktemp("home")
    folder = home / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True)
    window = {"primary": {"used_percent": 42.0, "window_minutes": 300, "resets_at": LATER}}
    (folder / "rollout-a.jsonl").write_bytes(_token_count("2026-12-01T09:00:00.000Z", window).encode() + b"\n" + garbage_tail)
    for number, kind in enumerate(kinds):
        plant(kind, folder / f"rollout-z{number}.jsonl")
    snapshot = newest_rollout_snapshot(home)
    assert snapshot is not None and snapshot.windows[0].used_percent == 42.0
