"""Citation harvest: memory citations in rollouts become usage counts, each counted once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codex_memories.read.harvest import harvest_citations
from codex_memories.state.store import MemoryStore
from tests.support.memory_home import remember
from tests.support.rollout_factory import write_rollout

CITED = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"
CREATED = datetime(2026, 3, 2, 18, 40, tzinfo=UTC)


def citation(*ids: str) -> str:
    return (
        "Used pnpm as before.\n<oai-mem-citation>\n<citation_entries>\n"
        "MEMORY.md:3-5|note=[pnpm preference]\n</citation_entries>\n<rollout_ids>\n"
        + "\n".join(ids)
        + "\n</rollout_ids>\n</oai-mem-citation>"
    )


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    remember(store, CITED)
    yield store
    store.close()


def usage_count(store: MemoryStore, thread_id: str = CITED) -> int:
    return store.get_stage1_output(thread_id).usage_count or 0


def append_turn(path: Path, answer: str, when: datetime) -> None:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    lines = [
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again please"}]}},
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}},
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "agent_message", "message": answer}},
    ]
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def test_a_cited_memory_is_counted_once_however_often_the_rollout_is_rescanned(store: MemoryStore, tmp_path: Path) -> None:
    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["use the package manager"], assistant_messages=[citation(CITED)])

    first = harvest_citations(store, [rollout])
    again = harvest_citations(store, [rollout])

    # The reply is stored as a response item and as an agent_message event: one block, one use.
    assert (first.citation_blocks, first.usage_recorded) == (1, 1)
    assert (again.citation_blocks, again.usage_recorded) == (0, 0)
    assert usage_count(store) == 1
    assert store.get_harvest_offset(str(rollout)) == rollout.stat().st_size


def test_only_citations_appended_after_the_last_scan_are_counted(store: MemoryStore, tmp_path: Path) -> None:
    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["use the package manager"], assistant_messages=[citation(CITED)])
    harvest_citations(store, [rollout])

    append_turn(rollout, citation(CITED), CREATED + timedelta(minutes=5))
    report = harvest_citations(store, [rollout])

    assert report.usage_recorded == 1
    assert usage_count(store) == 2


def test_a_malformed_block_counts_nothing_and_is_reported(store: MemoryStore, tmp_path: Path) -> None:
    broken = citation(CITED).replace("</rollout_ids>", "")
    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["go"], assistant_messages=[broken])

    report = harvest_citations(store, [rollout])

    assert report.usage_recorded == 0
    assert report.problems and report.problems[0][0] == str(rollout)
    assert usage_count(store) == 0


def test_ids_without_a_memory_and_unreadable_files_change_nothing(store: MemoryStore, tmp_path: Path) -> None:
    unknown = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a99"
    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["go"], assistant_messages=[citation(unknown)])
    missing = tmp_path / "gone.jsonl"

    report = harvest_citations(store, [rollout, missing])

    assert (report.cited_ids, report.usage_recorded) == (1, 0)
    assert [path for path, _ in report.unreadable] == [str(missing)]
    assert store.get_harvest_offset(str(missing)) == 0


def test_phase_one_harvests_the_rollouts_discovery_read(prefect_harness: None, tmp_path: Path) -> None:
    from tests.support.memory_home import MemoryHome

    home = MemoryHome(tmp_path)
    remembered, _ = home.rollout("I prefer pnpm over npm in this repo.", cwd="/home/dana/src/alpha")
    home.phase1()
    home.rollout("Set up the repo.", assistant_messages=[citation(remembered)], cwd="/home/dana/src/alpha")

    report = home.phase1()
    home.phase1()  # nothing new: nothing counted twice

    assert report.discovery["citation uses recorded"] == 1
    assert home.store.get_stage1_output(remembered).usage_count == 1


def test_discoverys_scan_is_harvested_without_reading_the_file_again(store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery scanned the file from offset 0 in this run: the harvest takes the blocks past
    its stored offset from that scan (the same ones a scan resumed there finds) and reads
    nothing."""
    from codex_memories.ingest.rollout_scan import scan_rollout
    from codex_memories.read import harvest

    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["use the package manager"], assistant_messages=[citation(CITED)])
    assert harvest_citations(store, [rollout]).usage_recorded == 1
    append_turn(rollout, citation(CITED), CREATED + timedelta(minutes=5))
    append_turn(rollout, "no citation this time", CREATED + timedelta(minutes=6))
    offset = store.get_harvest_offset(str(rollout))
    resumed = scan_rollout(rollout, start_offset=offset)
    discovered = scan_rollout(rollout)
    assert len(discovered.citations) == 2 and len(resumed.citations) == 1

    def no_second_read(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the harvest read a file discovery had scanned")

    monkeypatch.setattr(harvest, "scan_rollout", no_second_read)
    report = harvest_citations(store, [rollout], scans={str(rollout): discovered})

    assert (report.citation_blocks, report.usage_recorded) == (len(resumed.citations), 1)
    assert usage_count(store) == 2
    assert store.get_harvest_offset(str(rollout)) == resumed.end_offset == rollout.stat().st_size


def test_a_scan_that_ends_before_the_stored_offset_is_not_used(store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process (the Stop hook) harvested past the scan's end in between: the scan says
    nothing about what lies beyond, and moving the offset back would count blocks twice, so
    the file is read from the stored offset as without a scan."""
    from codex_memories.ingest.rollout_scan import scan_rollout
    from codex_memories.read import harvest

    rollout = write_rollout(tmp_path, created_at=CREATED, user_messages=["use the package manager"], assistant_messages=["nothing cited"])
    early = scan_rollout(rollout)
    append_turn(rollout, citation(CITED), CREATED + timedelta(minutes=5))
    assert harvest_citations(store, [rollout]).usage_recorded == 1  # the hook, after discovery's scan
    reads: list[int] = []
    real_scan = harvest.scan_rollout

    def counted(path: Path, *, start_offset: int = 0):
        reads.append(start_offset)
        return real_scan(path, start_offset=start_offset)

    monkeypatch.setattr(harvest, "scan_rollout", counted)
    report = harvest_citations(store, [rollout], scans={str(rollout): early})

    assert reads == [rollout.stat().st_size]
    assert (report.citation_blocks, report.usage_recorded) == (0, 0)
    assert usage_count(store) == 1
    assert store.get_harvest_offset(str(rollout)) == rollout.stat().st_size
