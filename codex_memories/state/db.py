"""Engines for the state DB: SQLite on a laptop, PostgreSQL for a team.

Contract:
- `create_engine_for_url(url)` accepts any SQLAlchemy URL. `postgresql://` (and `postgres://`)
  is mapped to the psycopg 3 driver. SQLite files get their parent directory created, WAL,
  a 30 s busy timeout and foreign keys on; every SQLite transaction starts with
  `BEGIN IMMEDIATE` (the write lock is taken up front, so two writers never deadlock on a lock
  upgrade) unless the connection carries the `READ_ONLY_OPTION` execution option, which gets a
  plain deferred `BEGIN` so readers never wait for writers.
- `create_read_only_engine(url)` cannot write: a SQLite file is opened with `query_only` (never
  created, its folder never made, its journal mode left as it is, every transaction a plain
  `BEGIN`, each connection closed after use so no `-wal`/`-shm` is left beside the file); a PostgreSQL session starts with `default_transaction_read_only`. For the commands
  that only look (`status`, `doctor`, `show`). `sqlite_database_file(url)` is the file a SQLite
  URL names (None for in-memory SQLite and other databases).
- `shown_db_url(url)`: the URL as anything we print shows it, the password masked. A missing
  driver (`psycopg` for PostgreSQL) or a URL that does not parse is `StateDbUnavailable`, a
  sentence with the masked URL and the extra to install (`pip install 'codex-memories[postgres]'`).
- `is_transient_lock_error(exc)` says whether a failed transaction may simply be run again
  (SQLite busy/locked, PostgreSQL deadlock or serialization failure).
- `writer_queue(engine)` is what a write transaction holds in this process before it begins:
  for a SQLite file, one lock per database file, so the threads of one process take SQLite's
  write lock in turn instead of polling for it; for PostgreSQL (row locks, many writers) and
  in-memory SQLite (one shared connection), nothing.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import NullPool, StaticPool

SQLITE_BUSY_TIMEOUT_SECONDS = 30
READ_ONLY_OPTION = "codex_memories_read_only"

_POSTGRES_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock

# Why: a writer that finds SQLite's write lock taken sleeps in SQLite's busy handler (1, 2, 5,
# ... 25, 50, 100 ms steps) and wakes late, after the lock was free and taken again; with eight
# extraction threads recording arrived answers that stalled some for 0.4 s (benchmarks/README.md,
# "Phase-1 efficiency"). A Python lock hands over at once. Keyed by the file, not the engine: two
# engines on one file in one process share it. Reentrant, so a write inside a write on the same
# thread behaves as before (SQLite's own busy timeout) instead of deadlocking here.
_sqlite_writer_queues: dict[str, threading.RLock] = {}
_sqlite_writer_queues_lock = threading.Lock()


def normalize_url(url: str | URL) -> URL:
    """Map plain PostgreSQL URLs to the psycopg 3 driver; leave every other URL alone."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


class StateDbUnavailable(RuntimeError):
    """The state DB cannot be opened as configured (a driver not installed, a URL that does not parse)."""


# The optional extra that installs each optional module (pyproject's optional-dependencies): the
# one list every "not installed" message reads (`install_hint`).
OPTIONAL_MODULE_EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "zstandard": "zstd"}
_USERINFO_PASSWORD = re.compile(r"(?<=://)([^/@:\s]*):[^/@\s]*@")


