"""Thread bookkeeping for discovery: upserts, file states, missing files, memory modes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codex_memories.ingest.discovery import discover_rollouts
from codex_memories.state import GLOBAL_JOB_KEY, JobKind, MemoryMode, MemoryStore, Phase2ClaimOutcome
from tests.state.support import LEASE, NOW, FakeClock, claim_and_succeed, make_thread
from tests.support.rollout_factory import write_rollout


def test_upsert_inserts_new_threads_and_updates_known_ones(store):
    assert store.upsert_threads([make_thread("a", rollout_size=10, rollout_mtime_ns=1)]) == 1
    assert store.upsert_threads(
        [make_thread("a", rollout_size=20, rollout_mtime_ns=2, cwd="/elsewhere"), make_thread("b")]
    ) == 2

    assert store.get_thread("a").cwd == "/elsewhere"
    assert store.get_rollout_file_states() == {
        make_thread("a").rollout_path: (20, 2),
        make_thread("b").rollout_path: (0, 0),
    }
    assert store.get_thread("unknown") is None


def test_get_threads_returns_the_known_rows_by_id_across_chunks_of_ids(store):
    ids = [f"t{index:04d}" for index in range(1_200)]  # more than one IN-list chunk
    store.upsert_threads([make_thread(thread_id) for thread_id in ids[::2]])
    found = store.get_threads([*ids, "unknown", ids[0]])
    assert sorted(found) == ids[::2]
    assert found[ids[2]] == store.get_thread(ids[2])
    assert store.get_threads([]) == {}


def test_upsert_round_trips_every_thread_field(store):
    original = make_thread(
        "full",
        originator="codex_cli_rs",
        cli_version="0.40.0",
        model_provider="openai",
        forked_from_id="parent",
        archived=True,
        archived_at_ms=123,
        git_sha="abc",
        git_branch="main",
        git_origin_url="git@example.com:x.git",
        used_external_context=True,
        rollout_size=99,
        rollout_mtime_ns=1_700_000_000_000_000_000,
    )
    store.upsert_threads([original])

    assert store.get_thread("full") == original


@pytest.mark.parametrize("sticky", [MemoryMode.polluted, MemoryMode.disabled])
def test_upsert_never_re_enables_a_polluted_or_disabled_thread(store, sticky):
    store.upsert_threads([make_thread("t")])
    store.set_thread_memory_mode("t", sticky)

    store.upsert_threads([make_thread("t", memory_mode=MemoryMode.enabled, updated_at_ms=5)])

    thread = store.get_thread("t")
    assert (thread.memory_mode, thread.updated_at_ms) == (sticky, 5)


def test_upsert_may_pollute_an_enabled_thread(store):
    store.upsert_threads([make_thread("t")])

    store.upsert_threads([make_thread("t", memory_mode=MemoryMode.polluted)])

    assert store.get_thread("t").memory_mode is MemoryMode.polluted


def test_upsert_keeps_the_last_duplicate_of_a_batch(store):
    assert store.upsert_threads([make_thread("t", cwd="/first"), make_thread("t", cwd="/last")]) == 1

    assert store.get_thread("t").cwd == "/last"


def test_missing_files_are_marked_once_and_cleared_when_seen_again(store, clock: FakeClock):
    store.upsert_threads([make_thread("a"), make_thread("b")])
    path_a = make_thread("a").rollout_path

    assert store.mark_threads_missing([path_a, "/not/known.jsonl"]) == ["a"]
    clock.advance(10)
    assert store.mark_threads_missing([path_a]) == []
    missing = store.list_missing_threads()
    assert [(t.id, t.missing_since_ms) for t in missing] == [("a", NOW * 1000)]

    store.upsert_threads([make_thread("a")])
    assert store.list_missing_threads() == []


def test_memory_mode_counts_include_every_mode(store):
    store.upsert_threads(
        [make_thread("a"), make_thread("b"), make_thread("c", memory_mode=MemoryMode.disabled)]
    )

    assert store.count_threads_by_memory_mode() == {"enabled": 2, "disabled": 1, "polluted": 0}


def test_setting_a_memory_mode_reports_whether_it_changed(store):
    store.upsert_threads([make_thread("a")])

    assert store.set_thread_memory_mode("a", "disabled")
    assert not store.set_thread_memory_mode("a", MemoryMode.disabled)
    assert store.set_thread_memory_mode("a", MemoryMode.enabled)
    assert not store.set_thread_memory_mode("unknown", MemoryMode.disabled)
    with pytest.raises(ValueError):
        store.set_thread_memory_mode("a", "sleepy")


def test_disabling_a_selected_thread_enqueues_phase2(store: MemoryStore):
    store.upsert_threads([make_thread("a")])
    claim_and_succeed(store, "a", 100)
    lock = store.try_claim_global_phase2_job(worker_id="w", lease_seconds=LEASE)
    assert lock.outcome is Phase2ClaimOutcome.claimed
    store.mark_global_phase2_job_succeeded(
        ownership_token=lock.ownership_token,
        completed_watermark=100,
        selected=store.list_stage1_outputs_for_global(1),
    )

    assert store.set_thread_memory_mode("a", MemoryMode.disabled)

    assert store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY).status == "pending"


def test_thread_cwds_are_the_distinct_recorded_directories_sorted(store):
    store.upsert_threads([
        make_thread("a", cwd="/w/site"), make_thread("b", cwd="/w/app"), make_thread("c", cwd="/w/app"), make_thread("d", cwd=None),
    ])
    assert store.thread_cwds() == ["/w/app", "/w/site"]


def test_team_exports_are_recorded_once_per_folder(store, clock):
    store.record_team_export("/w/app", "github.com/acme/app")
    store.record_team_export("/w/app-clone", "github.com/acme/app")
    store.record_team_export("/w/app", "github.com/acme/app")  # a second export refreshes the row
    assert store.team_export_folders() == ["/w/app", "/w/app-clone"]


def test_surrogates_nul_and_bad_bytes_in_a_rollout_are_stored_replaced_and_counted(store: MemoryStore, tmp_path: Path) -> None:
    """On both backends: PostgreSQL refuses NUL in text, and neither stores a lone surrogate."""
    day = tmp_path / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    thread_id = "0193a000-0000-7000-8000-000000000009"
    path = day / f"rollout-2026-01-01T00-00-00-{thread_id}.jsonl"
    path.write_bytes(
        b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"' + thread_id.encode()
        + b'","cwd":"/src/a\\ud800b","source":"cli","git":{"branch":"ma\\u0000in"}}}\n'
        b'{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user",'
        b'"content":[{"type":"input_text","text":"caf\xe9 \\udc00 please"}]}}\n'
    )
    good = write_rollout(tmp_path, created_at=datetime.now(UTC) - timedelta(hours=20), user_messages=["hello"])

    report = discover_rollouts(
        store, tmp_path, generate_memories=True, disable_on_external_context=False, now_ms=int(datetime.now(UTC).timestamp() * 1000)
    )

    thread = store.get_thread(thread_id)
    assert thread.cwd == "/src/a\ufffdb"
    assert thread.git_branch == "ma\ufffdin"
    assert thread.first_user_message == "caf\ufffd \ufffd please"
    assert store.get_thread(good.stem.split("-", 6)[-1]) is not None
    assert report.lines_repaired == 2
    assert report.repaired_by_reason == {"lone_surrogate": 2, "nul_character": 1, "invalid_utf8": 1}
    assert report.facts()["lines repaired: lone_surrogate"] == 2


def test_metadata_no_row_can_be_keyed_or_indexed_by_is_read_as_absent(store: MemoryStore, tmp_path: Path) -> None:
    """On PostgreSQL a 10 KB session id failed the whole batch (`index row requires 10016
    bytes`); the id falls back to the file name's, and a cwd or a remote of 100 KB is no cwd."""
    import json
    import secrets

    day = tmp_path / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    file_id = "0193a000-0000-7000-8000-00000000000a"
    meta = {
        "id": secrets.token_hex(5_000),
        "forked_from_id": "x" * 300,
        "cwd": "/" + secrets.token_hex(50_000),
        "source": "s" * 10_000,
        "git": {"repository_url": "https://github.com/" + secrets.token_hex(50_000), "branch": "b" * 100_000},
    }
    (day / f"rollout-2026-01-01T00-00-00-{file_id}.jsonl").write_text(
        json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": meta}) + "\n", encoding="utf-8"
    )
    good = write_rollout(tmp_path, created_at=datetime.now(UTC) - timedelta(hours=20), user_messages=["hello"])

    report = discover_rollouts(
        store, tmp_path, generate_memories=True, disable_on_external_context=False, now_ms=int(datetime.now(UTC).timestamp() * 1000)
    )

    assert report.threads_upserted == 2
    thread = store.get_thread(file_id)
    assert (thread.cwd, thread.git_origin_url, thread.git_branch, thread.forked_from_id, thread.source) == (None, None, None, None, "unknown")
    assert store.get_thread(good.stem.split("-", 6)[-1]) is not None
