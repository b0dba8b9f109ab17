"""Discovery: rollout files become threads, incrementally; bad files are counted, not fatal."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codex_memories.ingest import rollout_files
from codex_memories.ingest.discovery import discover_rollouts
from codex_memories.state.records import MemoryMode
from codex_memories.state.store import MemoryStore
from tests.support.rollout_factory import NO_REPOSITORY, write_rollout

NOW = datetime.now(UTC)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    opened = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield opened
    opened.close()


def discover(store: MemoryStore, home: Path, **overrides: bool):
    options = {"generate_memories": True, "disable_on_external_context": False, **overrides}
    return discover_rollouts(store, home, now_ms=int(NOW.timestamp() * 1000), **options)


def test_sessions_become_threads_with_their_metadata(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(
        tmp_path, created_at=NOW - timedelta(hours=20), cwd="/home/dana/src/app", user_messages=["Fix the flaky test"]
    )
    report = discover(store, tmp_path)
    assert (report.files_seen, report.files_read, report.threads_upserted) == (1, 1, 1)
    thread_id = path.stem.split("-", 6)[-1]
    thread = store.get_thread(thread_id)
    assert thread is not None
    assert thread.cwd == "/home/dana/src/app"
    assert thread.source == "cli"
    assert thread.git_branch == "main"
    assert thread.first_user_message == "Fix the flaky test"
    assert thread.memory_mode == MemoryMode.enabled
    assert thread.rollout_path == str(path)
    # Last activity is the last line's timestamp, after the creation time.
    assert thread.updated_at_ms > thread.created_at_ms


def test_unchanged_files_are_not_read_again(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello there"])
    discover(store, tmp_path)
    again = discover(store, tmp_path)
    assert (again.files_seen, again.files_read, again.files_unchanged) == (1, 0, 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"timestamp":"2030-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"x"}}\n')
    changed = discover(store, tmp_path)
    assert changed.files_read == 1


def test_archived_exec_and_subagent_sessions_are_recorded(store: MemoryStore, tmp_path: Path) -> None:
    archived = write_rollout(tmp_path, created_at=NOW - timedelta(days=2), user_messages=["old work"], archived=True)
    exec_path = write_rollout(tmp_path, created_at=NOW - timedelta(days=1), source="exec", user_messages=["run it"])
    sub = write_rollout(
        tmp_path, created_at=NOW - timedelta(days=1, hours=1), source={"subagent": "review"}, user_messages=["review"]
    )
    report = discover(store, tmp_path)
    assert report.archived_files == 1
    assert report.non_interactive == 2
    by_path = {thread.rollout_path: thread for thread in (store.get_thread(p.stem.split("-", 6)[-1]) for p in (archived, exec_path, sub))}
    assert by_path[str(archived)].archived is True
    assert by_path[str(exec_path)].source == "exec"
    assert by_path[str(sub)].source == "subagent"


def test_external_context_pollutes_only_when_configured(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["look it up"], web_search=True)
    thread_id = path.stem.split("-", 6)[-1]
    discover(store, tmp_path)
    assert store.get_thread(thread_id).memory_mode == MemoryMode.enabled
    assert store.get_thread(thread_id).used_external_context is True

    other = tmp_path / "other"
    path = write_rollout(other, created_at=NOW - timedelta(hours=20), user_messages=["look it up"], web_search=True)
    report = discover(store, other, disable_on_external_context=True)
    assert report.polluted_thread_ids == [path.stem.split("-", 6)[-1]]
    assert store.get_thread(report.polluted_thread_ids[0]).memory_mode == MemoryMode.polluted


def test_threads_created_while_generation_is_off_are_disabled(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    discover(store, tmp_path, generate_memories=False)
    assert store.get_thread(path.stem.split("-", 6)[-1]).memory_mode == MemoryMode.disabled


def test_a_rollout_that_disappeared_is_noticed(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    discover(store, tmp_path)
    path.unlink()
    report = discover(store, tmp_path)
    assert report.missing_thread_ids == [path.stem.split("-", 6)[-1]]
    assert [thread.id for thread in store.list_missing_threads()] == report.missing_thread_ids


def test_archiving_moves_a_thread_without_calling_it_missing(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    discover(store, tmp_path)
    target = tmp_path / "archived_sessions" / path.name
    target.parent.mkdir(parents=True)
    os.rename(path, target)
    report = discover(store, tmp_path)
    assert report.missing_thread_ids == []
    thread = store.get_thread(path.stem.split("-", 6)[-1])
    assert thread.archived is True and thread.rollout_path == str(target)


def test_damaged_lines_are_counted_and_garbage_files_reported(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    with path.open("ab") as handle:
        handle.write(b"{not json}\n\xff\xfe binary \x00\n{\"timestamp\":\"2026-")
    garbage = path.parent / "rollout-2026-01-01T00-00-00-notauuid.jsonl"
    garbage.write_bytes(b"\x00\x01\x02 nothing useful\n")
    report = discover(store, tmp_path)
    assert report.lines_skipped >= 3
    assert report.skipped_by_reason["partial_last_line"] == 1
    assert [path for path, _ in report.unreadable] == [str(garbage)]
    assert store.get_thread(path.stem.split("-", 6)[-1]) is not None


def test_phase1_records_which_folder_is_which_project_from_the_latest_session(store: MemoryStore, tmp_path: Path) -> None:
    from codex_memories import paths
    from codex_memories.ingest.discovery import record_project_keys
    from codex_memories.scopes import read_recorded_project_keys

    write_rollout(tmp_path, created_at=NOW - timedelta(hours=30), cwd="/w/app", repository_url="git@example.org:team/old-name.git", user_messages=["a"])
    write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), cwd="/w/app", repository_url="https://example.org/team/app.git", user_messages=["b"])
    write_rollout(tmp_path, created_at=NOW - timedelta(hours=30), cwd="/w/gone", repository_url="https://example.org/team/gone", user_messages=["c"])
    write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), cwd="/w/gone", repository_url=NO_REPOSITORY, user_messages=["d"])
    write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), cwd="/w/notes", repository_url=NO_REPOSITORY, user_messages=["e"])
    discover(store, tmp_path)

    assert record_project_keys(store, tmp_path) == 1
    assert read_recorded_project_keys(paths.recorded_project_keys_path(tmp_path)) == {"/w/app": "example.org/team/app"}


def thread_id_of(path: Path) -> str:
    return path.stem.split("-", 6)[-1]


def test_files_that_are_not_rollouts_beside_good_ones_are_named_outcomes_and_the_good_ones_are_read(
    store: MemoryStore, tmp_path: Path
) -> None:
    good = [write_rollout(tmp_path, created_at=NOW - timedelta(hours=20 + hour), user_messages=["hello"]) for hour in range(3)]
    day = good[0].parent
    os.mkfifo(day / "rollout-2026-01-01T00-00-00-0193a000-0000-7000-8000-000000000001.jsonl")
    (day / "rollout-2026-01-01T00-00-00-0193a000-0000-7000-8000-000000000002.jsonl").symlink_to("/dev/zero")
    with (day / "rollout-2026-01-01T00-00-00-0193a000-0000-7000-8000-000000000003.jsonl").open("wb") as sparse:
        sparse.truncate(rollout_files.MAX_ROLLOUT_BYTES + 1)
    undecodable = tmp_path / "sessions" / os.fsdecode(b"\xff")
    undecodable.mkdir()
    write_rollout(undecodable, created_at=NOW - timedelta(hours=30), user_messages=["unreachable"])

    report = discover(store, tmp_path)

    assert all(store.get_thread(thread_id_of(path)) is not None for path in good)
    assert report.threads_upserted == 3
    assert report.files_by_outcome == {
        "skipped_rollout_not_a_file": 2,
        "skipped_rollout_unusable_path": 1,
        "failed_rollout_too_large": 1,
    }
    assert sorted(reason.split(":")[0] for _, reason in report.unreadable) == sorted(
        ["skipped_rollout_not_a_file"] * 2 + ["skipped_rollout_unusable_path", "failed_rollout_too_large"]
    )
    facts = report.facts()
    assert facts["files left out: skipped_rollout_not_a_file"] == 2
    assert facts["unreadable files"] == 4


def test_a_rollout_swapped_for_a_fifo_is_left_out_but_not_taken_for_deleted(store: MemoryStore, tmp_path: Path) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    discover(store, tmp_path)
    path.unlink()
    os.mkfifo(path)

    report = discover(store, tmp_path)

    assert report.missing_thread_ids == []
    assert report.files_by_outcome == {"skipped_rollout_not_a_file": 1}


def test_threads_under_a_folder_that_cannot_be_listed_are_not_taken_for_deleted(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    discover(store, tmp_path)
    real_scandir = os.scandir

    def scandir(folder):
        if os.fspath(folder) == str(path.parent):
            raise PermissionError(13, "Permission denied", os.fspath(folder))
        return real_scandir(folder)

    monkeypatch.setattr(rollout_files.os, "scandir", scandir)
    report = discover(store, tmp_path)

    assert report.missing_thread_ids == []
    assert report.files_by_outcome == {"failed_rollout_unreadable": 1}



def test_files_whose_session_meta_cannot_be_read_are_named_with_their_reason(store: MemoryStore, tmp_path: Path) -> None:
    good = write_rollout(tmp_path, created_at=NOW - timedelta(hours=20), user_messages=["hello"])
    folder = good.parent
    text = good.read_text(encoding="utf-8")
    first, rest = text.split("\n", 1)
    names = {
        "nul": "rollout-2026-01-01T00-00-01-00000000-0000-4000-8000-000000000001.jsonl",
        "utf16": "rollout-2026-01-01T00-00-02-00000000-0000-4000-8000-000000000002.jsonl",
        "compressed": "rollout-2026-01-01T00-00-03-00000000-0000-4000-8000-000000000003.jsonl",
    }
    (folder / names["nul"]).write_bytes(first.replace('"cwd"', '"c\x00wd"', 1).encode().replace(b"\\u0000", b"\x00").replace(b'"id"', b'"i\x00d"', 1) + b"\n" + rest.encode())
    (folder / names["utf16"]).write_bytes(text.encode("utf-16"))
    import gzip

    (folder / names["compressed"]).write_bytes(gzip.compress(text.encode()))

    report = discover(store, tmp_path)

    named = dict(report.unreadable)
    for name in names.values():
        reason = named[str(folder / name)]
        assert reason.startswith("failed_rollout_unreadable: no readable session_meta line")
    assert str(good) not in named

    # Unchanged, they are not read again, and still named: in the next run's report and in `status`.
    again = discover(store, tmp_path)
    assert dict(again.unreadable) == named
    from codex_memories.ingest.discovery import read_unreadable_record
    from codex_memories_cli.views import unreadable_lines

    assert dict(read_unreadable_record(tmp_path)) == named
    shown = unreadable_lines(tmp_path)
    assert shown[0].startswith("Not read:       3 file(s)") and all(str(folder / name) in "\n".join(shown) for name in names.values())
