"""Phase 2 step 2 (the early finish): a rerun finishes before any workspace work only when nothing that decides the
selection changed (time passing included) and the folder is still its baseline."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from codex_memories.consolidate.steps import (
    Phase2Lease,
    SettledCheck,
    check_settled,
    claim_global_lock,
    mark_succeeded,
    publish_workspace,
    record_settled,
    select_inputs,
    sync_inputs,
)
from codex_memories.memory_folder.inputs import read_settled_record, storage_bytes
from codex_memories.memory_folder.workspace import ensure_git_baseline, ensure_layout, workspace_diff
from codex_memories.paths import MEMORY_FILE, MEMORY_SUMMARY_FILE
from codex_memories.state.records import MemoryMode, ThreadRecord
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalWorkspace, open_memory_root

NOW = int(time.time())
MAX_OUTPUTS = 256
MAX_UNUSED_DAYS = 30
DAY = 86_400


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


def add_output(store: MemoryStore, index: int, *, updated: int = NOW - 3600) -> str:
    thread_id = f"00000000-0000-4000-8000-{index:012d}"
    store.upsert_threads(
        [ThreadRecord(id=thread_id, rollout_path=f"/r/{index}.jsonl", created_at_ms=updated * 1000,
                      updated_at_ms=updated * 1000, source="cli", cwd="/app")]
    )
    claim = store.try_claim_stage1_job(thread_id=thread_id, worker_id="w", source_updated_at=updated, lease_seconds=60, max_running_jobs=99)
    assert store.mark_stage1_job_succeeded(
        thread_id=thread_id, ownership_token=claim.ownership_token, source_updated_at=updated,
        raw_memory=f"raw {index}", rollout_summary=f"summary {index}", rollout_slug=f"slug-{index}",
    )
    return thread_id


def claim(store: MemoryStore) -> Phase2Lease:
    result = claim_global_lock(store, worker_id="test", lease_seconds=3600, cooldown_seconds=0, force=True)
    assert result.ownership_token is not None
    return Phase2Lease(ownership_token=result.ownership_token, input_watermark=result.input_watermark or 0, worker_id="test")


# Step 2 (the early finish) reads only the claimed input watermark from the lease.
UNCLAIMED = Phase2Lease(ownership_token="", input_watermark=0, worker_id="test")


def check(store: MemoryStore, root: Path, lease: Phase2Lease = UNCLAIMED, *, now: int = NOW,
          max_unused_days: int = MAX_UNUSED_DAYS) -> SettledCheck:
    return check_settled(root, store, lease=lease, max_outputs=MAX_OUTPUTS, max_unused_days=max_unused_days, now=now)


def full_successful_run(store: MemoryStore, root: Path, *, now: int = NOW) -> SettledCheck:
    """What the flow does when step 2 cannot decide: the full run, a baseline reset, the mark and the record."""
    lease = claim(store)
    settled = check(store, root, lease, now=now)
    assert not settled.settled
    selection = select_inputs(store, lease=lease, max_outputs=MAX_OUTPUTS, max_unused_days=MAX_UNUSED_DAYS)
    sync_inputs(LocalWorkspace(open_memory_root(str(root))), selection, store)
    workspace_diff(root)
    # What a consolidator leaves behind.
    (root / MEMORY_FILE).write_text("# Memory\n")
    (root / MEMORY_SUMMARY_FILE).write_text("v1\nsummary\n")
    publish_workspace(LocalWorkspace(open_memory_root(str(root))))
    assert mark_succeeded(store, lease=lease, selection=selection, usage=None).owned
    assert record_settled(root, store, settled, storage_bytes=storage_bytes(root))
    return settled


def test_a_rerun_with_nothing_changed_is_settled_with_the_last_selection(store: MemoryStore, root: Path) -> None:
    ids = [add_output(store, index) for index in range(3)]
    full_successful_run(store, root)

    lease = claim(store)
    settled = check(store, root, lease)
    assert settled.settled, settled.reason
    assert sorted(ref.thread_id for ref in settled.selection.refs) == sorted(ids)
    assert settled.selection.new_watermark == max(lease.input_watermark, NOW - 3600)
    assert settled.storage_bytes == storage_bytes(root)
    # Finishing with it keeps the same flags as the full run marked.
    before = store.get_phase2_selected_snapshots()
    assert mark_succeeded(store, lease=lease, selection=settled.selection, usage=None).owned
    assert store.get_phase2_selected_snapshots() == before


@pytest.mark.parametrize(
    "change",
    ["new output", "refreshed output", "usage", "thread disabled", "thread moved", "deleted output"],
)
def test_any_change_to_what_decides_the_selection_means_the_full_run(store: MemoryStore, root: Path, change: str) -> None:
    ids = [add_output(store, index) for index in range(3)]
    full_successful_run(store, root)

    if change == "new output":
        add_output(store, 9)
    elif change == "refreshed output":
        add_output(store, 1, updated=NOW - 60)
    elif change == "usage":
        assert store.record_stage1_output_usage([ids[0]]) == 1
    elif change == "thread disabled":
        assert store.set_thread_memory_mode(ids[0], MemoryMode.disabled)
    elif change == "thread moved":
        store.upsert_threads([ThreadRecord(id=ids[2], rollout_path="/archived/2.jsonl", created_at_ms=(NOW - 3600) * 1000,
                                           updated_at_ms=(NOW - 3600) * 1000, source="cli", cwd="/app")])
    elif change == "deleted output":
        assert store.delete_thread_memory(ids[1])
    settled = check(store, root)
    assert not settled.settled
    assert "changed" in settled.reason


def test_a_settings_change_means_the_full_run(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    full_successful_run(store, root)
    assert not check(store, root, max_unused_days=MAX_UNUSED_DAYS - 1).settled


@pytest.mark.parametrize("edit", ["edited", "new note", "deleted", "ignored by an in-tree .gitignore", "symlink"])
def test_a_manual_change_in_the_folder_means_the_full_run(store: MemoryStore, root: Path, edit: str) -> None:
    add_output(store, 0)
    full_successful_run(store, root)
    if edit == "edited":
        (root / MEMORY_FILE).write_text("# Memory\nthe user's own line\n")
    elif edit == "new note":
        note = root / "extensions" / "ad_hoc" / "notes" / "note.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text("remember this\n")
    elif edit == "deleted":
        (root / MEMORY_SUMMARY_FILE).unlink()
    elif edit == "ignored by an in-tree .gitignore":
        (root / ".gitignore").write_text("secret.md\n")
        subprocess.run(["git", "--git-dir", str(root / ".git"), "--work-tree", str(root), "add", ".gitignore"], check=True)
        subprocess.run(["git", "--git-dir", str(root / ".git"), "--work-tree", str(root), "-c", "user.name=t", "-c",
                        "user.email=t@t", "commit", "-qm", "ignore"], check=True)
        (root / "secret.md").write_text("hidden from plain git status\n")
    elif edit == "symlink":
        (root / "link.md").symlink_to(root / MEMORY_FILE)
    settled = check(store, root)
    assert not settled.settled
    if edit != "ignored by an in-tree .gitignore":  # that one also moved the baseline commit
        assert settled.reason == "the memory folder differs from its baseline"


def test_a_memory_ageing_out_of_the_window_means_the_full_run_at_that_moment(store: MemoryStore, root: Path) -> None:
    add_output(store, 0, updated=NOW - 10 * DAY)
    add_output(store, 1, updated=NOW - 3600)
    full_successful_run(store, root)
    ages_out = NOW - 10 * DAY + MAX_UNUSED_DAYS * DAY
    assert read_settled_record(root).next_change_at == ages_out

    assert check(store, root, now=ages_out - 1).settled
    late = check(store, root, now=ages_out)
    assert not late.settled and "aged out" in late.reason


def test_an_extension_resource_expiring_means_the_full_run_at_that_moment(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    extension = root / "extensions" / "chat"
    (extension / "resources").mkdir(parents=True)
    (extension / "instructions.md").write_text("how to read the resources\n")
    created = NOW - 2 * DAY
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(created))
    (extension / "resources" / f"{stamp}-meeting.md").write_text("notes\n")
    full_successful_run(store, root)
    assert read_settled_record(root).next_change_at == created + 7 * DAY
    assert not check(store, root, now=created + 7 * DAY).settled


def test_every_time_based_route_of_the_route_table_is_consulted_by_the_early_finish(
    store: MemoryStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codex_memories.forget import routes

    add_output(store, 0)
    soon = NOW + DAY
    new_route = routes.Route(number="9", title="a new time-based route", values=(), blocks=(), caller="",
                             trigger=routes.Trigger.time, next_change_at=lambda inputs: soon)
    monkeypatch.setattr(routes, "ROUTES", (*routes.ROUTES, new_route))
    full_successful_run(store, root)

    assert read_settled_record(root).next_change_at == soon
    assert check(store, root, now=soon - 1).settled
    assert not check(store, root, now=soon).settled


def test_without_a_record_or_a_baseline_the_full_run_is_needed(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    assert check(store, root).reason == "no record of a settled folder"
    full_successful_run(store, root)
    subprocess.run(["rm", "-rf", str(root / ".git")], check=True)
    assert not check(store, root).settled
    assert check_settled(None, store, lease=UNCLAIMED, max_outputs=MAX_OUTPUTS, max_unused_days=MAX_UNUSED_DAYS, now=NOW).fingerprint is None


def test_a_success_on_a_folder_that_is_not_its_baseline_records_nothing(store: MemoryStore, root: Path) -> None:
    add_output(store, 0)
    full_successful_run(store, root)
    settled = check(store, root)
    (root / MEMORY_FILE).write_text("changed after the reset\n")
    assert not record_settled(root, store, settled, storage_bytes=0)
    assert read_settled_record(root) is None


def test_the_baseline_status_runs_beside_the_check_and_leaves_no_lock_when_not_needed(root: Path) -> None:
    """Step 2 (the early finish) starts `git status` before its DB query; a status whose answer is not needed is
    waited for, not killed, so no `index.lock` is left for the next git command."""
    from codex_memories.memory_folder.workspace import BaselineStatus

    head = subprocess.run(["git", "--git-dir", str(root / ".git"), "rev-parse", "HEAD"], capture_output=True, check=True, text=True).stdout.strip()
    answered = BaselineStatus.start(root)
    assert answered.commit() == head
    assert answered.commit() == head  # the answer is kept; git is not asked twice

    not_needed = BaselineStatus.start(root)
    not_needed.cancel()
    assert not (root / ".git" / "index.lock").exists()
    assert not_needed.commit() == head

    (root / "new-note.md").write_text("a note\n")
    assert BaselineStatus.start(root).commit() is None
    assert BaselineStatus.start(root / "missing").commit() is None
