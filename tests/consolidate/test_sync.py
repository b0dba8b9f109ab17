"""Phase-2 input sync: a selection already on disk is reused; any drift falls back to a full sync."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codex_memories.consolidate.steps import Phase2Lease, select_inputs, sync_inputs
from codex_memories.memory_folder.workspace import ensure_git_baseline, ensure_layout, reset_baseline, workspace_diff
from codex_memories.state.records import ThreadRecord
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalWorkspace, open_memory_root

NOW = int(time.time())
LEASE = Phase2Lease(ownership_token="token", input_watermark=0, worker_id="test")


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    opened = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield opened
    opened.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "memories"
    ensure_layout(folder)
    ensure_git_baseline(folder)
    return folder


def add_output(store: MemoryStore, index: int, *, updated: int = NOW - 3600, text: str = "raw") -> str:
    thread_id = f"00000000-0000-4000-8000-{index:012d}"
    store.upsert_threads(
        [ThreadRecord(id=thread_id, rollout_path=f"/r/{index}.jsonl", created_at_ms=updated * 1000, updated_at_ms=updated * 1000, source="cli", cwd="/app")]
    )
    claim = store.try_claim_stage1_job(thread_id=thread_id, worker_id="w", source_updated_at=updated, lease_seconds=60, max_running_jobs=99)
    assert store.mark_stage1_job_succeeded(
        thread_id=thread_id, ownership_token=claim.ownership_token, source_updated_at=updated,
        raw_memory=f"{text} {index}", rollout_summary=f"summary {index}", rollout_slug=f"slug-{index}",
    )
    return thread_id


def sync(store: MemoryStore, root: Path):
    selection = select_inputs(store, lease=LEASE, max_outputs=256, max_unused_days=30)
    return sync_inputs(LocalWorkspace(open_memory_root(root)), selection, store)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(root)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*.md"))
    }


def test_an_unchanged_selection_is_reused_without_writing(store: MemoryStore, root: Path) -> None:
    for index in range(3):
        add_output(store, index)
    first = sync(store, root)
    assert not first.reused and len(first.summaries.written) == 3
    before = snapshot(root)
    again = sync(store, root)
    assert again.reused
    assert snapshot(root) == before


def test_a_new_output_means_a_full_sync(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    sync(store, root)
    add_output(store, 1)
    report = sync(store, root)
    assert not report.reused and len(list((root / "rollout_summaries").iterdir())) == 2


def test_a_user_edit_of_a_code_written_file_is_restored(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    sync(store, root)
    [summary] = (root / "rollout_summaries").iterdir()
    original = summary.read_text()
    summary.write_text("edited by hand\n")
    report = sync(store, root)
    assert not report.reused and summary.read_text() == original


def test_a_hand_made_or_deleted_summary_means_a_full_sync(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    add_output(store, 1)
    sync(store, root)
    extra = root / "rollout_summaries" / "hand-made.md"
    extra.write_text("mine\n")
    assert not sync(store, root).reused and not extra.exists()
    first = sorted((root / "rollout_summaries").iterdir())[0]
    first.unlink()
    assert not sync(store, root).reused and first.exists()


def test_a_sync_cut_short_is_not_taken_for_a_finished_one(store: MemoryStore, root: Path, monkeypatch) -> None:
    add_output(store, 0)
    sync(store, root)
    add_output(store, 1)
    import codex_memories.consolidate.steps as phase2

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(phase2, "rebuild_raw_memories", crash)
    with pytest.raises(OSError):
        sync(store, root)
    monkeypatch.undo()
    assert not sync(store, root).reused  # the record was removed before the failed sync started
    assert "raw 1" in (root / "raw_memories.md").read_text()


def test_the_bookkeeping_folder_is_never_part_of_the_baseline_or_the_diff(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    sync(store, root)
    assert (root / ".codex-memories" / "synced-inputs.json").is_file()
    diff = workspace_diff(root)
    assert diff.changes and not any(change.path.startswith(".codex-memories") for change in diff.changes)
    reset_baseline(root)
    assert workspace_diff(root).changes == []


def test_a_summary_that_leaves_the_selection_is_deleted_and_audited_once(store: MemoryStore, root: Path) -> None:
    add_output(store, 0, updated=NOW - 7200)
    add_output(store, 1)
    sync(store, root)
    before = {path.name for path in (root / "rollout_summaries").iterdir()}
    top_one = select_inputs(store, lease=LEASE, max_outputs=1, max_unused_days=30)  # the top-N cap

    report = sync_inputs(LocalWorkspace(open_memory_root(root)), top_one, store)

    [left] = before - {path.name for path in (root / "rollout_summaries").iterdir()}
    path = f"rollout_summaries/{left}"
    assert [(action.route, action.target) for action in report.forgotten] == [("selection_window", path)]
    assert [(row.route, row.target, row.removed) for row in store.list_forget_audit()] == [("selection_window", path, {"file": path})]
    assert sync_inputs(LocalWorkspace(open_memory_root(root)), top_one, store).reused and len(store.list_forget_audit()) == 1