def shown_db_url(url: str | URL) -> str:
    """The URL as we print it anywhere (headers, errors, reports): the password masked, even in
    a URL SQLAlchemy cannot parse."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - any unparsable URL is masked by its text instead
        return _USERINFO_PASSWORD.sub(r"\1:***@", str(url))


def create_engine_for_url(url: str | URL) -> Engine:
    parsed = _parse(url)
    if parsed.get_backend_name() == "sqlite":
        return _create_sqlite_engine(parsed)
    return _with_driver_hint(parsed, lambda: create_engine(parsed, pool_pre_ping=True))


def _parse(url: str | URL) -> URL:
    try:
        return normalize_url(url)
    except ArgumentError as error:
        raise StateDbUnavailable(f"the state DB URL {shown_db_url(url)} cannot be read ({error})") from None


def _with_driver_hint(parsed: URL, create: Callable[[], Engine]) -> Engine:
    """`create()`, with a missing driver named with the extra that installs it."""
    try:
        return create()
    except ModuleNotFoundError as error:
        raise StateDbUnavailable(
            f"the state DB {shown_db_url(parsed)} needs the Python module {error.name!r}, which is not installed: {install_hint(error.name)}"
        ) from None


def install_hint(module: str | None) -> str:
    """The command that installs `module`: our extra when it is an optional dependency of ours."""
    extra = OPTIONAL_MODULE_EXTRAS.get((module or "").split(".")[0])
    return f"pip install 'codex-memories[{extra}]'" if extra else f"pip install {module}"


def sqlite_database_file(url: str | URL) -> Path | None:
    parsed = normalize_url(url)
    if parsed.get_backend_name() != "sqlite" or _is_in_memory(parsed.database or ""):
        return None
    return Path(parsed.database or "").expanduser()


def create_read_only_engine(url: str | URL) -> Engine:
    parsed = _parse(url)
    if parsed.get_backend_name() != "sqlite":
        # Every transaction of every session is read-only: the server refuses a write. Added to
        # the URL's own `options` (a search_path, say), not in their place.
        given = parsed.query.get("options") or ()
        options = " ".join([*([given] if isinstance(given, str) else given), "-c default_transaction_read_only=on"])
        return _with_driver_hint(parsed, lambda: create_engine(parsed.update_query_dict({"options": options}), pool_pre_ping=True))
    database = sqlite_database_file(parsed)
    if database is None:
        raise ValueError("an in-memory SQLite database has nothing to read")
    # A URI with `mode=rw`, so that SQLite never creates the file. Not `mode=ro`: a read-only
    # connection to a WAL database makes `-wal` and `-shm` beside it and, unable to checkpoint,
    # leaves them there (inside CODEX_HOME by default) after every `status`. A read-write
    # connection that writes nothing (`query_only`) removes them when it closes as the last one,
    # and NullPool closes it after each use. A file we may not write is opened `mode=ro`.
    location = quote(str(database.absolute()))

    def connect() -> sqlite3.Connection:
        try:
            return sqlite3.connect(f"file:{location}?mode=rw", uri=True, timeout=SQLITE_BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        except sqlite3.OperationalError:
            if not database.is_file():
                raise
            return sqlite3.connect(f"file:{location}?mode=ro", uri=True, timeout=SQLITE_BUSY_TIMEOUT_SECONDS, check_same_thread=False)

    engine = create_engine("sqlite+pysqlite://", creator=connect, poolclass=NullPool)
    _configure_sqlite(engine, lambda cursor: cursor.execute("PRAGMA query_only = ON"), lambda _connection: "BEGIN")
    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def writer_queue(engine: Engine) -> AbstractContextManager[Any]:
    database = engine.url.database or ""
    if not is_sqlite(engine) or _is_in_memory(database):
        return nullcontext()
    key = str(Path(database).expanduser().resolve())
    with _sqlite_writer_queues_lock:
        return _sqlite_writer_queues.setdefault(key, threading.RLock())


def is_transient_lock_error(exc: BaseException) -> bool:
    if not isinstance(exc, DBAPIError):
        return False
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _POSTGRES_RETRYABLE_SQLSTATES:
        return True
    return _is_sqlite_lock_message(str(exc.orig))


def _is_sqlite_lock_message(message: str) -> bool:
    message = message.lower()
    return "database is locked" in message or "database is busy" in message


# Why: switching a file to WAL needs its exclusive lock, and while another connection holds the
# write lock (a process migrating the fresh file) SQLite answers "database is locked" at once,
# without its busy handler (it will not wait while holding a shared lock it would have to
# upgrade). Seen in CI: one of four processes opening a fresh state DB together failed so.
_WAL_RETRY_SECONDS = 0.05


def _switch_to_wal(cursor: Any) -> None:
    """`PRAGMA journal_mode = WAL`, retried until the busy timeout while the file is locked."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if not _is_sqlite_lock_message(str(error)) or time.monotonic() >= deadline:
                raise
        time.sleep(_WAL_RETRY_SECONDS)


def _is_in_memory(database: str) -> bool:
    return database in ("", ":memory:") or database.startswith("file::memory:")


def _create_sqlite_engine(url: URL) -> Engine:
    database = url.database or ""
    in_memory = _is_in_memory(database)
    kwargs: dict[str, Any] = {
        "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False}
    }
    if in_memory:
        # One shared connection, or every checkout would see a different empty database.
        kwargs["poolclass"] = StaticPool
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **kwargs)

    def configure(cursor: Any) -> None:
        if not in_memory:
            _switch_to_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")

    def begin(connection: Any) -> str:
        return "BEGIN" if connection.get_execution_options().get(READ_ONLY_OPTION) else "BEGIN IMMEDIATE"

    _configure_sqlite(engine, configure, begin)
    return engine


def _configure_sqlite(engine: Engine, configure: Callable[[Any], Any], begin: Callable[[Any], str]) -> None:
    """Every new connection gets the busy timeout, then `configure(cursor)`; every transaction
    starts with the statement `begin(connection)` names."""

    @event.listens_for(engine, "connect")
    def _configure_connection(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN out of pysqlite's hands; the "begin" listener below issues it.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
            configure(cursor)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql(begin(connection))
