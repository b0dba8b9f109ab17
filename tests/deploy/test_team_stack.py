"""A team on a real Prefect server (issue 37, item 5), set up as infra/README.md tells a team to:
`prefect server start` on PostgreSQL, the `codex-memories` process work pool, `prefect deploy
--all`, TWO process workers (each `--limit 2`), our state DB on PostgreSQL (a fresh database,
dropped at the end), the memory root on S3 and results storage both workers share on S3 (one new
bucket: `s3://BUCKET/memories`, and `infra/shared_results.py s3://BUCKET/prefect-results` saves
the `RemoteFileSystem` block that `PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK` names). The workers get
the endpoint and the keys as the README says, in their environment (`AWS_ENDPOINT_URL`,
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`). The S3 endpoint is moto's
threaded server in this process, or a real one when `CODEX_MEMORIES_TEST_S3_ENDPOINT` is set with
the keys in the AWS environment (CI's second stage: Ceph's radosgw, `scripts/ceph-s3`); the code
path is the same, only the endpoint and the keys differ.

The model is the OpenAI-compatible test server with a delay on every extraction, so the model is
the bottleneck. 240 archived sessions over eight days are backfilled as eight one-day runs of the
`memories-backfill` deployment, as a team would launch them, plus one catch-all run over every
day at the same time (each thread is then wanted by two runs), spread over both workers. Mid-run,
one worker is killed with SIGKILL together with its flow-run processes (a lost machine); then
what the README says for a dead worker: its runs, still Running, are marked Crashed through the
API (the UI's "Change state") and retried (the UI's "Retry"). Checked at the end:

- every session extracted exactly once (one stage-1 output per thread, every job done);
- no extraction answered twice: per session, exactly one answered stage-1 request at the test
  server; a second request only for a session whose first one the killed worker never received
  (the server saw its client hang up before the answer was ready). The kill is timed for a
  moment when every answer sent has been stored (the model holds further answers meanwhile): an
  answer the process received and had not stored yet when it died is asked again, a window of
  its redaction and one DB write that no retry can close (infra/README.md says so);
- no flow run left Running, Pending or Scheduled, and every run's final state truthful: a run
  whose report counts held sessions (`skipped_running`) is never Completed;
- the bucket holds the memory folder (`memory_summary.md`, `MEMORY.md`, `raw_memories.md`, a
  rollout summary per session) and its baseline, and the persisted results; nothing of the
  memory folder is written on the workers' disk.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from codex_memories import paths
from tests.deploy.prefect_stack import REPO_ROOT, PrefectStack, retry_like_the_ui, wait_for
from tests.deploy.team import (
    FOREIGN_AWS_VARIABLES,
    ModelGate,
    Team,
    TeamBucket,
    final_or_none,
    fresh_database,
    launch_backfill,
    launch_day_backfills,
    new_bucket,
    session_of,
    slow_extractions,
    write_archived_sessions,
)
from tests.deploy.test_deployments import _consolidation_agent
from tests.support.openai_server import OpenAITestServer, RecordedRequest, is_stage1_request, running_openai_server
from tests.support.s3 import PLANTED_ACCESS_KEY_ID, PLANTED_SECRET_KEY, moto_endpoint  # noqa: F401 - fixture

pytestmark = [pytest.mark.prefect_server, pytest.mark.postgres, pytest.mark.timeout(600)]

DAYS = 8
SESSIONS_PER_DAY = 30
EXTRACTION_DELAY_SECONDS = 1.0  # per stage-1 answer: the model is the bottleneck
WORKER_LIMIT = 2  # flow runs each worker runs at once
RUNNING_LIKE = {"RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING"}
S3_ENDPOINT_ENV = "CODEX_MEMORIES_TEST_S3_ENDPOINT"  # a real S3 endpoint (tests/flows/test_s3_real.py)
MEMORY_PREFIX = "memories"
RESULTS_PREFIX = "prefect-results"


@pytest.fixture(scope="module")
def gate() -> ModelGate:
    return ModelGate()


@pytest.fixture(scope="module")
def model(gate: ModelGate) -> Iterator[OpenAITestServer]:
    released = threading.Event()
    released.set()
    handler = slow_extractions(_consolidation_agent(released), EXTRACTION_DELAY_SECONDS, gate)
    with running_openai_server(handler=handler) as server:
        yield server


@pytest.fixture(scope="module")
def state_db() -> Iterator[str]:
    with fresh_database("team_state") as url:
        yield url


@pytest.fixture(scope="module")
def bucket(request: pytest.FixtureRequest) -> Iterator[TeamBucket]:
    """A new bucket on the real endpoint if one is given (its keys in the AWS environment), else on
    moto's server (fake keys)."""
    real = os.environ.get(S3_ENDPOINT_ENV)
    if real:
        with new_bucket(real, os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]) as made:
            yield made
    else:
        endpoint = request.getfixturevalue("moto_endpoint")
        with new_bucket(endpoint.url, PLANTED_ACCESS_KEY_ID, PLANTED_SECRET_KEY) as made:
            yield made


