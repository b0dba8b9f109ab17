"""The Prefect server the CLI's flow runs report to: the configured one, our `serve`'s, or a
temporary one of the command's own.

`local_prefect_server(port, config)` (for `codex-memories serve`) yields the API URL. With
`PREFECT_API_URL` set (in the environment or Prefect's profile) it is that server and nothing is
started. Otherwise it starts `prefect server start` on 127.0.0.1:`port` in a subprocess (its log
in `$PREFECT_HOME/codex-memories-server.log`) whose UI calls the API on that same port, waits for
`/api/health`, points this process at it, and stops it when the block ends. That server records
task runs in batches (`own_server_environment`). While it runs, serve records it in the state
folder of its settings, `$CODEX_HOME/codex-memories/serve.json` (the URL, serve's and the
server's process ids, and which data it serves: a hash of the Codex home, the state DB and the
memory root), and removes the record when it ends.

`running_prefect_server(config)` (for the commands that run a flow: `phase1`, `phase2`, `run`,
`backfill`) decides where their flow runs report: the configured server; else the server of the
`serve` recorded in this configuration's state folder, when that `serve` serves the same data and
its server still answers; else a temporary server of the command's own. Never a server only
because it answers on 127.0.0.1:4200: that may be anyone's. `reporting_to_prefect` says which,
in one line, before the runs start.

The temporary server is what Prefect itself would start (uvicorn with Prefect's app, no UI, no
services, on a free port), made ours to stop: in a session of its own (a Ctrl-C at the terminal
reaches the command, not the server the command still reports its last states to), its output in
`$PREFECT_HOME/codex-memories-temporary-server.log` (no server traceback on the terminal), ended
with the command even when that is killed (Linux: the parent-death signal), and stopped at the
end of the command or at an interruption, after Prefect's log and event queues were drained (a
bounded wait), so nothing retries against a server that is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from codex_memories.settings import RuntimeConfig

HEALTH_TIMEOUT_SECONDS = 120.0
DEFAULT_PORT = 4200
# A probe of a server that is up answers in milliseconds; one that hangs must not stall the CLI.
PROBE_TIMEOUT_SECONDS = 1.0
SERVE_RECORD_FILE = "serve.json"
# How long the end of a command waits for Prefect's queued logs and events to reach the
# temporary server before stopping it; an interrupted run waits less.
DRAIN_SECONDS = 5.0
INTERRUPTED_DRAIN_SECONDS = 1.0
# Prefect's own temporary server exits with 3 when its port was taken meanwhile.
_PORT_TAKEN_EXIT_CODE = 3
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


# ---- serve's server -------------------------------------------------------------------------


@contextmanager
def local_prefect_server(port: int, config: RuntimeConfig) -> Iterator[str]:
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
            env=own_server_environment(port),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    record = serve_record_path(config)
    written: str | None = None
    try:
        _wait_healthy(api_url, server, log_path)
        # The flow-run subprocesses `serve` starts inherit the environment; this process reads
        # its settings through Prefect's settings context.
        os.environ["PREFECT_API_URL"] = api_url
        written = _write_record(record, api_url, server.pid, config)
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            yield api_url
    finally:
        if written is not None and _read_text(record) == written:
            record.unlink(missing_ok=True)  # still ours (a later serve of the same data may have replaced it)
        _stop(server, grace_seconds=30)


def own_server_environment(port: int) -> dict[str, str]:
    """This process's environment plus what the server `serve` starts needs: its UI calls the
    API on `port` (the UI's API URL defaults to PREFECT_SERVER_API_HOST/PORT, which `--port`
    does not set), and the task-run batching. A value the user set (environment or Prefect
    profile) stays theirs."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    environment = dict(os.environ)
    environment["PREFECT_SERVER_API_HOST"] = "127.0.0.1"
    environment["PREFECT_SERVER_API_PORT"] = str(port)
    recorder = settings.server.services.task_run_recorder
    for field, value in TASK_RUN_RECORDER_BATCHING.items():
        name = f"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_{field.upper()}"
        # `model_fields_set`: given by the environment or the profile when the settings were read.
        if name not in environment and field not in recorder.model_fields_set:
            environment[name] = str(value)
    return environment


def serve_record_path(config: RuntimeConfig) -> Path:
    from codex_memories import paths

    return config.settings.codex_home_path / paths.STATE_DIR / SERVE_RECORD_FILE


def served_data(config: RuntimeConfig) -> str:
    """Which data a `serve` serves: a hash of the Codex home, the state DB and the memory root
    (the DB URL may hold a password: only the hash is written)."""
    settings = config.settings
    identity = [str(settings.codex_home_path.resolve()), settings.resolved_db_url, settings.resolved_memory_root]
    return hashlib.sha256(json.dumps(identity).encode("utf-8")).hexdigest()


