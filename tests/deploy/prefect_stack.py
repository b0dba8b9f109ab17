"""A real Prefect stack for deployment tests: `prefect server start` on PostgreSQL, the
`codex-memories` process work pool, `prefect deploy` from this checkout and a process worker.

Everything runs as subprocesses on 127.0.0.1 with a private PREFECT_HOME; the server's database
is a fresh PostgreSQL database created here and dropped at `stop()`. (On SQLite the server
answers concurrency-slot requests with "database is locked" and 2 s client retries.)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg

REPO_ROOT = Path(__file__).resolve().parents[2]
PREFECT = [sys.executable, "-m", "prefect"]
POSTGRES_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/test"
WORK_POOL = "codex-memories"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "CRASHED"}
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen[bytes], signal_number: int = signal.SIGTERM, timeout: float = 20) -> None:
    """Signal a process started with `start_new_session=True` and its children; SIGKILL if it
    has not ended within `timeout` seconds."""
    os.killpg(process.pid, signal_number)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def wait_for(condition: Callable[[], T], *, timeout: float, interval: float = 0.25, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class PrefectStack:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.database = f"prefect_deploy_{uuid.uuid4().hex[:10]}"
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self._processes: list[tuple[subprocess.Popen[bytes], Any]] = []
        base = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PREFECT_", "CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))
        }
        self.env = base | {
            "PREFECT_HOME": str(root / "prefect-home"),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_UI_ENABLED": "false",
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": (
                f"postgresql+asyncpg://postgres@127.0.0.1:5432/{self.database}"
            ),
            # No scheduled runs during a test (the cron schedules are still deployed and checked).
            "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
            "PREFECT_LOGGING_TO_API_ENABLED": "true",
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_WORKER_HEARTBEAT_SECONDS": "5",
            "PYTHONUNBUFFERED": "1",
        }

    # -- lifecycle -------------------------------------------------------------------------------

    def start_server(self) -> None:
        with psycopg.connect(POSTGRES_ADMIN_DSN, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.database}"')
        self._spawn("server", [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)])
        wait_for(self._healthy, timeout=90, what="the Prefect server's /health")

    def create_work_pool(self) -> None:
        self.prefect(
            "work-pool", "create", WORK_POOL, "--type", "process",
            "--base-job-template", str(REPO_ROOT / "infra" / "work-pool.json"),
        )

    def deploy(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return self.prefect("--no-prompt", "deploy", *arguments, timeout=180)

    def start_worker(
        self, extra_env: dict[str, str], *, name: str = "test-worker", limit: int | None = None
    ) -> subprocess.Popen[bytes]:
        """A process worker polling the pool (`--limit`: flow runs it runs at once); its log is
        `<name>.log`. Started in its own session: `stop_process_group` stops it with its children."""
        command = [*PREFECT, "worker", "start", "--pool", WORK_POOL, "--type", "process", "--name", name]
        return self._spawn(
            "worker" if name == "test-worker" else name,
            command + (["--limit", str(limit)] if limit is not None else []),
            extra_env=extra_env,
        )

    def stop(self) -> None:
        for process, log in reversed(self._processes):
            if process.poll() is None:
                stop_process_group(process)
            log.close()
        self._processes.clear()
        with psycopg.connect(POSTGRES_ADMIN_DSN, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    # -- helpers ---------------------------------------------------------------------------------

    def prefect(self, *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*PREFECT, *arguments], cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if result.returncode != 0:
            raise AssertionError(f"prefect {' '.join(arguments)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def prefect_python(
        self, *arguments: str, extra_env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """`python <arguments>` against this server (a setup script of infra/, as a team runs it)."""
        result = subprocess.run(
            [sys.executable, *arguments], cwd=REPO_ROOT, env=self.env | (extra_env or {}),
            capture_output=True, text=True, timeout=timeout,
        )
        if result.returncode != 0:
            raise AssertionError(f"python {' '.join(arguments)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def log_text(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(encoding="utf-8", errors="replace")

    @contextmanager
    def client(self) -> Iterator[Any]:
        from prefect import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: self.api_url}), get_client(sync_client=True) as client:
            yield client

    def _spawn(self, name: str, command: list[str], extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.root / f"{name}.log").open("wb")
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=self.env | (extra_env or {}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._processes.append((process, log))
        return process

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def retry_like_the_ui(client: Any, flow_run_id: Any) -> None:
    """What the flow-run page's "Retry" button sends (prefect-ui-library `FlowRunRetryModal`:
    `setFlowRunState` with a Scheduled state named AwaitingRetry, not forced)."""
    from prefect.client.schemas.objects import StateType
    from prefect.states import State

    result = client.set_flow_run_state(
        flow_run_id, State(type=StateType.SCHEDULED, name="AwaitingRetry", message="Retry from the UI"), force=False
    )
    assert result.status.value == "ACCEPT", result.details


def terminal_or_none(client: Any, flow_run_id: Any) -> Any:
    run = client.read_flow_run(flow_run_id)
    return run if run.state and run.state.type.value in TERMINAL else None


def wait_terminal(client: Any, flow_run_id: Any, *, timeout: float) -> Any:
    time.sleep(0.5)  # a just-retried run is Scheduled, not yet picked up
    return wait_for(lambda: terminal_or_none(client, flow_run_id), timeout=timeout, what=f"flow run {flow_run_id} to finish")


def flow_run_process_ids(flow_run_id: str) -> list[int]:
    """Processes started for a flow run (the process worker passes PREFECT__FLOW_RUN_ID)."""
    marker = f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue  # the process ended or is not ours to read
        if marker in environment.split(b"\0"):
            found.append(int(entry.name))
    return found
