"""Versioned schema migrations (alembic), run in code: no `alembic.ini` is needed at runtime.

`upgrade_to_head(engine)` brings any state DB to the newest revision and is a no-op when it is
already there. It runs in one transaction that first takes a lock (SQLite `BEGIN IMMEDIATE`;
PostgreSQL advisory lock), so several processes opening a fresh DB at once migrate it exactly
once. For development, `alembic -c codex_memories/state/migrations/alembic.ini revision -m ...`
creates a new revision file in `versions/`.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

MIGRATIONS_DIR = Path(__file__).resolve().parent
VERSION_TABLE = "codex_memories_alembic_version"
_POSTGRES_MIGRATION_LOCK_KEY = 7_302_143_000


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def is_known_revision(revision: str) -> bool:
    """Whether `revision` is one of this version's (an older or the newest schema), not one of a
    newer version's."""
    from alembic.util import CommandError

    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def upgrade_to_head(engine: Engine) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _POSTGRES_MIGRATION_LOCK_KEY}
            )
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
