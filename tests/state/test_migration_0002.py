"""Migration 0002 (the phase-2 ranking index) on both backends: a database at 0001 with data
upgrades, the index exists, and the selection's ranking query is answered from it."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from codex_memories.state import MemoryStore
from codex_memories.state.db import create_engine_for_url
from codex_memories.state.migrations import alembic_config, current_revision, head_revision
from codex_memories.state.models import Stage1OutputRow
from codex_memories.state.phase2 import PHASE2_RANKING
from tests.state.support import NOW, insert_output, make_thread

RANK_INDEX = "idx_stage1_outputs_phase2_rank"


def test_a_database_at_0001_with_memories_upgrades_to_the_rank_index_and_selection_uses_it(db_url, clock):
    engine = create_engine_for_url(db_url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "0001")
        assert current_revision(engine) == "0001"
    finally:
        engine.dispose()

    store = MemoryStore.open(db_url, clock=clock)  # opening migrates to head
    try:
        assert current_revision(store.engine) == head_revision()
        assert RANK_INDEX in _index_names(store)

        store.upsert_threads([make_thread(f"thread-{n}") for n in range(3)])
        for n, usage_count in enumerate((None, 5, 2)):
            insert_output(store, f"thread-{n}", source_updated_at=int(NOW) - n, usage_count=usage_count,
                          last_usage=int(NOW) if usage_count else None)
        selected = store.get_phase2_input_refs(n=2, max_unused_days=30)
        assert sorted(output.thread_id for output in selected) == ["thread-1", "thread-2"]

        assert RANK_INDEX in _selection_plan(store)
    finally:
        store.close()


def _index_names(store: MemoryStore) -> set[str]:
    """Read from the catalogue: SQLAlchemy's reflection skips SQLite expression indexes."""
    if store.engine.dialect.name == "postgresql":
        sql = "SELECT indexname FROM pg_indexes WHERE tablename = 'stage1_outputs'"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'stage1_outputs'"
    with store.engine.connect() as connection:
        return {row[0] for row in connection.execute(text(sql))}


def _selection_plan(store: MemoryStore) -> str:
    """The plan of the ranking query exactly as the store sends it (captured, then EXPLAINed)."""
    from sqlalchemy import event

    statements = []

    def record(_conn, _cursor, statement, parameters, _context, _many):
        if "ORDER BY" in statement and "coalesce" in statement.lower():
            statements.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        store.get_phase2_input_refs(n=2, max_unused_days=30)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    statement, parameters = statements[0]
    with store.engine.connect() as connection:
        if store.engine.dialect.name == "postgresql":
            connection.execute(text("SET enable_seqscan = off"))  # three rows: force the choice
            prefix = "EXPLAIN "
        else:
            prefix = "EXPLAIN QUERY PLAN "
        cursor = connection.connection.driver_connection.cursor()
        cursor.execute(prefix + statement, parameters)
        return "\n".join(str(row) for row in cursor.fetchall())


def test_the_rank_index_of_migration_0002_is_the_ranking_the_selection_orders_by(store):
    """Migration 0002 keeps its own text of the ranking (migrations are frozen history), so this
    holds it to `PHASE2_RANKING`: the index the migration made, the index the models declare and
    the selection's ORDER BY are one ranking, or the selection scans and sorts the whole table."""
    terms = _compiled_ranking(store.engine.dialect)
    with store.engine.connect() as connection:
        if store.engine.dialect.name == "postgresql":
            # The server's own rendering of both indexes: it normalises what the two texts spell
            # differently (casts, case, qualification).
            probe = "phase2_ranking_probe"
            connection.execute(text(f"CREATE INDEX {probe} ON stage1_outputs ({', '.join(terms)})"))
            definitions = dict(
                connection.execute(
                    text("SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN (:made, :probe)"),
                    {"made": RANK_INDEX, "probe": probe},
                ).all()
            )
            connection.rollback()
            assert definitions[RANK_INDEX] == definitions[probe].replace(probe, RANK_INDEX)
        else:
            made = connection.execute(
                text("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = :name"), {"name": RANK_INDEX}
            ).scalar_one()
            # SQLite keeps the text as the migration wrote it; names and keywords are case-blind.
            expected = f"CREATE INDEX {RANK_INDEX} ON stage1_outputs ({', '.join(terms)})"
            assert made.lower() == expected.lower()

    declared = next(index for index in Stage1OutputRow.__table__.indexes if index.name == RANK_INDEX)
    assert [str(expression).lower() for expression in declared.expressions] == [term.lower() for term in terms]


def _compiled_ranking(dialect) -> list[str]:
    """Each term of `PHASE2_RANKING` as SQL for `dialect`, with unqualified column names (as an
    index on the one table names them)."""
    return [
        str(term.compile(dialect=dialect, compile_kwargs={"include_table": False, "literal_binds": True}))
        for term in PHASE2_RANKING
    ]
