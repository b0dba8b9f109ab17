"""Engine factory and versioned migrations."""

from __future__ import annotations

import threading
from contextlib import nullcontext
from pathlib import Path

from sqlalchemy import inspect, text

from codex_memories.paths import default_db_url
from codex_memories.state import MemoryStore
from codex_memories.state.db import create_engine_for_url, normalize_url, writer_queue
from codex_memories.state.migrations import VERSION_TABLE, current_revision, head_revision
from tests.state.support import make_thread, query_sql


def test_the_default_database_lives_under_codex_home():
    assert default_db_url("/home/u/.codex") == "sqlite:////home/u/.codex/codex-memories/state.sqlite"
    assert default_db_url("~/.codex").endswith("/.codex/codex-memories/state.sqlite")
    assert "~" not in default_db_url("~/.codex")


def test_plain_postgresql_urls_use_psycopg_and_other_urls_are_untouched():
    assert normalize_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql+psycopg://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("sqlite:///x.sqlite").drivername == "sqlite"


def test_sqlite_gets_its_directory_wal_busy_timeout_and_foreign_keys(tmp_path: Path):
    path = tmp_path / "deep" / "dir" / "state.sqlite"
    engine = create_engine_for_url(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert path.parent.is_dir()
    finally:
        engine.dispose()


def test_writers_to_one_sqlite_file_queue_in_the_process_and_other_databases_do_not(tmp_path: Path):
    path = tmp_path / "state.sqlite"
    first, second = create_engine_for_url(f"sqlite:///{path}"), create_engine_for_url(f"sqlite:///{tmp_path}/./state.sqlite")
    other = create_engine_for_url(f"sqlite:///{tmp_path / 'other.sqlite'}")
    try:
        assert writer_queue(first) is writer_queue(second)  # one file, one queue, whatever the engine
        assert writer_queue(other) is not writer_queue(first)
        assert isinstance(writer_queue(create_engine_for_url("sqlite://")), nullcontext)
        assert isinstance(writer_queue(create_engine_for_url("postgresql://u@127.0.0.1:1/x")), nullcontext)
    finally:
        for engine in (first, second, other):
            engine.dispose()


def test_a_write_transaction_holds_the_files_writer_queue_until_it_commits(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    with MemoryStore.open(url) as store:
        inside, release = threading.Event(), threading.Event()
        queue = writer_queue(create_engine_for_url(url))

        def slow_write(conn):
            inside.set()
            release.wait(10)

        writer = threading.Thread(target=store._write, args=(slow_write,))
        writer.start()
        try:
            assert inside.wait(10)
            assert not queue.acquire(blocking=False)  # another thread's writer waits here, not in SQLite
        finally:
            release.set()
            writer.join(10)
        assert queue.acquire(blocking=False)
        queue.release()


def test_an_in_memory_sqlite_store_works_for_quick_experiments():
    with MemoryStore.open("sqlite://") as store:
        store.upsert_threads([make_thread("a")])
        assert store.get_thread("a") is not None


def test_migrations_create_every_table_and_the_spec_indexes(store):
    inspector = inspect(store.engine)
    tables = set(inspector.get_table_names())
    assert {"threads", "stage1_outputs", "jobs", "forget_audit", "citation_harvest", "team_exports"} <= tables
    assert VERSION_TABLE in tables
    job_indexes = {ix["name"]: ix["column_names"] for ix in inspector.get_indexes("jobs")}
    assert job_indexes["idx_jobs_kind_status_retry_lease"] == [
        "kind", "status", "retry_at", "lease_until",
    ]
    output_indexes = {ix["name"] for ix in inspector.get_indexes("stage1_outputs")}
    assert "idx_stage1_outputs_source_updated_at" in output_indexes
    job_columns = {c["name"] for c in inspector.get_columns("jobs")}
    assert {"input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
            "total_tokens", "retry_remaining", "last_success_watermark"} <= job_columns
    assert inspector.get_pk_constraint("jobs")["constrained_columns"] == ["kind", "job_key"]


def test_running_migrations_twice_is_a_no_op(db_url, clock):
    first = MemoryStore.open(db_url, clock=clock)
    try:
        first.upsert_threads([make_thread("kept")])
        revision = current_revision(first.engine)
        tables = sorted(inspect(first.engine).get_table_names())
    finally:
        first.close()

    second = MemoryStore.open(db_url, clock=clock)
    try:
        assert revision == head_revision() == current_revision(second.engine)
        assert sorted(inspect(second.engine).get_table_names()) == tables
        assert second.get_thread("kept") is not None
        versions = query_sql(second, f"SELECT version_num FROM {VERSION_TABLE}")
        assert [row[0] for row in versions] == [revision]
    finally:
        second.close()


def test_spec_defaults_apply_to_rows_written_by_other_programs(store):
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory,"
                " rollout_summary, generated_at) VALUES ('t', 1, 'r', 's', 1)"
            )
        )
    output = store.get_stage1_output("t")
    assert (output.selected_for_phase2, output.usage_count, output.cwd) == (False, None, None)


def test_a_connection_waits_for_a_writer_before_switching_a_fresh_file_to_wal(tmp_path: Path):
    """SQLite refuses the WAL switch at once while another connection holds the write lock of a
    file still in rollback-journal mode (a process migrating it); the engine retries instead."""
    import sqlite3

    path = tmp_path / "fresh.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write (RESERVED) lock, as a migrating process holds it
    holder.execute("CREATE TABLE t (x)")
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        engine = create_engine_for_url(f"sqlite:///{path}")
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        engine.dispose()
    finally:
        release.join()
        holder.close()


def test_a_read_only_store_leaves_no_wal_or_shm_file_beside_the_database(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    with MemoryStore.open(url) as store:
        store.upsert_threads([make_thread("t1")])
    before = sorted(path.name for path in tmp_path.iterdir())
    assert before == ["state.sqlite"]
    reader = MemoryStore.open_read_only(url)
    assert reader is not None
    reader.status_summary()
    assert reader.get_thread("t1") is not None
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing left even before close
    reader.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == before


def test_a_read_only_store_cannot_write(tmp_path: Path):
    import pytest
    from sqlalchemy.exc import OperationalError

    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    MemoryStore.open(url).close()
    reader = MemoryStore.open_read_only(url)
    with pytest.raises(OperationalError):
        reader.upsert_threads([make_thread("t1")])
    reader.close()


def test_every_printed_state_db_url_hides_its_password_even_when_it_does_not_parse():
    from codex_memories.state.db import shown_db_url

    assert "s3cret" not in shown_db_url("postgresql://memories:s3cret@db.example/memories")
    assert "s3cret" not in shown_db_url("postgres ql://memories:s3cret@db.example/memories")
    assert shown_db_url("sqlite:////home/me/state.sqlite") == "sqlite:////home/me/state.sqlite"


def test_a_missing_postgresql_driver_names_the_extra_to_install(monkeypatch):
    import sys

    import pytest

    from codex_memories.state.db import StateDbUnavailable

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails as when absent
    with pytest.raises(StateDbUnavailable) as raised:
        create_engine_for_url("postgresql://memories:s3cret@db.example/memories")
    message = str(raised.value)
    assert "pip install 'codex-memories[postgres]'" in message and "s3cret" not in message and "\n" not in message
