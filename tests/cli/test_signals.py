"""Ctrl-C and SIGTERM end a CLI run within seconds (issue 30.5, 29.6).

`codex-memories run` in a subprocess of its own session, against the OpenAI-compatible test
server made to hang, interrupted at three points: while its temporary Prefect server starts, in
the middle of phase 1 (two extractions answered, two waiting on the model), in the middle of
phase 2 (the consolidation waiting on the model). Each time: exit 130 (SIGINT, sent to the
process group as a terminal's Ctrl-C is) or 143 (SIGTERM, to the process alone as `kill` sends
it) within a few seconds, one line on stderr saying what was kept, no traceback, and none of the
processes the command started still alive. What the line says is checked in the state DB: the
answers that arrived are kept, the claims and the phase-2 lease are given back, the memory folder
is untouched. A run that succeeds prints nothing on stderr.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from codex_memories.storage import STATE_BINDING_PATH

from tests.deploy.prefect_stack import wait_for
from tests.deploy.test_deployments import _consolidation_agent
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    default_handler,
    is_stage1_request,
    running_openai_server,
)
from tests.support.rollout_factory import write_rollout

pytestmark = [pytest.mark.timeout(600)]

CLI = [sys.executable, "-m", "codex_memories_cli.main"]
SESSIONS = 4
ANSWERED = 2
# "within a few seconds": from the signal to the process's exit.
EXIT_WITHIN_SECONDS = 10.0


class Hanging:
    """A model that answers the first `answered` extractions and holds every other request
    until released."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._count = 0

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        if is_stage1_request(request):
            with self._lock:
                self._count += 1
                answer_now = self._count <= self.answered
            if answer_now:
                return default_handler(request)
        self.release.wait(120)
        return ScriptedReply.http_error(503, "released after the test")


@pytest.fixture
def home(tmp_path: Path) -> dict[str, Any]:
    codex_home = tmp_path / "codex_home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    created = datetime.now(UTC) - timedelta(hours=30)
    for index in range(SESSIONS):
        write_rollout(
            codex_home, created_at=created + timedelta(minutes=index), cwd=f"/home/dana/src/project{index}",
            user_messages=[f"In project{index} always run make check before pushing."],
        )
    return {
        "codex_home": codex_home, "db_path": tmp_path / "state.sqlite", "memory_root": tmp_path / "memories",
        "prefect_home": tmp_path / "prefect-home", "tmp_path": tmp_path,
    }


@pytest.fixture
def model() -> Iterator[OpenAITestServer]:
    with running_openai_server() as server:
        yield server


