"""Alembic environment: migrations run on the connection handed over by `upgrade_to_head`.

Run from the `alembic` command line (development only), it connects to `sqlalchemy.url` of the
ini file instead.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from codex_memories.state.db import create_engine_for_url
from codex_memories.state.migrations import VERSION_TABLE
from codex_memories.state.models import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection handed over and no sqlalchemy.url configured")
    engine = create_engine_for_url(url)
    try:
        with engine.connect() as fresh_connection:
            _run(fresh_connection)
            fresh_connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
_run_online()
