"""Fresh memory (issue 35, item 5): a session that ended is in the next session's context within
minutes, driven through the hook console script with a real rollout and a real `codex-memories
run` (offline heuristic provider)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codex_memories.read import fresh
from codex_memories.read.hook_log import HookOptions, HookOutcome, hook_log_path
from tests.support.memory_home import MemoryHome
from tests.support.rollout_factory import DEFAULT_CWD

FACT = "I prefer pnpm over npm in this repo."
HOOK = [sys.executable, "-m", "codex_memories.read.hooks"]
FIVE_MINUTES = 300.0


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    home = MemoryHome(tmp_path)
    (home.codex_home / "codex-memories.toml").write_text('provider = "heuristic"\nfresh_memory = true\n', encoding="utf-8")
    return home


def hook(home: MemoryHome, event: str, payload: dict[str, object]) -> str:
    """One call of the hook console script, as Codex makes it (no settings of ours in the environment)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))}
    environment["HOME"] = str(home.root / "user-home")
    # As Codex started with CODEX_HOME set: the session's project is found through that home's
    # recorded project keys (scopes.py reads the environment's home, not our flag).
    environment["CODEX_HOME"] = str(home.codex_home)
    command = [*HOOK, event, "--codex-home", str(home.codex_home), "--memory-root", str(home.memory_root), "--db-url", home.db_url]
    done = subprocess.run(command, input=json.dumps(payload), capture_output=True, text=True, env=environment, timeout=60, check=True)
    return done.stdout


def log_lines(home: MemoryHome) -> list[str]:
    path = hook_log_path(home.codex_home)
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def wait_for_log(home: MemoryHome, *words: str, timeout: float = FIVE_MINUTES) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_lines(home):
            if all(word in line for word in words):
                return line
        time.sleep(0.5)
    raise AssertionError(f"no hooks.log line with {words} within {timeout:.0f} s:\n" + "\n".join(log_lines(home)))


def session_start_text(home: MemoryHome) -> str:
    answer = json.loads(hook(home, "SessionStart", {"hook_event_name": "SessionStart", "source": "startup", "cwd": DEFAULT_CWD}))
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


@pytest.mark.timeout(900)
def test_a_session_that_ended_is_in_the_next_session_start(home: MemoryHome, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pass starts its own temporary Prefect server; on a loaded shared machine that took
    # over the 120 s the CLI waits by default. The time it takes is measured, not asserted here.
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "600")
    # Ended a minute ago: far inside phase 1's 6-hour idle window, which a scheduled run waits out.
    thread_id, rollout = home.rollout("Set up the workspace.", FACT, days_ago=1 / 1440)
    assert "pnpm" not in session_start_text(home)

    answer = hook(home, "SessionEnd", {"hook_event_name": "SessionEnd", "session_id": thread_id, "transcript_path": str(rollout), "cwd": DEFAULT_CWD})

    assert json.loads(answer) == {}
    assert f"SessionEnd {HookOutcome.started_fresh_pass.value}" in "\n".join(log_lines(home))
    line = wait_for_log(home, f"Fresh {HookOutcome.fresh_pass_done.value}", "end", timeout=840)
    assert "phase 2" in line, line
    assert "pnpm" in session_start_text(home)

    # The same rollout again (0.171's idle waiter after its SessionEnd): no second pass.
    again = fresh.fresh_pass("idle", rollout, home.codex_home, home.memory_root, idle_seconds=0)
    assert again.outcome is HookOutcome.skipped_already_fresh, again.detail


def test_fresh_memory_off_in_our_settings_passes_nothing(home: MemoryHome) -> None:
    (home.codex_home / "codex-memories.toml").write_text('provider = "heuristic"\nfresh_memory = false\n', encoding="utf-8")
    _, rollout = home.rollout(FACT, days_ago=1 / 1440)

    result = fresh.fresh_pass("end", rollout, home.codex_home, home.memory_root)

    assert result.outcome is HookOutcome.skipped_fresh_memory_off
    assert "fresh_memory is off" in result.detail
    assert not home.memory_root.exists()


def test_fresh_memory_is_opt_in_for_every_provider(home: MemoryHome) -> None:
    assert fresh.fresh_memory_enabled(home.codex_home, home.memory_root) == (True, "fresh_memory = true")
    (home.codex_home / "codex-memories.toml").write_text('provider = "heuristic"\n', encoding="utf-8")
    enabled, why = fresh.fresh_memory_enabled(home.codex_home, home.memory_root)
    assert not enabled and "opt-in" in why


def test_a_second_idle_waiter_for_the_same_session_leaves_at_once(home: MemoryHome) -> None:
    _, rollout = home.rollout(FACT, days_ago=1 / 1440)
    folder = fresh.fresh_dir(home.codex_home)
    folder.mkdir(parents=True)
    with (folder / f"wait-{fresh._rollout_tag(rollout)}.lock").open("w") as first_waiter:
        fcntl.flock(first_waiter, fcntl.LOCK_EX | fcntl.LOCK_NB)
        started = time.monotonic()
        result = fresh.fresh_pass("idle", rollout, home.codex_home, home.memory_root, idle_seconds=3600)
    assert result.outcome is HookOutcome.skipped_fresh_waiter_running
    assert time.monotonic() - started < 30  # it did not wait out the hour


def test_the_idle_wait_lasts_until_the_rollout_has_had_no_newer_turn_for_the_idle_time(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("{}\n", encoding="utf-8")
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 1:  # a newer turn lands while the waiter sleeps
            with rollout.open("a", encoding="utf-8") as file:
                file.write("{}\n")
        else:  # then the session stays quiet: its last change is now long past
            os.utime(rollout, (time.time() - 100, time.time() - 100))

    assert fresh.wait_until_idle(rollout, 50.0, sleep=nap)
    assert len(naps) == 2  # the newer turn restarted the wait
    rollout.unlink()
    assert not fresh.wait_until_idle(rollout, 50.0, sleep=nap)


def test_the_stop_hook_arms_the_idle_waiter_and_answers_at_once(home: MemoryHome) -> None:
    thread_id, rollout = home.rollout("Set up the workspace.", FACT, days_ago=1 / 1440)

    answer = hook(home, "Stop", {"hook_event_name": "Stop", "session_id": thread_id, "transcript_path": str(rollout), "cwd": DEFAULT_CWD})

    assert json.loads(answer) == {}
    armed = wait_for_log(home, f"Fresh {HookOutcome.started_fresh_pass.value}", "idle", timeout=5)
    waiter = int(armed.rsplit("pid ", 1)[1])
    try:
        assert f"Stop {HookOutcome.started_background_harvest.value}" in "\n".join(log_lines(home))
        os.kill(waiter, 0)  # alive: waiting out the idle time, not passing a session still in use
    finally:
        os.kill(waiter, signal.SIGTERM)  # the waiter this test started, by its pid


def test_a_session_end_without_a_transcript_starts_nothing(tmp_path: Path) -> None:
    from codex_memories.read.hooks import handle_hook

    options = HookOptions(codex_home=tmp_path, memory_root=tmp_path / "memories")
    result = handle_hook("SessionEnd", json.dumps({"hook_event_name": "SessionEnd"}), options)
    assert result.outcome is HookOutcome.skipped_no_transcript
    assert result.stdout == "{}"