def _write_record(record: Path, api_url: str, server_pid: int, config: RuntimeConfig) -> str:
    content = json.dumps(
        {"api_url": api_url, "serve_pid": os.getpid(), "server_pid": server_pid, "serves": served_data(config)}
    )
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_name(f".{record.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.replace(partial, record)  # readers see the whole record or none
    return content


# ---- where a command's flow runs report ------------------------------------------------------


def recorded_serve_server(config: RuntimeConfig) -> tuple[str, int] | None:
    """The API URL and pid of the `serve` recorded for this configuration's data, when its
    server still answers; else None (no record, a torn one, other data, a dead serve)."""
    try:
        content = json.loads(_read_text(serve_record_path(config)) or "")
    except ValueError:
        return None
    if not isinstance(content, dict) or content.get("serves") != served_data(config):
        return None
    url, serve_pid = content.get("api_url"), content.get("serve_pid")
    if not isinstance(url, str) or not isinstance(serve_pid, int) or not _process_alive(serve_pid):
        return None
    return (url, serve_pid) if _answers_health(url, timeout=PROBE_TIMEOUT_SECONDS) else None


@dataclass(frozen=True)
class PrefectServerChoice:
    """Where a command's flow runs report: `api_url`, or None for the command's temporary
    server (started when the runs begin); `description` says which, for people."""

    api_url: str | None
    description: str
    configured: bool = False


def choose_prefect_server(config: RuntimeConfig) -> PrefectServerChoice:
    from prefect.settings import PREFECT_API_URL

    configured = PREFECT_API_URL.value()
    if configured:
        return PrefectServerChoice(configured, f"{configured} (PREFECT_API_URL)", configured=True)
    recorded = recorded_serve_server(config)
    if recorded is not None:
        url, pid = recorded
        return PrefectServerChoice(url, f"{url.removesuffix('/api')} (the server of codex-memories serve, pid {pid})")
    return PrefectServerChoice(None, "a temporary Prefect server, stopped when this command ends")


@contextmanager
def reporting_to_prefect(what: str, config: RuntimeConfig) -> Iterator[str]:
    """`running_prefect_server`, saying first in one line which server `what` reports to."""
    choice = choose_prefect_server(config)
    print(f"prefect:     {what} reports to {choice.description}", flush=True)
    with running_prefect_server(config, choice) as api_url:
        yield api_url


@contextmanager
def running_prefect_server(config: RuntimeConfig, choice: PrefectServerChoice | None = None) -> Iterator[str]:
    """Flow runs in this block report to the configured server, else to our `serve`'s server for
    the same data, else to this command's temporary server; yields its API URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    choice = choice or choose_prefect_server(config)
    if choice.configured and choice.api_url:
        yield choice.api_url
        return
    api_url = choice.api_url or TEMPORARY_SERVER.start()
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


# ---- the command's temporary server ---------------------------------------------------------


class TemporaryPrefectServer:
    """One per process: started by the first flow run that needs it (`run` reuses it for phase
    2), stopped by `stop()` at the end of the command or at an interruption (from any thread,
    once)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._api_url: str | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._process is not None

    def start(self) -> str:
        with self._lock:
            if self._api_url is not None:
                return self._api_url
            from prefect.settings import PREFECT_HOME, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

            home = PREFECT_HOME.value()
            home.mkdir(parents=True, exist_ok=True)
            log_path = home / "codex-memories-temporary-server.log"
            # Prefect's 20 s default was seen to run out on a loaded 2-core machine.
            budget = max(float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value() or 0), HEALTH_TIMEOUT_SECONDS)
            deadline = time.monotonic() + budget
            while True:
                port = _free_port()
                api_url = f"http://127.0.0.1:{port}/api"
                with log_path.open("ab") as log:
                    self._process = subprocess.Popen(
                        _uvicorn_command(port), env=_temporary_server_environment(), stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True, preexec_fn=_end_with_parent,
                    )
                try:
                    _wait_healthy(api_url, self._process, log_path, deadline=deadline)
                except PrefectServerUnavailable:
                    if self._process.returncode == _PORT_TAKEN_EXIT_CODE and time.monotonic() < deadline:
                        continue  # another process took the port between our probe and its bind
                    self._process = None
                    raise
                self._api_url = api_url
                return api_url

    def stop(self, *, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Drain Prefect's queues into the server (at most `drain_seconds`), then stop it."""
        with self._lock:
            process, self._process, self._api_url = self._process, None, None
        if process is None:
            return
        _drain_prefect_queues(drain_seconds)
        _stop(process, grace_seconds=5)


TEMPORARY_SERVER = TemporaryPrefectServer()


def _uvicorn_command(port: int) -> list[str]:
    """The command Prefect's own temporary server runs (`SubprocessASGIServer`)."""
    import prefect

    return [
        sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
        "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
        "--log-level", "error", "--lifespan", "on",
    ]


def _temporary_server_environment() -> dict[str, str]:
    from prefect.settings import get_current_settings

    return {
        **os.environ,
        # As Prefect's own temporary server: no UI, ephemeral mode, the last app of its process.
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
        **get_current_settings().to_environment_variables(exclude_unset=True),
    }


def _end_with_parent() -> None:
    """In the server's process before it runs: the kernel sends it SIGTERM when the command's
    process ends, however it ends (Linux; elsewhere the command's own stop is the only one)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _drain_prefect_queues(timeout: float) -> None:
    """Send what Prefect's log and event workers still hold before the server goes."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=timeout, at_exit=False)


# ---- helpers --------------------------------------------------------------------------------


def _stop(process: subprocess.Popen[bytes], *, grace_seconds: float) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _answers_health(api_url: str, timeout: float = 2.0) -> bool:
    try:
        response = httpx.get(f"{api_url}/health", timeout=timeout)
    except httpx.HTTPError:
        return False  # not listening (yet)
    # Prefect answers `true`; anything else on that port is not a Prefect API.
    return response.status_code == 200 and response.text.strip() == "true"


def _wait_healthy(api_url: str, server: subprocess.Popen[Any], log_path: object, *, deadline: float | None = None) -> None:
    deadline = deadline if deadline is not None else time.monotonic() + HEALTH_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PrefectServerUnavailable(f"the Prefect server exited with {server.returncode}; see {log_path}")
        if _answers_health(api_url):
            return
        time.sleep(0.25)
    _stop(server, grace_seconds=5)
    raise PrefectServerUnavailable(f"the Prefect server on {api_url} was not healthy in time; see {log_path}")
