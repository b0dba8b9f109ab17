"""A crash never pays twice: `codex-memories phase1` killed (SIGKILL) with 24 extractions in
flight, half of them answered, then rerun after the leases expired. Counted on the model server:
every session whose answer had arrived is requested exactly once over both runs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from codex_memories.outcomes import Outcome
from codex_memories.runtime import close_stores
from codex_memories.settings import SettingsOverrides
from codex_memories.state.store import MemoryStore
from codex_memories_flows.phase1 import phase1
from tests.support.openai_server import RecordedRequest, ScriptedReply, default_handler, running_openai_server
from tests.support.rollout_factory import write_rollout

# Two flow runs, one in a fresh CLI process that starts its own Prefect server: slow on a busy machine.
pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness"), pytest.mark.timeout(900)]

SESSIONS = 24
ANSWERED_BEFORE_THE_KILL = 12
LEASE_SECONDS = 10  # the smallest lease the settings allow
_ROLLOUT_THREAD = re.compile(r"rollout-[0-9T-]+-([0-9a-f-]{36})\.jsonl")


def _thread_of(request: RecordedRequest) -> str:
    match = _ROLLOUT_THREAD.search(request.input_text)
    assert match, "a stage-1 request names its rollout"
    return match.group(1)


def test_a_killed_run_never_pays_again_for_an_answer_that_arrived(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    home.mkdir()
    (home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    now = datetime.now(UTC)
    for index in range(SESSIONS):
        write_rollout(
            home,
            created_at=now - timedelta(hours=30, minutes=index),
            cwd=f"/home/dana/src/project{index}",
            user_messages=[f"In project {index} always run make check before pushing."],
            tool_calls=[("make check", f"ok {index}", 0)],
        )
    db_url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    memory_root = tmp_path / "memories"

    lock = threading.Lock()
    answered: list[str] = []
    release_hung = threading.Event()

    def first_run(request: RecordedRequest) -> ScriptedReply:
        with lock:
            answer_now = len(answered) < ANSWERED_BEFORE_THE_KILL
            if answer_now:
                answered.append(_thread_of(request))
        if not answer_now:
            release_hung.wait(300)  # in flight until the process is dead
        return default_handler(request)

    with running_openai_server(first_run) as server:
        command = [
            str(Path(sys.executable).with_name("codex-memories")), "phase1",
            "--codex-home", str(home), "--db", db_url, "--memory-root", str(memory_root),
            "--provider", "openai", "--base-url", server.base_url,
            "--concurrency", str(SESSIONS), "--max-rollouts", str(SESSIONS), "--ignore-age-windows",
        ]
        env = {
            **{key: value for key, value in os.environ.items() if not key.startswith("CODEX_MEMORIES_")},
            "CODEX_MEMORIES_STAGE1_LEASE_SECONDS": str(LEASE_SECONDS),
            "OPENAI_API_KEY": "test-key",
        }
        process = subprocess.Popen(command, env=env, cwd=tmp_path, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        store = MemoryStore.open(db_url)
        try:
            deadline = time.monotonic() + 300
            while len([r for r in server.requests if r.endpoint == "responses"]) < SESSIONS:
                assert process.poll() is None, process.stderr.read().decode(errors="replace")[-2000:]
                assert time.monotonic() < deadline, "the run never had every session in flight"
                time.sleep(0.1)
            # The answers reached the client: each is durable before anything else happens.
            while len(store.get_arrived_stage1_results([thread for thread in answered])) < ANSWERED_BEFORE_THE_KILL:
                assert time.monotonic() < deadline, "answers that arrived were not stored"
                time.sleep(0.05)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
            release_hung.set()
        claimed_at = time.monotonic()
        first_requests = Counter(_thread_of(r) for r in server.requests if r.endpoint == "responses")
        assert sum(first_requests.values()) == SESSIONS

        time.sleep(max(0.0, LEASE_SECONDS + 1.5 - (time.monotonic() - claimed_at)))
        server.set_handler(default_handler)
        server.clear_requests()
        try:
            report = phase1(overrides=SettingsOverrides(
                codex_home=str(home), db_url=db_url, memory_root=str(memory_root), provider="openai",
                base_url=server.base_url, concurrency=8, max_rollouts_per_startup=SESSIONS, ignore_age_windows=True,
            ))
        finally:
            close_stores()
        second_requests = Counter(_thread_of(r) for r in server.requests if r.endpoint == "responses")

    assert report.outcome_counts() == Counter({Outcome.succeeded.value: SESSIONS}), report.failures()
    total = first_requests + second_requests
    paid_twice = [thread for thread in answered if total[thread] != 1]
    assert paid_twice == []
    assert sorted(second_requests) == sorted(set(first_requests) - set(answered))
    # Usage accounted once per paid call: the reused answers' tokens are in this run's totals,
    # marked as paid by the earlier run, and the jobs hold exactly the run's totals.
    assert report.usage_reused["total_tokens"] > 0
    assert 0 < report.usage_reused["total_tokens"] < report.usage["total_tokens"]
    with store.engine.connect() as connection:
        job_tokens = connection.execute(text("SELECT SUM(total_tokens) FROM jobs WHERE kind='memory_stage1'")).scalar()
        leftover = connection.execute(text("SELECT COUNT(*) FROM stage1_arrived_results")).scalar()
    assert job_tokens == report.usage["total_tokens"]
    assert leftover == 0  # finalizing consumed every arrived answer
    store.close()
