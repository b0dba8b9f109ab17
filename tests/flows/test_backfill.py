"""The backfill flow end to end: archived sessions, any folder, an s3:// prefix (moto), with the
offline heuristic provider; resumable, filtered by day, still bound by the source and
memory-mode rules."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codex_memories.settings import SettingsOverrides
from codex_memories.state.records import JobKind, MemoryMode
from tests.support.memory_home import MemoryHome
from tests.support.rollout_factory import write_rollout
from tests.support.s3 import S3Endpoint, moto_endpoint, s3  # noqa: F401 - fixtures

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

PNPM = "I prefer pnpm over npm in this repo."
DEPLOY = "Remember that the deploy command is make ship."
TABS = "Always use tabs, never spaces, in the Makefile."


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    return MemoryHome(tmp_path)


def archived(home: MemoryHome, message: str, *, days_ago: float, **options) -> str:
    created_at = datetime.now(UTC) - timedelta(days=days_ago)
    path = write_rollout(home.codex_home, created_at=created_at, user_messages=[message], archived=True, **options)
    return path.stem[-36:]


def backfill(home: MemoryHome, *, source=None, since=None, until=None, **overrides):
    from codex_memories_flows.backfill import backfill as backfill_flow
    from codex_memories_flows.flow_runs import report_of

    settings = SettingsOverrides(
        codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.memory_root), provider="heuristic", **overrides
    )
    return report_of(backfill_flow(source=source, since=since, until=until, overrides=settings, return_state=True))


def backfill_artifacts(first_run_key: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[first_run_key])), sort=ArtifactSort.CREATED_DESC
        )


def extracted(report) -> dict[str, str]:
    return {line.thread_id: line.outcome.value for line in report.phase1.extractions}


def test_normal_runs_skip_archived_sessions_and_backfill_extracts_them_once(home: MemoryHome) -> None:
    old = archived(home, PNPM, days_ago=25)
    recent = archived(home, DEPLOY, days_ago=2)

    assert home.phase1().outcome_counts()["succeeded"] == 0  # archived: never claimed by phase 1
    assert home.store.get_stage1_output(old) is None

    first = backfill(home, backfill_batch_size=1)

    assert extracted(first) == {old: "succeeded", recent: "succeeded"}
    assert first.batches == 2 and first.candidates == 2 and first.older_than_selection_window == 0
    assert home.store.get_thread(old).archived
    assert first.phase2_outcome == "succeeded"
    assert backfill_artifacts(first_run_key="memories-backfill-progress")[0].data == 100.0
    assert "succeeded" in backfill_artifacts(first_run_key="memories-backfill")[0].data
    assert "pnpm" in home.memory_text() and "make ship" in home.memory_text()

    again = backfill(home, backfill_batch_size=1)

    assert again.candidates == 0 and extracted(again) == {}
    assert again.phase2_outcome == "succeeded_no_workspace_changes"


def test_sessions_older_than_max_unused_days_are_extracted_and_the_report_says_phase_2_skips_them(
    home: MemoryHome,
) -> None:
    ancient = archived(home, PNPM, days_ago=200)

    report = backfill(home)

    assert extracted(report) == {ancient: "succeeded"}
    assert report.older_than_selection_window == 1 and report.max_unused_days == 30
    assert "pnpm" not in home.memory_text()  # spec 3 step 4: outside the selection window

    home.write_codex_config("max_unused_days = 365")
    home.store.upsert_threads([home.store.get_thread(ancient)])
    assert backfill(home).phase2_outcome == "succeeded"
    assert "pnpm" in home.memory_text()


def test_since_and_until_select_days_of_last_activity(home: MemoryHome) -> None:
    old = archived(home, PNPM, days_ago=40)
    middle = archived(home, DEPLOY, days_ago=20)
    new = archived(home, TABS, days_ago=3)
    day = lambda days_ago: (datetime.now(UTC) - timedelta(days=days_ago)).date().isoformat()  # noqa: E731

    report = backfill(home, since=day(30), until=day(10))
    assert set(extracted(report)) == {middle}

    report = backfill(home, since=day(5))
    assert set(extracted(report)) == {new}

    report = backfill(home, until=day(30))
    assert set(extracted(report)) == {old}


def test_exec_subagent_disabled_and_polluted_sessions_stay_excluded(home: MemoryHome) -> None:
    home.write_codex_config("disable_on_external_context = true")
    kept = archived(home, PNPM, days_ago=30)
    archived(home, "exec: run the tests", days_ago=30, source="exec")
    archived(home, "subagent: review", days_ago=30, source={"subagent": {"other": "review"}})
    polluted = archived(home, "look this up on the web", days_ago=30, web_search=True)
    disabled = archived(home, DEPLOY, days_ago=30)
    backfill(home, until="2000-01-01")  # discovery only: nothing is that old
    home.store.set_thread_memory_mode(disabled, MemoryMode.disabled)

    report = backfill(home)

    assert extracted(report) == {kept: "succeeded"}
    assert home.store.get_thread(polluted).memory_mode == MemoryMode.polluted
    assert home.store.get_job(JobKind.stage1, disabled) is None


def test_a_folder_anywhere_is_backfilled_and_its_paths_stay_readable(home: MemoryHome, tmp_path: Path) -> None:
    elsewhere = tmp_path / "old-laptop" / "sessions"
    created_at = datetime.now(UTC) - timedelta(days=10)
    path = write_rollout(tmp_path / "scratch", created_at=created_at, user_messages=[PNPM])
    elsewhere.mkdir(parents=True)
    shutil.move(path, elsewhere / path.name)
    thread_id = path.stem[-36:]

    report = backfill(home, source=str(elsewhere))

    assert extracted(report) == {thread_id: "succeeded"}
    thread = home.store.get_thread(thread_id)
    assert thread.rollout_path == str(elsewhere / path.name) and not thread.archived
    assert "pnpm" in home.memory_text()


def test_an_s3_prefix_is_copied_to_the_cache_and_backfilled_resumably(home: MemoryHome, s3: S3Endpoint, tmp_path: Path) -> None:
    bucket = s3.new_bucket()
    created_at = datetime.now(UTC) - timedelta(days=20)
    local = write_rollout(tmp_path / "upload", created_at=created_at, user_messages=[PNPM], archived=True)
    thread_id = local.stem[-36:]
    fs = s3.filesystem()
    fs.put_file(str(local), f"{bucket}/team/archived_sessions/{local.name}")
    fs.pipe_file(f"{bucket}/team/archived_sessions/notes.txt", b"not a rollout")

    report = backfill(home, source=f"s3://{bucket}/team")

    assert extracted(report) == {thread_id: "succeeded"}
    assert report.fetched.downloaded == [f"archived_sessions/{local.name}"]
    cached = home.codex_home / "codex-memories" / "backfill-cache" / "s3" / bucket / "team" / "archived_sessions" / local.name
    thread = home.store.get_thread(thread_id)
    assert thread.rollout_path == str(cached) and thread.archived
    assert cached.read_bytes() == local.read_bytes()

    again = backfill(home, source=f"s3://{bucket}/team")

    assert again.fetched.downloaded == [] and again.fetched.unchanged == 1
    assert again.candidates == 0


def test_a_bad_source_or_day_fails_before_any_work(home: MemoryHome, tmp_path: Path) -> None:
    from codex_memories.ingest.backfill import BackfillSourceError

    with pytest.raises(BackfillSourceError, match="not a folder"):
        backfill(home, source=str(tmp_path / "nowhere"))
    with pytest.raises(BackfillSourceError, match="YYYY-MM-DD"):
        backfill(home, since="last tuesday")


# ---- threads another run holds: never a success ------------------------------------------------


def _hold_the_running_cap(home: MemoryHome, monkeypatch: pytest.MonkeyPatch) -> str:
    """Another run's live extraction, with a team-wide running cap of 1 (`backfill_max_running`,
    `backfill_batch_size` and `max_rollouts_per_startup` 1): every claim of this backfill is
    `skipped_running`. Returns its ownership token."""
    monkeypatch.setenv("CODEX_MEMORIES_BACKFILL_MAX_RUNNING", "1")
    held = home.store.try_claim_stage1_job(
        thread_id="another-runs-thread", worker_id="host:1:another-run", source_updated_at=1, lease_seconds=3600, max_running_jobs=1
    )
    assert held.ownership_token is not None
    return held.ownership_token


def test_threads_held_by_another_run_past_the_wait_end_the_backfill_incomplete_not_completed(home: MemoryHome, monkeypatch) -> None:
    from codex_memories_flows.backfill import backfill as backfill_flow

    monkeypatch.setenv("CODEX_MEMORIES_BACKFILL_HELD_WAIT_SECONDS", "1")
    monkeypatch.setenv("CODEX_MEMORIES_PHASE2_STAGE1_WAIT_SECONDS", "0")  # its phase 2 does not wait for the other run
    first, second = archived(home, PNPM, days_ago=3), archived(home, DEPLOY, days_ago=2)
    _hold_the_running_cap(home, monkeypatch)
    settings = SettingsOverrides(
        codex_home=str(home.codex_home), db_url=home.db_url, memory_root=str(home.memory_root), provider="heuristic",
        backfill_batch_size=1, max_rollouts_per_startup=1,
    )

    state = backfill_flow(overrides=settings, return_state=True)

    assert (state.type.value, state.name) == ("FAILED", "Incomplete")
    assert state.message.startswith("extractions: incomplete: 2 thread(s) held by another run were not extracted (skipped_running=2)")
    from codex_memories_flows.flow_runs import report_of

    report = report_of(state)
    assert extracted(report) == {first: "skipped_running", second: "skipped_running"}
    assert all("held by another run" in (line.reason or "") for line in report.phase1.extractions)
    assert home.store.get_stage1_output(first) is None


def test_a_backfill_waits_for_threads_another_run_holds_and_takes_them_when_they_free_up(home: MemoryHome, monkeypatch) -> None:
    import threading

    import codex_memories_flows.backfill as backfill_module

    monkeypatch.setenv("CODEX_MEMORIES_BACKFILL_HELD_WAIT_SECONDS", "120")
    monkeypatch.setattr(backfill_module, "HELD_POLL_SECONDS", 0.2)
    first, second = archived(home, PNPM, days_ago=3), archived(home, DEPLOY, days_ago=2)
    token = _hold_the_running_cap(home, monkeypatch)
    # The other run finishes a few seconds in: its slot frees up while this backfill waits.
    release = threading.Timer(3.0, lambda: home.store.release_stage1_claims([("another-runs-thread", token)]))
    release.start()
    try:
        report = backfill(home, backfill_batch_size=1, max_rollouts_per_startup=1)
    finally:
        release.cancel()

    assert extracted(report) == {first: "succeeded", second: "succeeded"}
    assert report.phase2_outcome == "succeeded"
    assert "pnpm" in home.memory_text() and "make ship" in home.memory_text()


def test_another_runs_full_batch_does_not_hold_this_backfill_back(home: MemoryHome, monkeypatch) -> None:
    """Issue 37.5: the team-wide cap was one batch (`max(backfill_batch_size,
    max_rollouts_per_startup)`), so one run's batch filled it and every other run, on any worker,
    waited: a second worker added nothing. The cap is `backfill_max_running` (all runs together)."""
    monkeypatch.setenv("CODEX_MEMORIES_BACKFILL_HELD_WAIT_SECONDS", "0")  # a held thread would end it Incomplete
    monkeypatch.setenv("CODEX_MEMORIES_PHASE2_STAGE1_WAIT_SECONDS", "0")  # its phase 2 does not wait for the other run
    first, second = archived(home, PNPM, days_ago=3), archived(home, DEPLOY, days_ago=2)
    other_runs_batch = home.store.try_claim_stage1_job(
        thread_id="another-runs-thread", worker_id="host:1:another-run", source_updated_at=1, lease_seconds=3600, max_running_jobs=1
    )
    assert other_runs_batch.ownership_token is not None

    report = backfill(home, backfill_batch_size=1, max_rollouts_per_startup=1)

    assert extracted(report) == {first: "succeeded", second: "succeeded"}


def test_a_backfills_phase2_does_not_wait_for_extractions_other_runs_have_in_flight(home: MemoryHome, monkeypatch) -> None:
    """Issue 37.5: a finished backfill's phase 2 waited up to `phase2_stage1_wait_seconds` for
    any live stage-1 lease, holding its worker slot: with eight backfills at once every finished
    run sat idle for the others, and a dead worker's leases held every run for the whole wait
    while its retried runs waited for a slot. The other runs consolidate at their own end."""
    from codex_memories.state.store import MemoryStore

    monkeypatch.setenv("CODEX_MEMORIES_PHASE2_STAGE1_WAIT_SECONDS", "600")
    first = archived(home, PNPM, days_ago=3)
    other = home.store.try_claim_stage1_job(
        thread_id="another-runs-thread", worker_id="host:1:another-run", source_updated_at=1, lease_seconds=3600, max_running_jobs=1
    )
    assert other.ownership_token is not None
    answers: list[str] = []
    claim = MemoryStore.try_claim_global_phase2_job

    def claim_then_the_other_run_finishes(self: MemoryStore, **arguments):
        result = claim(self, **arguments)
        answers.append(result.outcome.value)
        # The other run finishes right after the first answer: a phase 2 that waits claims next.
        home.store.release_stage1_claims([("another-runs-thread", other.ownership_token)])
        return result

    monkeypatch.setattr(MemoryStore, "try_claim_global_phase2_job", claim_then_the_other_run_finishes)

    report = backfill(home)

    assert extracted(report) == {first: "succeeded"}
    assert answers == ["skipped_stage1_in_flight"]
    assert report.phase2_outcome == "skipped_stage1_in_flight"