@pytest.fixture(scope="module")
def team(
    tmp_path_factory: pytest.TempPathFactory, model: OpenAITestServer, state_db: str, bucket: TeamBucket
) -> Iterator[tuple[Team, dict[str, list[str]]]]:
    root = tmp_path_factory.mktemp("team")
    codex_home = root / "codex-home"
    codex_home.mkdir()
    by_day = write_archived_sessions(codex_home, days=DAYS, per_day=SESSIONS_PER_DAY)
    stack = PrefectStack(tmp_path_factory.mktemp("team-stack"))
    for name in FOREIGN_AWS_VARIABLES:
        stack.env.pop(name, None)
    team = Team(
        stack,
        {
            # The worker's environment is the flows' settings (infra/README.md), and the AWS
            # variables for the memory root and the results storage on S3.
            "CODEX_HOME": str(codex_home),
            "CODEX_MEMORIES_DB_URL": state_db,
            "CODEX_MEMORIES_MEMORY_ROOT": bucket.url(MEMORY_PREFIX),
            "CODEX_MEMORIES_PROVIDER": "openai",
            "CODEX_MEMORIES_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "test-key",
            "HOME": str(root),  # nothing falls back to a real ~/.codex
            **bucket.worker_env(),
        },
        limit=WORKER_LIMIT,
    )
    try:
        stack.start_server()
        stack.create_work_pool()
        stack.deploy("--all")
        # Results storage the workers share (infra/README.md, "Several workers"): a retry on the
        # other worker finds the claims and the answers the dead one persisted.
        # Saved once, with the same AWS variables (the block keeps the endpoint, never the keys).
        saved = stack.prefect_python(
            str(REPO_ROOT / "infra" / "shared_results.py"), bucket.url(RESULTS_PREFIX), extra_env=bucket.worker_env()
        )
        name, value = saved.stdout.strip().split("=", 1)
        assert (name, value) == ("PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK", "remote-file-system/codex-memories-results"), saved.stdout
        with stack.client() as client:
            block = client.read_block_document_by_name("codex-memories-results", "remote-file-system").data
        assert block["basepath"] == bucket.url(RESULTS_PREFIX)
        assert block["settings"] == {"client_kwargs": {"endpoint_url": bucket.endpoint_url}}  # no key in it
        team.worker_env[name] = value
        team.start_worker("worker-a")
        team.start_worker("worker-b")
        yield team, by_day
    finally:
        team.stop()
        stack.stop()


