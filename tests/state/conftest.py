"""Every store test runs on SQLite and on PostgreSQL.

PostgreSQL: the server at 127.0.0.1:5432 (trust auth, user `postgres` or `root`, database
`test`); each test gets a fresh schema with a random name, dropped afterwards. An unreachable
server FAILS the postgresql tests (CI starts it); set CODEX_MEMORIES_TEST_SKIP_POSTGRES=1 to skip
them explicitly.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from codex_memories.state import MemoryStore
from tests.state.support import FakeClock

POSTGRES_HOST = "127.0.0.1"
POSTGRES_PORT = 5432
POSTGRES_DATABASE = "test"
POSTGRES_USERS = ("postgres", "root")
SKIP_POSTGRES_ENV = "CODEX_MEMORIES_TEST_SKIP_POSTGRES"

_postgres_admin_url: str | None = None
_postgres_error: str | None = None


def _find_postgres() -> str:
    global _postgres_admin_url, _postgres_error
    if _postgres_admin_url is not None:
        return _postgres_admin_url
    if _postgres_error is None:
        errors = []
        for user in POSTGRES_USERS:
            url = (
                f"postgresql+psycopg://{user}@{POSTGRES_HOST}:{POSTGRES_PORT}/{POSTGRES_DATABASE}"
            )
            engine = create_engine(url)
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                _postgres_admin_url = url
                return url
            except OperationalError as exc:
                errors.append(f"{user}: {exc.orig}")
            finally:
                engine.dispose()
        _postgres_error = "; ".join(errors)
    pytest.fail(
        f"PostgreSQL is unreachable at {POSTGRES_HOST}:{POSTGRES_PORT}/{POSTGRES_DATABASE} "
        f"({_postgres_error}). Start it (pg_ctlcluster --skip-systemctl-redirect <version> main "
        f"start) or set {SKIP_POSTGRES_ENV}=1 to skip the PostgreSQL tests.",
        pytrace=False,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def db_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql" and os.environ.get(SKIP_POSTGRES_ENV) == "1":
        pytest.skip(f"{SKIP_POSTGRES_ENV}=1")
    return request.param


@pytest.fixture
def db_url(db_backend: str, tmp_path: Path) -> Iterator[str]:
    if db_backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'state' / 'state.sqlite'}"
        return
    admin_url = _find_postgres()
    schema = f"test_{secrets.token_hex(6)}"
    admin = create_engine(admin_url)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        yield f"{admin_url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(db_url: str, clock: FakeClock) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(db_url, clock=clock)
    try:
        yield opened
    finally:
        opened.close()
