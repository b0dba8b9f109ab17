"""Migration 0005_scopes on both backends: a database at 0002 with stage-1 outputs upgrades; old
rows become project-level, keyed from their thread's origin (credentials dropped) or cwd; new
rows store the scope and key they are given; `stage1_outputs_for_project` finds them."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from codex_memories.state import MemoryStore
from codex_memories.state.db import create_engine_for_url
from codex_memories.state.migrations import alembic_config, current_revision, head_revision
from tests.state.support import NOW, claim, make_thread

THREADS = (
    ("with-origin", "https://dana:[REDACTED_SECRET]@github.com/acme/a.git", "/work/a"),
    ("cwd-only", None, "/work/notes/"),
    ("no-thread", None, None),
)


def test_a_database_at_0002_upgrades_with_every_old_output_project_level_and_keyed(db_url, clock):
    engine = create_engine_for_url(db_url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "0002")
            for thread_id, origin, cwd in THREADS:
                if cwd is not None:
                    connection.execute(
                        text(
                            "INSERT INTO threads (id, rollout_path, created_at_ms, updated_at_ms, source, cwd, git_origin_url)"
                            " VALUES (:id, :path, 1, 1, 'cli', :cwd, :origin)"
                        ),
                        {"id": thread_id, "path": f"/r/{thread_id}.jsonl", "cwd": cwd, "origin": origin},
                    )
                connection.execute(
                    text(
                        "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, generated_at)"
                        " VALUES (:id, 1, 'raw', 'sum', 1)"
                    ),
                    {"id": thread_id},
                )
        assert current_revision(engine) == "0002"
    finally:
        engine.dispose()

    store = MemoryStore.open(db_url, clock=clock)  # opening migrates to head
    try:
        assert current_revision(store.engine) == head_revision()
        rows = {output.thread_id: (output.scope, output.project_key) for output in (store.get_stage1_output(t) for t, _, _ in THREADS)}
        assert rows == {
            "with-origin": ("project", "github.com/acme/a"),
            "cwd-only": ("project", "/work/notes"),
            "no-thread": ("project", None),
        }
        assert [output.thread_id for output in store.stage1_outputs_for_project("github.com/acme/a")] == ["with-origin"]
        with store.engine.connect() as connection:
            assert "dana" not in str(list(connection.execute(text("SELECT project_key FROM stage1_outputs"))))
    finally:
        store.close()


def test_new_outputs_store_their_scope_and_project_key_and_are_found_by_project(store):
    for thread_id, scope, key in (("t-mixed", "mixed", "github.com/acme/a"), ("t-user", "user", "github.com/acme/a"), ("t-b", "project", "github.com/acme/b")):
        store.upsert_threads([make_thread(thread_id)])
        token = claim(store, thread_id, NOW).ownership_token
        assert store.mark_stage1_job_succeeded(
            thread_id=thread_id, ownership_token=token, source_updated_at=NOW, raw_memory="raw", rollout_summary="sum",
            rollout_slug=None, scope=scope, project_key=key,
        )

    assert [output.thread_id for output in store.stage1_outputs_for_project("github.com/acme/a")] == ["t-mixed"]
    assert [output.thread_id for output in store.stage1_outputs_for_project("github.com/acme/a", include_user_level=True)] == ["t-mixed", "t-user"]
    [b] = store.stage1_outputs_for_project("github.com/acme/b")
    assert (b.scope, b.project_key, b.cwd) == ("project", "github.com/acme/b", make_thread("t-b").cwd)
    assert store.stage1_outputs_for_project("github.com/acme/c") == []
    # The phase-2 selection hands the scope on with the payloads it describes (loaded as phase 2
    # loads them: the selected refs, then their rows).
    refs = store.get_phase2_input_refs(n=10, max_unused_days=30)
    selected = {output.thread_id: (output.scope, output.project_key) for output in store.load_stage1_outputs(refs)}
    assert selected == {"t-mixed": ("mixed", "github.com/acme/a"), "t-user": ("user", "github.com/acme/a"), "t-b": ("project", "github.com/acme/b")}