def start_run(home: dict[str, Any], model: OpenAITestServer) -> subprocess.Popen[str]:
    environment = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("PREFECT_", "CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))
    } | {
        "PREFECT_HOME": str(home["prefect_home"]),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "OPENAI_API_KEY": "test-key",
        "CODEX_MEMORIES_MODEL_RETRIES": "0",
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [
            *CLI, "run", "--local", "--codex-home", str(home["codex_home"]), "--db", f"sqlite:///{home['db_path']}",
            "--memory-root", str(home["memory_root"]), "--provider", "openai", "--base-url", model.base_url,
            "--ignore-age-windows", "--max-rollouts", str(SESSIONS), "--concurrency", str(SESSIONS),
        ],
        env=environment, cwd=home["tmp_path"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now (children, their children, ...), whatever their session."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def interrupt(run: subprocess.Popen[str], signum: int) -> tuple[int, str, float, set[int]]:
    """Send `signum` as a user would; the exit code, stderr, seconds to exit and the processes
    the command had started."""
    started = descendants(run.pid)
    sent = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
    else:
        run.send_signal(signal.SIGTERM)  # `kill <pid>`, a service manager
    try:
        _out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return run.returncode, err, time.monotonic() - sent, started


def assert_ended_cleanly(code: int, err: str, seconds: float, started: set[int], signum: int) -> str:
    assert code == 128 + signum, (code, err)
    assert seconds < EXIT_WITHIN_SECONDS, f"took {seconds:.1f} s to end"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"codex-memories: interrupted by {signal.Signals(signum).name}: "), err
    assert started, "the command had started no process (its temporary Prefect server)"
    wait_for(lambda: not alive(started), timeout=10, what=f"the processes the command started {alive(started)}")
    return lines[0]


def rows(db_path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db_path) as connection:
        return connection.execute(sql).fetchall()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_the_temporary_prefect_server_starts_ends_the_run(home, model, signum) -> None:
    run = start_run(home, model)
    try:
        # The command's temporary server is a uvicorn process below it, not yet answering.
        wait_for(
            lambda: any(b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in alive(descendants(run.pid))),
            timeout=120, what="the temporary Prefect server's process",
        )
        line = assert_ended_cleanly(*interrupt(run, signum), signum)
    finally:
        model.set_handler(default_handler)
    assert "nothing had started" in line or "0 of" in line, line
    # Nothing of the memory: at most the folder's binding to this state DB, made before the run began.
    root = home["memory_root"]
    left = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()) if root.exists() else []
    assert left in ([], [STATE_BINDING_PATH]), left


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_in_the_middle_of_phase1_keeps_the_answers_and_gives_the_claims_back(home, model, signum) -> None:
    hanging = Hanging(answered=ANSWERED)
    model.set_handler(hanging)
    run = start_run(home, model)
    try:
        wait_for(
            lambda: run.poll() is not None or len([r for r in model.requests if is_stage1_request(r)]) == SESSIONS,
            timeout=240, what="every extraction sent",
        )
        wait_for(
            lambda: len(rows(home["db_path"], "SELECT thread_id FROM stage1_arrived_results")) == ANSWERED,
            timeout=60, what="the answered extractions stored",
        )
        line = assert_ended_cleanly(*interrupt(run, signum), signum)
    finally:
        hanging.release.set()
    assert f"phase 1 stopped with {ANSWERED} of {SESSIONS} extraction(s) answered" in line, line
    assert len(rows(home["db_path"], "SELECT thread_id FROM stage1_arrived_results")) == ANSWERED
    jobs = rows(home["db_path"], "SELECT status, ownership_token FROM jobs WHERE kind = 'memory_stage1'")
    assert jobs == [("pending", None)] * SESSIONS, jobs  # the next run claims them at once


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_in_the_middle_of_phase2_gives_the_lease_back_and_leaves_the_folder(home, model, signum) -> None:
    hanging = Hanging(answered=SESSIONS)  # every extraction answered; the consolidation hangs
    model.set_handler(hanging)
    run = start_run(home, model)
    try:
        wait_for(
            lambda: run.poll() is not None or any(not is_stage1_request(r) for r in model.requests),
            timeout=300, what="phase 2's consolidation request",
        )
        line = assert_ended_cleanly(*interrupt(run, signum), signum)
    finally:
        hanging.release.set()
    assert f"phase 1 (succeeded={SESSIONS}) (kept)" in line and "phase 2 stopped" in line, line
    assert rows(home["db_path"], "SELECT COUNT(*) FROM stage1_outputs") == [(SESSIONS,)]
    job = rows(home["db_path"], "SELECT status, ownership_token FROM jobs WHERE kind = 'memory_consolidate_global'")
    assert job == [("pending", None)], job
    root = home["memory_root"]
    assert not (root / "MEMORY.md").exists()
    assert not list(root.parent.glob(f".{root.name}.staging-*")), "the staged copy was left behind"


def test_a_run_that_succeeds_prints_nothing_on_stderr(home, model) -> None:
    released = threading.Event()
    released.set()
    model.set_handler(_consolidation_agent(released))  # extracts, then writes the two files
    run = start_run(home, model)
    out, err = run.communicate(timeout=400)
    assert run.returncode == 0, out + err
    assert err == "", err
    assert f"phase 1: succeeded={SESSIONS}" in out and "phase 2: succeeded" in out


def test_the_transcript_worker_process_ignores_a_ctrl_c_and_ends_when_stopped(monkeypatch) -> None:
    """A terminal's Ctrl-C reaches phase 1's transcript worker too (same process group): it must
    neither print a traceback nor die on its own, and `stop_transcript_pool` ends it (the
    interrupted command ends with `os._exit`, which skips the pool's shutdown)."""
    from codex_memories.extract import prefetch

    monkeypatch.setattr(prefetch, "spare_cores", lambda: 2.0)
    monkeypatch.setattr(prefetch, "_pool", None)
    pool = prefetch.transcript_pool()
    assert isinstance(pool, prefetch.ProcessPoolExecutor)
    pool.submit(int).result(timeout=120)  # the worker is up
    [worker] = list(pool._processes.values())
    os.kill(worker.pid, signal.SIGINT)
    assert pool.submit(int, "7").result(timeout=60) == 7  # still serving
    prefetch.stop_transcript_pool()
    worker.join(timeout=30)
    assert not worker.is_alive()
