"""The CLI's flow commands use a Prefect server that is already up instead of starting Prefect's
temporary one: the configured one first, else the one `serve` recorded, else the default port."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

from codex_memories_cli.prefect_server import SERVER_RECORD_FILE, running_prefect_server


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
def not_prefect() -> Iterator[int]:
    yield from _server(b"<html>some other service</html>")


@pytest.fixture
def unconfigured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(updates={PREFECT_API_URL: None, PREFECT_HOME: str(tmp_path)}):
        yield tmp_path


def _free_port() -> int:
    probe = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = probe.server_address[1]
    probe.server_close()
    return port


def test_a_server_answering_on_the_default_port_is_used_for_the_block(unconfigured: Path, prefect_api: int) -> None:
    expected = f"http://127.0.0.1:{prefect_api}/api"
    with running_prefect_server(port=prefect_api) as api_url:
        assert api_url == expected
        assert PREFECT_API_URL.value() == expected
        assert os.environ["PREFECT_API_URL"] == expected  # subprocesses report there too
    assert PREFECT_API_URL.value() is None
    assert "PREFECT_API_URL" not in os.environ


def test_the_server_a_running_serve_recorded_comes_first(unconfigured: Path, prefect_api: int) -> None:
    recorded = f"http://127.0.0.1:{prefect_api}/api"
    (unconfigured / SERVER_RECORD_FILE).write_text(json.dumps({"api_url": recorded, "pid": 1}))
    with running_prefect_server(port=_free_port()) as api_url:
        assert api_url == recorded


def test_with_nothing_answering_prefect_starts_its_temporary_server_as_before(unconfigured: Path, not_prefect: int) -> None:
    (unconfigured / SERVER_RECORD_FILE).write_text("{torn")
    with running_prefect_server(port=not_prefect) as api_url:  # answers, but not as Prefect does
        assert api_url is None
        assert PREFECT_API_URL.value() is None
    with running_prefect_server(port=_free_port()) as api_url:
        assert api_url is None


def test_a_configured_server_is_never_replaced(prefect_api: int) -> None:
    configured = "http://prefect.example:4200/api"
    with temporary_settings(updates={PREFECT_API_URL: configured}):
        with running_prefect_server(port=prefect_api) as api_url:
            assert api_url == configured
            assert PREFECT_API_URL.value() == configured
