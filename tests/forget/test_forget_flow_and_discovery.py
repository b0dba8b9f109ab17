"""The forget flow's artifact, and the discovery facts route 4 relies on."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories.forget.threads import forget_deleted_threads
from codex_memories.ingest.discovery import discover_rollouts
from tests.support.memory_home import MemoryHome, remember
from tests.support.rollout_factory import write_rollout

THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"


def artifact_markdown(key: str) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    return [str(artifact.data) for artifact in artifacts]


def test_the_forget_flow_publishes_the_audit_rows_it_wrote(prefect_harness: None, tmp_path: Path) -> None:
    from codex_memories_flows.forget import forget

    home = MemoryHome(tmp_path)
    remember(home.store, THREAD)

    report = forget(route="thread_deletion", target=THREAD, overrides=home.overrides())

    assert [(row.route, row.target) for row in report.forget_audit] == [("thread_deletion", THREAD)]
    published = [text for text in artifact_markdown("memories-forget") if THREAD in text]
    assert published and "| `thread_deletion` |" in published[-1]


def test_the_reset_route_of_the_forget_flow_takes_no_target(prefect_harness: None, tmp_path: Path) -> None:
    from codex_memories_flows.forget import forget

    home = MemoryHome(tmp_path)
    remember(home.store, THREAD)
    home.memory_root.mkdir()
    (home.memory_root / "MEMORY.md").write_text("x")

    assert forget(route="manual_reset", target=THREAD, overrides=home.overrides(), return_state=True).is_failed()
    report = forget(route="manual_reset", overrides=home.overrides())

    assert [row.route for row in report.forget_audit] == ["manual_reset"]
    assert home.store.get_stage1_output(THREAD) is None
    # Only the folder's history stays (its forget ledger and state DB binding, none here yet).
    assert [path.name for path in home.memory_root.iterdir()] == [".codex-memories"]
    assert list((home.memory_root / ".codex-memories").iterdir()) == []


@pytest.fixture
def discovered(tmp_path: Path) -> tuple[MemoryHome, Path]:
    home = MemoryHome(tmp_path)
    path = write_rollout(home.codex_home, thread_id=THREAD, created_at=datetime(2026, 3, 2, tzinfo=UTC), user_messages=["I prefer pnpm."])
    discover(home)
    return home, path


def discover(home: MemoryHome):
    return discover_rollouts(
        home.store, home.codex_home, generate_memories=True, disable_on_external_context=False, now_ms=int(time.time() * 1000)
    )


def test_discovery_lists_the_rollouts_it_read(discovered: tuple[MemoryHome, Path]) -> None:
    home, path = discovered
    assert discover(home).read_paths == []  # unchanged: not read again
    with path.open("a") as handle:
        handle.write("\n")
    path.touch()
    assert discover(home).read_paths == [str(path)]


def test_a_vanished_sessions_folder_forgets_nothing(discovered: tuple[MemoryHome, Path]) -> None:
    home, path = discovered
    path.unlink()
    for folder in sorted(home.codex_home.joinpath("sessions").rglob("*"), reverse=True):
        folder.rmdir()
    home.codex_home.joinpath("sessions").rmdir()  # e.g. a disk that is not mounted

    assert discover(home).missing_thread_ids == []
    assert home.store.list_missing_threads() == []


def test_a_missing_thread_without_a_memory_is_not_audited(discovered: tuple[MemoryHome, Path]) -> None:
    home, path = discovered
    path.unlink()
    assert discover(home).missing_thread_ids == [THREAD]
    assert forget_deleted_threads(home.store) == []
    assert home.store.list_forget_audit() == []
