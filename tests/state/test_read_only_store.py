"""`MemoryStore.open_read_only`: what `status`, `doctor` and `show` open (issue 30). Nothing is
created, migrated or written; no state DB yet is None, not an empty store."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from codex_memories.state import ForgetRoute, MemoryStore
from codex_memories.state.store import StateDbNotCurrent
from tests.support.memory_home import remember

THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"


def test_no_state_db_yet_is_none_and_leaves_no_file_or_folder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state' / 'state.sqlite'}"

    assert MemoryStore.open_read_only(url) is None
    assert list(tmp_path.iterdir()) == []
    assert MemoryStore.open_read_only("sqlite://") is None  # in memory: nothing to read


def test_a_database_no_run_has_used_is_none(db_url: str) -> None:
    if db_url.startswith("sqlite"):
        Path(db_url.removeprefix("sqlite:///")).parent.mkdir(parents=True)
        Path(db_url.removeprefix("sqlite:///")).write_bytes(b"")  # an empty file

    assert MemoryStore.open_read_only(db_url) is None


def test_a_read_only_store_reads_what_runs_wrote_and_cannot_write(store: MemoryStore, db_url: str) -> None:
    remember(store, THREAD)
    store.record_forget_audit(route=ForgetRoute.text_match, target="pnpm", reason="asked", removed={})

    looking = MemoryStore.open_read_only(db_url)
    assert looking is not None
    try:
        assert looking.status_summary().stage1_outputs == 1
        assert [row.target for row in looking.list_forget_audit()] == ["pnpm"]
        with pytest.raises(DBAPIError, match="read-only|readonly"):
            looking.record_forget_audit(route=ForgetRoute.text_match, target="x", reason="y", removed={})
    finally:
        looking.close()
    assert [row.target for row in store.list_forget_audit()] == ["pnpm"]


@pytest.mark.parametrize("older", [True, False], ids=["older", "newer"])
def test_a_schema_of_another_revision_is_named_not_migrated(store: MemoryStore, db_url: str, older: bool) -> None:
    from codex_memories.state.migrations import VERSION_TABLE, current_revision, head_revision

    known = _first_revision() if older else "ffffffffffff"  # a newer version's revision
    with store.engine.begin() as connection:
        connection.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = :revision"), {"revision": known})

    with pytest.raises(StateDbNotCurrent) as raised:
        MemoryStore.open_read_only(db_url)

    assert raised.value.older is older
    assert ("the next run upgrades it" in str(raised.value)) is older
    assert current_revision(store.engine) == known != head_revision()


def _first_revision() -> str:
    from alembic.script import ScriptDirectory

    from codex_memories.state.migrations import alembic_config

    return ScriptDirectory.from_config(alembic_config()).get_base()
