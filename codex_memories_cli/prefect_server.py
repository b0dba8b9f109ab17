"""The Prefect server the CLI talks to: the configured one, one already running, or one it starts.

`local_prefect_server(port)` (for `codex-memories serve`) yields the API URL. With
`PREFECT_API_URL` set (in the environment or Prefect's profile) it is that server and nothing is
started. Otherwise it starts `prefect server start` on 127.0.0.1:`port` in a subprocess (its log
in `$PREFECT_HOME/codex-memories-server.log`), waits for `/api/health`, points this process at it,
records its URL in `$PREFECT_HOME/codex-memories-server.json` for as long as it runs, and stops it
when the block ends. A server that does not come up is one clear error. That server records task
runs in batches (`own_server_environment`); a configured server is used as it is.

`running_prefect_server()` (for the commands that run one flow: `phase1`, `phase2`, `run`,
`backfill`) decides where their flow runs report. With `PREFECT_API_URL` configured, there.
Otherwise, when a server answers `/api/health` at the URL a running `serve` recorded, or on
127.0.0.1:4200 (Prefect's default, where a plain `prefect server start` listens), the block
uses it: the run shows in that UI and does not pay the ~13 s start of Prefect's temporary
server. Only when none answers does Prefect start its temporary server, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

HEALTH_TIMEOUT_SECONDS = 120.0
DEFAULT_PORT = 4200
# A probe of a server that is up answers in milliseconds; one that hangs must not stall the CLI.
PROBE_TIMEOUT_SECONDS = 1.0
SERVER_RECORD_FILE = "codex-memories-server.json"
# How the Prefect server `serve` starts records task runs. Prefect 3 clients report task-run states
# as events, and the server's task-run recorder writes them to its SQLite database, by default one
# event per write (batch size 1): some 200 writes for a 64-session phase 1. A deferred transaction
# that has already read does not wait for SQLite's write lock (the busy timeout applies only
# before the first read): Prefect's create_flow_run reads the flow's labels, then inserts; meeting
# a recorder write it fails with "database is locked", the server answers 503 and Prefect's client
# retries after 2 s. Measured (benchmarks/README.md, "Fixed cost"): 10 such 503s in 38
# back-to-back hand-offs with the default, none in 38 with this. Batched, the same states are
# written (all of them: the recorder coalesces task-run rows, not states) in a few transactions,
# at most 1 s later in the UI (the flush interval is whole seconds; 1 is its floor).
TASK_RUN_RECORDER_BATCHING = {"batch_size": 100, "flush_interval": 1}


class PrefectServerUnavailable(RuntimeError):
    """The Prefect server could not be started or reached."""


@contextmanager
def local_prefect_server(port: int) -> Iterator[str]:
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    configured = PREFECT_API_URL.value()
    if configured:
        yield configured
        return
    api_url = f"http://127.0.0.1:{port}/api"
    home = PREFECT_HOME.value()
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / "codex-memories-server.log"
    with log_path.open("ab") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=own_server_environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    record = home / SERVER_RECORD_FILE
    try:
        _wait_healthy(api_url, server, log_path)
        # The flow-run subprocesses `serve` starts inherit the environment; this process reads
        # its settings through Prefect's settings context.
        os.environ["PREFECT_API_URL"] = api_url
        # Where the CLI's other commands find this server (`running_prefect_server`).
        record.write_text(json.dumps({"api_url": api_url, "pid": server.pid}), encoding="utf-8")
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            yield api_url
    finally:
        record.unlink(missing_ok=True)
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def own_server_environment() -> dict[str, str]:
    """This process's environment plus the task-run batching for the server `serve` starts; a
    value the user set (environment or Prefect profile) stays theirs."""
    from prefect.settings import get_current_settings

    recorder = get_current_settings().server.services.task_run_recorder
    environment = dict(os.environ)
    for field, value in TASK_RUN_RECORDER_BATCHING.items():
        name = f"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_{field.upper()}"
        # `model_fields_set`: given by the environment or the profile when the settings were read.
        if name not in environment and field not in recorder.model_fields_set:
            environment[name] = str(value)
    return environment


@contextmanager
def running_prefect_server(port: int = DEFAULT_PORT) -> Iterator[str | None]:
    """Yield the API URL flow runs in this block report to, or None when Prefect will start its
    temporary server (no server configured, none answering). See the module docstring."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    configured = PREFECT_API_URL.value()
    if configured:
        yield configured
        return
    api_url = _running_server_url(PREFECT_HOME.value() / SERVER_RECORD_FILE, port)
    if api_url is None:
        yield None
        return
    previous = os.environ.get("PREFECT_API_URL")
    # Subprocesses (a process pool, a Codex run's hooks) inherit the environment; this process
    # reads its settings through Prefect's settings context.
    os.environ["PREFECT_API_URL"] = api_url
    try:
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            yield api_url
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def _running_server_url(record: os.PathLike[str], port: int) -> str | None:
    """The recorded `serve` server if it answers, else Prefect's default local one if it does."""
    recorded = _recorded_url(record)
    default = f"http://127.0.0.1:{port}/api"
    candidates = [recorded] if recorded and recorded != default else []
    for candidate in [*candidates, default]:
        if _answers_health(candidate, timeout=PROBE_TIMEOUT_SECONDS):
            return candidate
    return None


def _recorded_url(record: os.PathLike[str]) -> str | None:
    try:
        content = json.loads(Path(record).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no record (no `serve` running) or a torn one: only the default port is tried
    url = content.get("api_url") if isinstance(content, dict) else None
    return url if isinstance(url, str) and url else None


def _answers_health(api_url: str, timeout: float = 2.0) -> bool:
    try:
        response = httpx.get(f"{api_url}/health", timeout=timeout)
    except httpx.HTTPError:
        return False  # not listening (yet)
    # Prefect answers `true`; anything else on that port is not a Prefect API.
    return response.status_code == 200 and response.text.strip() == "true"


def _wait_healthy(api_url: str, server: subprocess.Popen[bytes], log_path: object) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PrefectServerUnavailable(f"`prefect server start` exited with {server.returncode}; see {log_path}")
        if _answers_health(api_url):
            return
        time.sleep(0.5)
    raise PrefectServerUnavailable(f"the Prefect server on {api_url} was not healthy within {HEALTH_TIMEOUT_SECONDS:.0f} s; see {log_path}")
