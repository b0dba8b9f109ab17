"""Where the CLI's flow runs report (issue 28.4): the configured server; else the server our own
`serve` recorded in the state folder for the same data, while it runs and answers; else the
command's temporary server. A Prefect API that merely answers on 127.0.0.1 is never used: it
may be another checkout's or another user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from codex_memories.settings import SettingsOverrides
from codex_memories_cli.prefect_server import (
    choose_prefect_server,
    running_prefect_server,
    serve_record_path,
    served_data,
)


def _server(body: bytes) -> Iterator[int]:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            status = 200 if self.path == "/api/health" else 404
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            return  # keep the test output clean

    server = HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def prefect_api() -> Iterator[int]:
    yield from _server(b"true")


@pytest.fixture
def unconfigured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(updates={PREFECT_API_URL: None}):
        yield


def config(tmp_path: Path, memory_root: str = "memories"):
    return SettingsOverrides(
        codex_home=str(tmp_path / "codex_home"), db_url=f"sqlite:///{tmp_path / 'state.sqlite'}",
        memory_root=str(tmp_path / memory_root), provider="heuristic",
    ).load()


def record(tmp_path: Path, port: int, *, serve_pid: int | None = None, memory_root: str = "memories") -> str:
    recorded = config(tmp_path, memory_root)
    path = serve_record_path(recorded)
    path.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}/api"
    path.write_text(json.dumps({
        "api_url": url, "serve_pid": serve_pid or os.getpid(), "server_pid": 1, "serves": served_data(recorded),
    }))
    return url


def test_the_server_serve_recorded_for_the_same_data_is_used_and_said(unconfigured: None, tmp_path: Path, prefect_api: int) -> None:
    url = record(tmp_path, prefect_api)
    choice = choose_prefect_server(config(tmp_path))
    assert choice.api_url == url
    assert choice.description == f"http://127.0.0.1:{prefect_api} (the server of codex-memories serve, pid {os.getpid()})"
    with running_prefect_server(config(tmp_path)) as api_url:
        assert api_url == url
        assert PREFECT_API_URL.value() == url
        assert os.environ["PREFECT_API_URL"] == url  # subprocesses report there too
    assert PREFECT_API_URL.value() is None
    assert "PREFECT_API_URL" not in os.environ


def test_a_prefect_api_answering_for_other_data_is_not_used(unconfigured: None, tmp_path: Path, prefect_api: int) -> None:
    record(tmp_path, prefect_api, memory_root="another-folder")  # the same state folder, another memory root
    choice = choose_prefect_server(config(tmp_path))
    assert choice.api_url is None
    assert choice.description == "a temporary Prefect server, stopped when this command ends"


def test_a_record_left_by_a_serve_that_is_gone_is_not_used(unconfigured: None, tmp_path: Path, prefect_api: int) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    record(tmp_path, prefect_api, serve_pid=int(ended.stdout))
    assert choose_prefect_server(config(tmp_path)).api_url is None


def test_a_torn_record_or_a_server_that_does_not_answer_is_not_used(unconfigured: None, tmp_path: Path) -> None:
    path = serve_record_path(config(tmp_path))
    path.parent.mkdir(parents=True)
    path.write_text("{torn")
    assert choose_prefect_server(config(tmp_path)).api_url is None
    with HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    record(tmp_path, port)  # nothing listens there any more
    assert choose_prefect_server(config(tmp_path)).api_url is None


def test_a_configured_server_is_never_replaced(tmp_path: Path, prefect_api: int) -> None:
    record(tmp_path, prefect_api)
    configured = "http://prefect.example:4200/api"
    with temporary_settings(updates={PREFECT_API_URL: configured}):
        assert choose_prefect_server(config(tmp_path)).description == f"{configured} (PREFECT_API_URL)"
        with running_prefect_server(config(tmp_path)) as api_url:
            assert api_url == configured
            assert PREFECT_API_URL.value() == configured
