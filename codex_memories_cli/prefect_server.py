"""The Prefect server `codex-memories serve` talks to: the configured one, or one it starts.

`local_prefect_server(port)` yields the API URL. With `PREFECT_API_URL` set (in the environment
or Prefect's profile) it is that server and nothing is started. Otherwise it starts
`prefect server start` on 127.0.0.1:`port` in a subprocess (its log in
`$PREFECT_HOME/codex-memories-server.log`), waits for `/api/health`, points this process at it,
and stops it when the block ends. A server that does not come up is one clear error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

HEALTH_TIMEOUT_SECONDS = 120.0


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
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_healthy(api_url, server, log_path)
        # The flow-run subprocesses `serve` starts inherit the environment; this process reads
        # its settings through Prefect's settings context.
        os.environ["PREFECT_API_URL"] = api_url
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            yield api_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def _answers_health(api_url: str) -> bool:
    try:
        return httpx.get(f"{api_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False  # not listening yet


def _wait_healthy(api_url: str, server: subprocess.Popen[bytes], log_path: object) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PrefectServerUnavailable(f"`prefect server start` exited with {server.returncode}; see {log_path}")
        if _answers_health(api_url):
            return
        time.sleep(0.5)
    raise PrefectServerUnavailable(f"the Prefect server on {api_url} was not healthy within {HEALTH_TIMEOUT_SECONDS:.0f} s; see {log_path}")
