"""A memory root on s3:// (moto's server): phase 1 + phase 2 end to end, any worker consolidates
from the stored baseline, credentials never reach logs or artifacts, S3 outages are retried."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.flow_runs import report_of
from tests.support.memory_home import MemoryHome
from tests.support.s3 import PLANTED_SECRET_KEY, S3Endpoint, moto_endpoint, s3  # noqa: F401 - fixtures

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

PNPM = "I prefer pnpm over npm in this repo."
DEPLOY = "Remember that the deploy command is make ship."


class Worker:
    """One machine: its own Codex home and scratch space; shares only the DB and the bucket."""

    def __init__(self, root: Path, *, db_url: str, memory_root: str) -> None:
        self.home = MemoryHome(root)
        self.db_url = db_url
        self.memory_root = memory_root

    def phase1(self):
        from codex_memories_flows.phase1 import phase1

        return phase1(
            overrides=SettingsOverrides(
                codex_home=str(self.home.codex_home), db_url=self.db_url, memory_root=self.memory_root,
                provider="heuristic", ignore_age_windows=True, max_rollouts_per_startup=128,
            )
        )

    def phase2(self):
        from codex_memories_flows.phase2 import phase2

        state = phase2(
            overrides=SettingsOverrides(
                codex_home=str(self.home.codex_home), db_url=self.db_url, memory_root=self.memory_root, provider="heuristic"
            ),
            force=True,
            return_state=True,
        )
        return report_of(state)


@pytest.fixture
def bucket_root(s3: S3Endpoint) -> str:
    return f"s3://{s3.new_bucket()}/team/memories"


def objects(s3: S3Endpoint, root: str) -> dict[str, bytes]:
    fs = s3.filesystem()
    base = root.removeprefix("s3://")
    return {path[len(base) + 1 :]: fs.cat_file(path) for path in fs.find(base)}


def test_phase_1_and_2_write_the_memory_folder_and_its_baseline_to_the_bucket(
    s3: S3Endpoint, bucket_root: str, tmp_path: Path
) -> None:
    worker = Worker(tmp_path / "a", db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=bucket_root)
    worker.home.rollout(PNPM)

    assert worker.phase1().outcome_counts()["succeeded"] == 1
    assert worker.phase2().outcome.value == "succeeded"

    stored = objects(s3, bucket_root)
    assert {paths.MEMORY_SUMMARY_FILE, paths.MEMORY_FILE, paths.RAW_MEMORIES_FILE, paths.baseline_archive_path()} <= set(stored)
    assert any(name.startswith(paths.ROLLOUT_SUMMARIES_DIR + "/") for name in stored)
    assert b"pnpm" in stored[paths.RAW_MEMORIES_FILE]
    assert not (worker.home.codex_home / paths.MEMORIES_DIR).exists()  # nothing written locally


def test_a_second_worker_diffs_against_the_stored_baseline(s3: S3Endpoint, bucket_root: str, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    first = Worker(tmp_path / "first", db_url=db_url, memory_root=bucket_root)
    first.home.rollout(PNPM)
    first.phase1()
    assert first.phase2().outcome.value == "succeeded"
    second = Worker(tmp_path / "second", db_url=db_url, memory_root=bucket_root)

    unchanged = second.phase2()

    assert unchanged.outcome.value == "succeeded_no_workspace_changes"
    assert unchanged.consolidator is None and unchanged.agent_steps == 0  # no model call
    before = objects(s3, bucket_root)

    first.home.rollout(DEPLOY, cwd="/home/dana/src/beta")
    assert first.phase1().outcome_counts()["succeeded"] == 1
    changed = second.phase2()

    assert changed.outcome.value == "succeeded"
    new_summaries = [line for line in changed.diff_status if paths.ROLLOUT_SUMMARIES_DIR in line]
    assert len(new_summaries) == 1 and new_summaries[0].startswith("A ")  # only the new session
    assert f"M {paths.RAW_MEMORIES_FILE}" in changed.diff_status
    after = objects(s3, bucket_root)
    assert b"make ship" in after[paths.RAW_MEMORIES_FILE]
    kept = [name for name in before if name.startswith(paths.ROLLOUT_SUMMARIES_DIR)]
    assert all(after[name] == before[name] for name in kept)


def test_credentials_never_reach_the_logs_the_artifacts_or_the_parameters(
    s3: S3Endpoint, bucket_root: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect.client.orchestration import get_client

    caplog.set_level(logging.DEBUG)
    worker = Worker(tmp_path / "a", db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=bucket_root)
    worker.home.rollout(PNPM)
    started = time.time()

    worker.phase1()
    report = worker.phase2()

    assert report.outcome.value == "succeeded"
    assert caplog.records, "expected the runs to log something"
    assert PLANTED_SECRET_KEY not in caplog.text
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts()
        flow_runs = client.read_flow_runs()
    assert artifacts
    assert all(PLANTED_SECRET_KEY not in str(artifact.data) for artifact in artifacts)
    recent = [run for run in flow_runs if run.created and run.created.timestamp() >= started - 5]
    assert recent and all(PLANTED_SECRET_KEY not in str(run.parameters) for run in recent)


def test_an_s3_outage_during_phase_2_is_retried_with_backoff(s3: S3Endpoint, bucket_root: str, tmp_path: Path) -> None:
    worker = Worker(tmp_path / "a", db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=bucket_root)
    worker.home.rollout(PNPM)
    worker.phase1()
    s3.stop()
    # Longer than botocore's own retries (about 5 s), so only the task retry can recover.
    restarter = threading.Timer(7.0, s3.restart)
    restarter.start()
    try:
        report = worker.phase2()
    finally:
        restarter.join()

    assert report.outcome.value == "succeeded", report.reason
    assert b"pnpm" in objects(s3, bucket_root)[paths.RAW_MEMORIES_FILE]


def test_transient_errors_on_pull_and_push_are_retried_and_the_pull_starts_over(
    s3: S3Endpoint, bucket_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import EndpointConnectionError

    from codex_memories import storage

    worker = Worker(tmp_path / "a", db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=bucket_root)
    worker.home.rollout(PNPM)
    worker.phase1()
    assert worker.phase2().outcome.value == "succeeded"  # a baseline to pull
    worker.home.rollout(DEPLOY, cwd="/home/dana/src/beta")
    worker.phase1()
    calls = {"pull": 0, "push": 0}
    real_pull, real_push = storage.pull, storage.push

    def flaky_pull(root, local_dir):
        calls["pull"] += 1
        if calls["pull"] == 1:
            real_pull(root, local_dir)  # half done: the mirror is not empty any more
            raise EndpointConnectionError(endpoint_url=s3.url)
        return real_pull(root, local_dir)

    def flaky_push(local_dir, root, snapshot):
        calls["push"] += 1
        if calls["push"] == 1:
            raise OSError("connection reset by peer")
        return real_push(local_dir, root, snapshot)

    monkeypatch.setattr(storage, "pull", flaky_pull)
    monkeypatch.setattr(storage, "push", flaky_push)

    report = worker.phase2()

    assert report.outcome.value == "succeeded", report.reason
    assert calls == {"pull": 2, "push": 2}
    assert b"make ship" in objects(s3, bucket_root)[paths.RAW_MEMORIES_FILE]


def test_a_final_storage_error_is_not_retried(s3: S3Endpoint, bucket_root: str, tmp_path: Path, monkeypatch) -> None:
    from codex_memories import storage

    worker = Worker(tmp_path / "a", db_url=f"sqlite:///{tmp_path / 'state.sqlite'}", memory_root=bucket_root)
    calls = []

    def refused(root, local_dir):
        calls.append(local_dir)
        raise PermissionError("Access Denied")

    monkeypatch.setattr(storage, "pull", refused)

    report = worker.phase2()

    assert report.outcome.value == "failed_prepare_workspace" and "Access Denied" in report.reason
    assert len(calls) == 1
