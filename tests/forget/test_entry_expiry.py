"""Forgetting route `entry_expiry`: a temporary entry past its date leaves the stage-1 row and the
synced inputs once, with one audit action; everything else stays."""

from __future__ import annotations

from datetime import UTC, date, datetime

from codex_memories import paths
from codex_memories.forget.entry_expiry import expire_entries, next_entry_expiry
from codex_memories.memory_folder.inputs import output_ref, rebuild_raw_memories, sync_rollout_summaries
from codex_memories.state.records import ForgetRoute
from codex_memories.typed_entries import EntryMeta, with_meta
from tests.support.memory_home import MemoryHome, remember

FREEZE_META = EntryMeta(type="constraint", weight=0.9, expires=date(2026, 11, 29))
FREEZE = with_meta('"don\'t commit to main this week"', FREEZE_META)
FOLLOW_FREEZE = '"don\'t commit to main this week" -> follow this in future work for this user'
LASTING = with_meta('"never push directly to main"', EntryMeta(type="constraint", weight=1.0))
RAW = f"---\ndescription: d\n---\n### Task 1: t\n\nPreference signals:\n- {FREEZE}\n- {LASTING}\n"


def synced(home: MemoryHome, thread_ids: list[str]):
    store = home.store
    refs = [output_ref(store.get_stage1_output(thread_id)) for thread_id in thread_ids]
    outputs = store.load_stage1_outputs(refs)
    home.memory_root.mkdir(parents=True, exist_ok=True)
    rebuild_raw_memories(home.memory_root, outputs)
    sync_rollout_summaries(home.memory_root, outputs)
    return refs


def test_an_expired_entry_leaves_the_row_and_the_files_and_is_audited_once(home: MemoryHome) -> None:
    remember(home.store, "thread-freeze", raw_memory=RAW)
    remember(home.store, "thread-other", raw_memory="Preference signals:\n- " + LASTING + "\n")
    home.store.replace_stage1_output_texts(
        thread_id="thread-freeze", source_updated_at=1, raw_memory=RAW, rollout_summary=f"# s\n\nPreference signals:\n- {with_meta(FOLLOW_FREEZE, FREEZE_META)}\n"
    )
    refs = synced(home, ["thread-freeze", "thread-other"])
    later = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    actions = expire_entries(home.memory_root, home.store, refs, later)

    assert [(action.route, action.target, action.removed) for action in actions] == [
        (ForgetRoute.entry_expiry, "thread-freeze", {"entry": '"don\'t commit to main this week"', "type": "constraint", "expires": "2026-11-29"})
    ]
    row = home.store.get_stage1_output("thread-freeze")
    assert "this week" not in row.raw_memory and "this week" not in row.rollout_summary
    assert "never push directly to main" in row.raw_memory
    raw_file = (home.memory_root / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8")
    assert "this week" not in raw_file and raw_file.count("never push directly to main") == 2
    summaries = "".join(file.read_text(encoding="utf-8") for file in (home.memory_root / paths.ROLLOUT_SUMMARIES_DIR).glob("*.md"))
    assert "this week" not in summaries
    # The files are exactly what the cleaned rows make: a later sync writes nothing back.
    before = raw_file
    synced(home, ["thread-freeze", "thread-other"])
    assert (home.memory_root / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8") == before
    assert expire_entries(home.memory_root, home.store, refs, later) == []


def test_an_entry_before_its_expiry_stays(home: MemoryHome) -> None:
    remember(home.store, "thread-freeze", raw_memory=RAW)
    refs = synced(home, ["thread-freeze"])
    assert expire_entries(home.memory_root, home.store, refs, datetime(2026, 11, 29, 23, 0, tzinfo=UTC)) == []
    assert "this week" in home.store.get_stage1_output("thread-freeze").raw_memory


def test_no_raw_memories_file_means_nothing_to_expire(home: MemoryHome) -> None:
    home.memory_root.mkdir(parents=True)
    assert expire_entries(home.memory_root, home.store, [], datetime(2026, 12, 1, tzinfo=UTC)) == []


def test_the_next_expiry_is_the_first_dated_entry_of_the_synced_inputs(home: MemoryHome) -> None:
    later = with_meta('"freeze the schema"', EntryMeta(type="constraint", weight=0.8, expires=date(2026, 12, 20)))
    remember(home.store, "thread-freeze", raw_memory=RAW + f"- {later}\n")
    synced(home, ["thread-freeze"])
    assert next_entry_expiry(home.memory_root) == int(datetime(2026, 11, 30, tzinfo=UTC).timestamp())
    home.store.replace_stage1_output_texts(
        thread_id="thread-freeze", source_updated_at=1, raw_memory="Preference signals:\n- " + LASTING + "\n", rollout_summary="summary"
    )
    synced(home, ["thread-freeze"])
    assert next_entry_expiry(home.memory_root) is None