def test_a_backfill_over_two_workers_survives_a_killed_worker_and_extracts_every_session_once(
    team: tuple[Team, dict[str, list[str]]], model: OpenAITestServer, gate: ModelGate, state_db: str, bucket: TeamBucket
) -> None:
    stack_team, by_day = team
    stack = stack_team.stack
    sessions = sum(len(ids) for ids in by_day.values())
    with stack.client() as client:
        runs = launch_day_backfills(client, sorted(by_day))
        # A teammate's catch-all backfill over every day at the same time: the threads it finds
        # held by the day runs (and they by it) are waited for and taken later, never a success.
        runs.append(launch_backfill(client, {}))
        # Both workers are running flow runs, and extractions are under way.
        wait_for(
            lambda: all(stack_team.flow_run_processes(name) for name in ("worker-a", "worker-b")),
            timeout=180, what="both workers to run flow runs",
        )
        wait_for(lambda: len(_stage1(model.requests)) >= sessions // 5, timeout=240, what="a fifth of the extractions")

        # The kill lands while worker-a's extractions wait for the model, at a moment when every
        # answer already sent has been stored (`stage1_arrived_results`, or finalized): an answer
        # the process had received but not yet stored when it died is asked again, and that
        # window (the answer's redaction and the DB write) is not what this test measures.
        gate.close()
        try:
            thread_ids = [thread_id for day in sorted(by_day) for thread_id in by_day[day]]
            wait_for(
                lambda: _unstored(model, gate, thread_ids, state_db) == set(), timeout=120,
                what="every answer sent to be stored",
            )
            lost = stack_team.kill_worker("worker-a")
        finally:
            gate.open()
        assert lost, "worker-a was running no flow run when it was killed"
        time.sleep(3)
        for flow_run_id in lost:  # what infra/README.md says for a dead worker's runs
            run = client.read_flow_run(flow_run_id)
            assert run.state.type.value in ("RUNNING", "PENDING"), run.state  # nothing reported the death
            _mark_crashed(client, flow_run_id)
            retry_like_the_ui(client, flow_run_id)

        final = {
            flow_run_id: wait_for(
                lambda flow_run_id=flow_run_id: final_or_none(client, flow_run_id), timeout=420,
                what=f"flow run {flow_run_id} to end",
            )
            for flow_run_id in runs
        }
        left = [run for run in client.read_flow_runs() if run.state and run.state.type.value in RUNNING_LIKE]

    assert not left, [(run.name, run.state.type.value) for run in left]
    states = {run.name: (run.state.type.value, run.state.name, run.state.message) for run in final.values()}
    print("final states:", *sorted(states.items()), sep="\n  ")
    for name, (state_type, _state_name, message) in states.items():
        extractions = (message or "").split("; phase 2:", 1)[0]
        held = "skipped_running" in extractions
        assert not (held and state_type == "COMPLETED"), f"{name} is Completed with held sessions: {message}"

    all_threads = {thread_id for ids in by_day.values() for thread_id in ids}
    outputs, jobs = _state_rows(state_db)
    assert Counter(outputs) == Counter(all_threads), f"{len(outputs)} outputs for {len(all_threads)} sessions"
    assert set(jobs) == all_threads and set(jobs.values()) == {"done"}, Counter(jobs.values())

    hung_up = model.hung_up
    answered = Counter(session_of(request) for request in _stage1(model.requests) if not any(request is gone for gone in hung_up))
    unanswered = Counter(session_of(request) for request in _stage1(hung_up))
    asked = Counter(session_of(request) for request in _stage1(model.requests))
    assert set(answered) == set(range(sessions)) and set(answered.values()) == {1}, (
        {session: count for session, count in answered.items() if count != 1},
        sorted(set(range(sessions)) - set(answered)),
    )
    assert asked == answered + unanswered
    print(f"killed worker-a with {len(lost)} run(s); {sum(unanswered.values())} extraction(s) it never received, asked again")
    # Everything was extracted, so the truthful end of every run is Completed.
    assert {state_type for state_type, _, _ in states.values()} == {"COMPLETED"}, states
    # And consolidated: the run that finished its extractions last (no lease left in flight)
    # ran a phase 2 that left the consolidation job clean.
    status, wanted, consolidated = _phase2_job(state_db)
    assert status == "done" and consolidated >= wanted, (status, wanted, consolidated)
    assert any(message.endswith("phase 2: succeeded") for _, _, message in states.values()), states

    # The memory folder and its baseline are in the bucket, a rollout summary per session, and the
    # results both workers persisted (the retries read the dead attempts' ones back from there).
    stored = bucket.objects(MEMORY_PREFIX)
    required = {paths.MEMORY_SUMMARY_FILE, paths.MEMORY_FILE, paths.RAW_MEMORIES_FILE, paths.baseline_archive_path()}
    assert required <= set(stored), sorted(required - set(stored))
    summaries = [name for name in stored if name.startswith(paths.ROLLOUT_SUMMARIES_DIR + "/")]
    raw_memories = stored[paths.RAW_MEMORIES_FILE].decode("utf-8")
    print(f"bucket: {len(stored)} memory objects, {len(summaries)} rollout summaries, {len(raw_memories)} chars of raw memories")
    assert len(summaries) == sessions, len(summaries)
    assert all(f"team-{number:03d}" in raw_memories for number in range(sessions))
    assert bucket.keys(RESULTS_PREFIX), "no persisted result in the shared results storage"
    codex_home = Path(stack_team.worker_env["CODEX_HOME"])
    assert not (codex_home / paths.MEMORIES_DIR).exists()  # nothing of the memory folder on the workers' disk


# -- helpers -------------------------------------------------------------------------------------


def _stage1(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [request for request in requests if is_stage1_request(request)]


def _unstored(model: OpenAITestServer, gate: ModelGate, thread_ids: list[str], db_url: str) -> set[int]:
    """Sessions whose extraction was asked, is not held at the gate, and has neither an arrived
    answer nor an output in the state DB (its answer is on its way, or being stored)."""
    asked = {session_of(request) for request in _stage1(model.requests)} - gate.held_sessions()
    dsn = db_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as connection:
        stored = {
            row[0]
            for row in connection.execute(
                "SELECT thread_id FROM stage1_arrived_results UNION SELECT thread_id FROM stage1_outputs"
            )
        }
    return {session for session in asked if thread_ids[session] not in stored}


def _mark_crashed(client: Any, flow_run_id: Any) -> None:
    """The flow-run menu's "Change state" to Crashed (forced: the UI overrides the run's state)."""
    from prefect.client.schemas.objects import StateType
    from prefect.states import State

    result = client.set_flow_run_state(
        flow_run_id, State(type=StateType.CRASHED, message="its worker was lost (SIGKILL)"), force=True
    )
    assert result.status.value == "ACCEPT", result.details


def _state_rows(db_url: str) -> tuple[list[str], dict[str, str]]:
    dsn = db_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as connection:
        outputs = [row[0] for row in connection.execute("SELECT thread_id FROM stage1_outputs")]
        jobs = dict(connection.execute("SELECT job_key, status FROM jobs WHERE kind = 'memory_stage1'").fetchall())
    return outputs, jobs


def _phase2_job(db_url: str) -> Any:
    dsn = db_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as connection:
        return connection.execute(
            "SELECT status, input_watermark, last_success_watermark FROM jobs WHERE kind = 'memory_consolidate_global'"
        ).fetchone()
