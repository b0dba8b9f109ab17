"""`codex-memories phase1` handed to a running `codex-memories serve`, end to end.

What it proves: with serve up (its own `prefect server start` on 127.0.0.1, recorded in its
settings' state folder, its hand-off socket under PREFECT_HOME), `codex-memories phase1` from another
process gets the run done by serve: the flow run the CLI names exists in serve's Prefect server
and completed, with its task runs (that server records them in batches), the model server
received the extraction requests, serve's log names the run, the CLI prints the report;
`codex-memories phase2` is handed over the same way; and once serve stops, its socket is gone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from codex_memories_cli.handoff import SOCKET_FILE
from codex_memories_cli.prefect_server import TASK_RUN_RECORDER_BATCHING
from tests.deploy.prefect_stack import REPO_ROOT, free_port, stop_process_group, wait_for
from tests.support.openai_server import default_handler, running_openai_server
from tests.support.rollout_factory import write_rollout

CLI = [sys.executable, "-m", "codex_memories_cli.main"]
SESSIONS = 3


def _environment(prefect_home: Path) -> dict[str, str]:
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PREFECT_", "CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))
    }
    return base | {
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "OPENAI_API_KEY": "sk-handoff-test",
        "PYTHONUNBUFFERED": "1",
    }


def _write_sessions(codex_home: Path) -> None:
    start = datetime.now(UTC) - timedelta(days=2)
    for index in range(SESSIONS):
        write_rollout(
            codex_home,
            created_at=start + timedelta(minutes=30 * index),
            cwd=f"/home/dana/src/project{index}",
            user_messages=[f"Fix the flaky test in project{index}; we always use pnpm, never npm."],
            tool_calls=[("pnpm test", "FAIL src/a.test.ts\n  expected 200, got 500\n")],
            assistant_messages=["Fixed: the test now waits for the server."],
        )


def _start_serve(tmp_path: Path, environment: dict[str, str], port: int) -> tuple[subprocess.Popen[bytes], Path]:
    """`codex-memories serve` with its own idle Codex home, in a session of its own; its log."""
    idle_home = tmp_path / "serve_codex_home"
    (idle_home / "sessions").mkdir(parents=True)
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        serve = subprocess.Popen(
            [*CLI, "serve", "--port", str(port), "--codex-home", str(idle_home),
             "--db", f"sqlite:///{tmp_path / 'serve.sqlite'}", "--memory-root", str(tmp_path / "serve-memories"),
             "--provider", "heuristic"],
            cwd=REPO_ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return serve, log_path


@pytest.mark.prefect_server
@pytest.mark.timeout(420)
def test_phase1_runs_in_the_serve_process_and_shows_in_its_prefect_server(tmp_path: Path) -> None:
    prefect_home = tmp_path / "prefect-home"
    environment = _environment(prefect_home)
    codex_home = tmp_path / "codex_home"
    _write_sessions(codex_home)
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    serve, log_path = _start_serve(tmp_path, environment, port)
    socket_path = prefect_home / SOCKET_FILE
    try:
        wait_for(lambda: serve.poll() is not None or socket_path.is_socket(), timeout=240, what="serve's hand-off socket")
        assert serve.poll() is None, log_path.read_text(errors="replace")
        with running_openai_server(default_handler, latency_seconds=0.0) as model:
            phase1 = [
                *CLI, "phase1", "--codex-home", str(codex_home), "--db", f"sqlite:///{tmp_path / 'state.sqlite'}",
                "--memory-root", str(tmp_path / "memories"), "--provider", "openai", "--base-url", model.base_url,
                "--ignore-age-windows", "--max-rollouts", str(SESSIONS), "--verbose",
            ]
            handed = subprocess.run(phase1, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=240)
            assert handed.returncode == 0, handed.stderr + log_path.read_text(errors="replace")
            assert f"phase 1: succeeded={SESSIONS}" in handed.stdout
            served = re.search(r"ran in codex-memories serve as flow run '([^']+)' \((\S+)/runs/flow-run/([0-9a-f-]+)\)", handed.stderr)
            assert served is not None, handed.stderr
            name, flow_run_id = served.group(1), served.group(3)
            extraction_requests = [request for request in model.requests if request.endpoint == "responses"]
            assert len(extraction_requests) == SESSIONS

            flow_run = httpx.get(f"{api_url}/flow_runs/{flow_run_id}", timeout=10).json()
            assert (flow_run["name"], flow_run["state_type"]) == (name, "COMPLETED")
            # serve's server records task runs in batches (`own_server_environment`), and they
            # all arrive: one completed extraction task per session.
            recorder = httpx.get(f"{api_url}/admin/settings", timeout=10).json()["server"]["services"]["task_run_recorder"]
            assert (recorder["batch_size"], recorder["flush_interval"]) == (
                TASK_RUN_RECORDER_BATCHING["batch_size"], TASK_RUN_RECORDER_BATCHING["flush_interval"],
            )

            def completed_extractions() -> int:
                body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
                runs = httpx.post(f"{api_url}/task_runs/filter", json=body, timeout=10).json()
                return sum(run["name"].startswith("extract-") and run["state_type"] == "COMPLETED" for run in runs)

            wait_for(lambda: completed_extractions() == SESSIONS, timeout=60, what="the run's task runs in serve's server")
            # serve's own log names the same run: it ran there, not in the CLI's process.
            assert f"hand-off: phase1 as flow run '{name}'" in log_path.read_text(errors="replace")

        # Phase 2 goes the same way (offline consolidator): its report here, its folder written.
        phase2 = [
            *CLI, "phase2", "--codex-home", str(codex_home), "--db", f"sqlite:///{tmp_path / 'state.sqlite'}",
            "--memory-root", str(tmp_path / "memories"), "--provider", "heuristic", "--force", "--verbose",
        ]
        consolidated = subprocess.run(phase2, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=240)
        assert consolidated.returncode == 0, consolidated.stderr + log_path.read_text(errors="replace")
        assert "phase 2: succeeded" in consolidated.stdout, consolidated.stdout
        assert "phase2: ran in codex-memories serve as flow run" in consolidated.stderr
        assert (tmp_path / "memories" / "MEMORY.md").is_file()
    finally:
        stop_process_group(serve, signal.SIGINT, timeout=60)
    assert not socket_path.exists()


@pytest.mark.prefect_server
@pytest.mark.timeout(300)
def test_serve_on_its_own_port_gives_a_working_ui_records_its_server_and_a_sigterm_stops_it(tmp_path: Path) -> None:
    """`serve --port N`: the UI it serves calls the API on N (not Prefect's default 4200); serve
    records its server in its settings' state folder, where a command of the same data finds it;
    `kill <serve>` (what a service manager sends) as soon as serve listens, before Prefect's
    runner has its own handler: serve's server, record and socket go with it."""
    prefect_home = tmp_path / "prefect-home"
    environment = _environment(prefect_home) | {"PREFECT_SERVER_UI_ENABLED": "true"}
    port = free_port()
    serve, log_path = _start_serve(tmp_path, environment, port)
    socket_path = prefect_home / SOCKET_FILE
    record = tmp_path / "serve_codex_home" / "codex-memories" / "serve.json"
    try:
        wait_for(lambda: serve.poll() is not None or socket_path.is_socket(), timeout=240, what="serve's hand-off socket")
        assert serve.poll() is None, log_path.read_text(errors="replace")
        ui = httpx.get(f"http://127.0.0.1:{port}/ui-settings", timeout=10)
        assert ui.status_code == 200 and ui.json()["api_url"] == f"http://127.0.0.1:{port}/api", ui.text
        recorded = json.loads(record.read_text(encoding="utf-8"))
        assert (recorded["api_url"], recorded["serve_pid"]) == (f"http://127.0.0.1:{port}/api", serve.pid)
        assert oct(record.stat().st_mode & 0o777) == "0o600"
        # A command with serve's data reports its runs there and says so.
        status = subprocess.run(
            [*CLI, "phase1", "--local", "--codex-home", str(tmp_path / "serve_codex_home"),
             "--db", f"sqlite:///{tmp_path / 'serve.sqlite'}", "--memory-root", str(tmp_path / "serve-memories"),
             "--provider", "heuristic"],
            cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=240,
        )
        assert status.returncode == 0, status.stderr
        assert (
            f"prefect:     phase 1 reports to http://127.0.0.1:{port} (the server of codex-memories serve, pid {serve.pid})"
            in status.stdout
        ), status.stdout
        serve.send_signal(signal.SIGTERM)  # to serve alone, not to its process group
        assert serve.wait(timeout=90) in (0, 128 + signal.SIGTERM), log_path.read_text(errors="replace")
    finally:
        if serve.poll() is None:
            stop_process_group(serve, signal.SIGINT, timeout=60)

    def server_answers() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(lambda: not server_answers(), timeout=60, what="serve's Prefect server to stop")
    assert not record.exists() and not socket_path.exists()
