"""Migration 0003_scale (the claim's keyset index) on both backends: a database at 0002 with
threads upgrades, the new index replaces the old one, and the claim's page query uses it."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from codex_memories.state import MemoryStore
from codex_memories.state.db import create_engine_for_url
from codex_memories.state.migrations import alembic_config, current_revision, head_revision
from tests.state.support import HOUR, NOW, make_thread


def test_a_database_at_0002_upgrades_to_the_claim_keyset_index(db_url, clock):
    engine = create_engine_for_url(db_url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "0002")
        assert current_revision(engine) == "0002"
    finally:
        engine.dispose()

    store = MemoryStore.open(db_url, clock=clock)  # opening migrates to head
    try:
        assert current_revision(store.engine) == head_revision()
        names = _thread_index_names(store)
        assert "idx_threads_claim_scale" in names and "idx_threads_claim" not in names

        store.upsert_threads([make_thread(f"t{n}", updated_at_ms=(NOW - 13 * HOUR - n) * 1000) for n in range(3)])
        claims = store.claim_stage1_jobs_for_startup(
            worker_id="w", current_thread_id=None, scan_limit=10, max_claimed=2, max_age_days=30,
            min_rollout_idle_hours=12, allowed_sources=["cli"],
        )
        assert [claim.thread_id for claim in claims] == ["t0", "t1"]
    finally:
        store.close()


def _thread_index_names(store: MemoryStore) -> set[str]:
    if store.engine.dialect.name == "postgresql":
        sql = "SELECT indexname FROM pg_indexes WHERE tablename = 'threads' AND schemaname = current_schema()"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'threads'"
    with store.engine.connect() as connection:
        return {row[0] for row in connection.execute(text(sql))}
