"""Deployment runs as a Prefect user makes them, against a real `prefect server start`
(PostgreSQL), the deployments served by `codex-memories serve` (the user's settings as the
deployments' default `overrides`) and the OpenAI-compatible test server. In order, on one home:

- Retry is the recovery path (issue 28.1): a run that failed because the model was down is
  retried the way the Prefect UI's "Retry" button does it, after the model is back, and finishes
  the work once. Counted on the model server: after the retry every session has exactly one
  answered extraction request, and no request that had been answered is sent again. Phase 1,
  phase 2 and a backfill.
- A run's `overrides` merge with the deployment's (28.3), and review is decided where the run
  waits (28.5): `-p overrides='{"review": "ask"}'` keeps the deployment's Codex home, state DB
  and memory root, pauses with the diff in its form, and `codex-memories review --reject`
  resumes it with the decision: the run ends Cancelled, named Rejected (28.2).
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from codex_memories.storage import STATE_BINDING_PATH

from tests.deploy.prefect_stack import (
    REPO_ROOT,
    PrefectStack,
    retry_like_the_ui,
    stop_process_group,
    wait_for,
    wait_terminal,
)
from tests.deploy.test_deployments import _consolidation_agent
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    default_handler,
    is_stage1_request,
    running_openai_server,
)
from tests.support.rollout_factory import write_rollout

pytestmark = [pytest.mark.prefect_server, pytest.mark.postgres, pytest.mark.timeout(600)]

TOPICS = ("alpha", "bravo", "charlie")
ARCHIVED_TOPICS = ("delta", "echo")
MODEL_RETRIES = 1


@pytest.fixture(scope="module")
def model() -> Iterator[OpenAITestServer]:
    with running_openai_server() as server:
        yield server


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("retry-home")
    codex_home = root / "codex_home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    created = datetime.now(UTC) - timedelta(hours=30)
    for index, topic in enumerate(TOPICS + ARCHIVED_TOPICS):
        write_rollout(
            codex_home,
            created_at=created + timedelta(minutes=index),
            cwd=f"/home/dana/src/{topic}",
            archived=topic in ARCHIVED_TOPICS,
            user_messages=[f"In {topic} always run make check before pushing."],
        )
    return {"root": root, "codex_home": codex_home, "db_path": root / "state.sqlite", "memory_root": root / "memories"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, home: dict[str, Any], model: OpenAITestServer) -> Iterator[PrefectStack]:
    """A Prefect server, and `codex-memories serve` serving the deployments with this home's settings."""
    stack = PrefectStack(tmp_path_factory.mktemp("retry-stack"))
    log = (stack.root / "serve.log").open("wb")
    serve = None
    try:
        stack.start_server()
        serve = subprocess.Popen(
            [
                sys.executable, "-m", "codex_memories_cli.main", "serve", "--codex-home", str(home["codex_home"]),
                "--db", f"sqlite:///{home['db_path']}", "--memory-root", str(home["memory_root"]),
                "--provider", "openai", "--base-url", model.base_url,
            ],
            cwd=REPO_ROOT,
            env=stack.env | {
                "HOME": str(home["root"]),  # a run that lost its settings must not find a real ~/.codex
                "OPENAI_API_KEY": "test-key",
                "CODEX_MEMORIES_MODEL_RETRIES": str(MODEL_RETRIES),
                "CODEX_MEMORIES_MODEL_RETRY_DELAY_SECONDS": "0.1",
            },
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        with stack.client() as client:
            wait_for(
                lambda: serve.poll() is not None or len(client.read_deployments()) == 4,
                timeout=240, what="serve's four deployments",
            )
        assert serve.poll() is None, stack.log_text("serve")
        yield stack
    finally:
        if serve is not None and serve.poll() is None:
            stop_process_group(serve, signal.SIGINT, timeout=60)
        log.close()
        stack.stop()


def test_a_failed_phase1_run_retried_after_the_model_recovers_extracts_the_rest_once(
    served: PrefectStack, model: OpenAITestServer, home: dict[str, Any]
) -> None:
    model.clear_requests()
    model.set_handler(_failing_stage1("bravo"))
    with served.client() as client:
        # The run gives one field; the deployment's defaults (Codex home, DB, memory root,
        # provider, base URL) stay: the overrides merge.
        flow_run = _run(client, "memories-phase1", {"overrides": {"max_rollouts_per_startup": 8}})
        failed = wait_terminal(client, flow_run.id, timeout=240)
        assert (failed.state.type.value, failed.state.name) == ("FAILED", "Partial"), failed.state
        assert failed.state.message.startswith("partial: 1 of 3 extractions failed (failed_model_request=1, succeeded=2): the model at ")
        assert failed.state.message.endswith("did not answer; fix it, then Retry this run (only the failed extractions run again, nothing answered is paid twice)")
        assert _extractions(model, TOPICS) == {"alpha": 1, "bravo": 1 + MODEL_RETRIES, "charlie": 1}

        model.set_handler(default_handler)  # the cause is fixed
        retry_like_the_ui(client, flow_run.id)
        retried = wait_terminal(client, flow_run.id, timeout=240)

    assert (retried.state.type.value, retried.state.message) == ("COMPLETED", "succeeded=3"), retried.state
    assert retried.run_count == 2
    assert _extractions(model, TOPICS) == {"alpha": 1, "bravo": 2 + MODEL_RETRIES, "charlie": 1}
    jobs = _stage1_jobs(home["db_path"])
    assert len(jobs) == 3 and all(job == ("done", None, None) for job in jobs.values()), jobs
    assert _count(home["db_path"], "stage1_outputs") == 3 and _count(home["db_path"], "stage1_arrived_results") == 0


def test_a_failed_phase2_run_retried_after_the_model_recovers_consolidates(
    served: PrefectStack, model: OpenAITestServer, home: dict[str, Any]
) -> None:
    assert _count(home["db_path"], "stage1_outputs"), "phase 2 consolidates what the phase-1 test extracted"
    model.clear_requests()
    model.set_handler(lambda request: ScriptedReply.http_error(400, "model not available"))
    with served.client() as client:
        flow_run = _run(client, "memories-phase2", {})
        failed = wait_terminal(client, flow_run.id, timeout=240)
        assert (failed.state.type.value, failed.state.name) == ("FAILED", "Failed"), failed.state
        assert failed.state.message.startswith("failed_"), failed.state.message
        assert not (home["memory_root"] / "memory_summary.md").exists()

        released = threading.Event()
        released.set()
        model.set_handler(_consolidation_agent(released))
        retry_like_the_ui(client, flow_run.id)
        retried = wait_terminal(client, flow_run.id, timeout=240)

    # Without the retry taking over its own backoff this run would be `skipped_retry_unavailable`.
    assert (retried.state.type.value, retried.state.message) == ("COMPLETED", "succeeded"), retried.state
    assert (home["memory_root"] / "memory_summary.md").read_text(encoding="utf-8").startswith("v1")


def test_a_failed_backfill_retried_after_the_model_recovers_extracts_the_rest_once(
    served: PrefectStack, model: OpenAITestServer, home: dict[str, Any]
) -> None:
    released = threading.Event()
    released.set()
    agent = _consolidation_agent(released)
    model.clear_requests()
    model.set_handler(_failing_stage1("echo", otherwise=agent))
    with served.client() as client:
        flow_run = _run(client, "memories-backfill", {})
        failed = wait_terminal(client, flow_run.id, timeout=300)
        assert (failed.state.type.value, failed.state.name) == ("FAILED", "Partial"), failed.state
        assert _extractions(model, ARCHIVED_TOPICS) == {"delta": 1, "echo": 1 + MODEL_RETRIES}

        model.set_handler(agent)
        retry_like_the_ui(client, flow_run.id)
        retried = wait_terminal(client, flow_run.id, timeout=300)

    assert retried.state.type.value == "COMPLETED", retried.state
    assert retried.state.message.startswith("extractions: succeeded=2; phase 2: succeeded"), retried.state.message
    assert _extractions(model, ARCHIVED_TOPICS) == {"delta": 1, "echo": 2 + MODEL_RETRIES}
    jobs = _stage1_jobs(home["db_path"])
    assert len(jobs) == 5 and all(job == ("done", None, None) for job in jobs.values()), jobs


# -- helpers -------------------------------------------------------------------------------------


def _run(client: Any, deployment: str, parameters: dict[str, Any]) -> Any:
    found = client.read_deployment_by_name(f"{deployment}/{deployment}")  # each flow's name is its deployment's
    return client.create_flow_run_from_deployment(found.id, parameters=parameters)


def _failing_stage1(topic: str, otherwise: Any = default_handler) -> Any:
    """Stage-1 requests about `topic` fail (a 503 the client retries); everything else is answered."""

    def handler(request: RecordedRequest) -> ScriptedReply:
        if is_stage1_request(request) and f"/home/dana/src/{topic}" in request.input_text:
            return ScriptedReply.http_error(503, "scripted outage")
        return otherwise(request)

    return handler


def _extractions(model: OpenAITestServer, topics: tuple[str, ...]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for request in model.requests:
        if is_stage1_request(request):
            counts.update(topic for topic in topics if f"/home/dana/src/{topic}" in request.input_text)
    return dict(counts)


def _stage1_jobs(db_path: Path) -> dict[str, tuple[str, Any, Any]]:
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute("SELECT job_key, status, retry_at, last_error FROM jobs WHERE kind = 'memory_stage1'")
        return {key: (status, retry_at, last_error) for key, status, retry_at, last_error in rows}


def _count(db_path: Path, table: str) -> int:
    with sqlite3.connect(db_path) as connection:
        return connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_a_run_that_asks_for_review_keeps_the_deployments_settings_and_is_decided_from_the_cli(
    served: PrefectStack, model: OpenAITestServer, home: dict[str, Any]
) -> None:
    from prefect.input.run_input import keyset_from_paused_state

    released = threading.Event()
    released.set()
    model.set_handler(_consolidation_agent(released))
    write_rollout(
        home["codex_home"], created_at=datetime.now(UTC) - timedelta(hours=20), cwd="/home/dana/src/foxtrot",
        user_messages=["In foxtrot always run make check before pushing."],
    )
    live_before = _tree(home["memory_root"])
    with served.client() as client:
        extracted = wait_terminal(client, _run(client, "memories-phase1", {"overrides": {"max_rollouts_per_startup": 8}}).id, timeout=240)
        # succeeded=1 after the module's other tests; run alone, the module's rollouts come too.
        assert extracted.state.is_completed() and extracted.state.message.startswith("succeeded="), extracted.state
        # Only `review` given: Prefect alone would drop the deployment's db_url and memory_root.
        flow_run = _run(client, "memories-phase2", {"overrides": {"review": "ask"}, "force": True})
        paused = wait_for(lambda: _paused_or_none(client, flow_run.id), timeout=240, what="the review pause")
        # Prefect stores the form a moment after the run shows Paused.
        form = wait_for(
            lambda: _input_or_none(client, flow_run.id, keyset_from_paused_state(paused.state)["description"]),
            timeout=30, what="the review form",
        )
        assert "Choose a decision: approve to apply this consolidation" in form and "foxtrot" in form
        assert (home["memory_root"].parent / f".{home['memory_root'].name}.proposal").is_dir()

        decided = subprocess.run(
            [
                sys.executable, "-m", "codex_memories_cli.main", "review", "--reject", "--comment", "not now",
                "--codex-home", str(home["codex_home"]), "--db", f"sqlite:///{home['db_path']}",
                "--memory-root", str(home["memory_root"]),
            ],
            cwd=REPO_ROOT, env=served.env, capture_output=True, text=True, timeout=120,
        )
        assert decided.returncode == 0, decided.stderr
        assert decided.stdout.startswith(f"rejected: flow run {flow_run.id} resumed with the decision")
        rejected = wait_terminal(client, flow_run.id, timeout=120)

    assert (rejected.state.type.value, rejected.state.name) == ("CANCELLED", "Rejected"), rejected.state
    assert rejected.state.message == "skipped_review_rejected: rejected in review: not now"
    assert _tree(home["memory_root"]) == live_before  # nothing applied


def _paused_or_none(client: Any, flow_run_id: Any) -> Any:
    run = client.read_flow_run(flow_run_id)
    assert run.state is not None and not run.state.is_final(), run.state
    return run if run.state.is_paused() else None


def _input_or_none(client: Any, flow_run_id: Any, key: str) -> str | None:
    from prefect.exceptions import PrefectHTTPStatusError

    try:
        return client.read_flow_run_input(flow_run_id, key)
    except PrefectHTTPStatusError as error:
        if error.response.status_code != 404:
            raise
        return None


def _tree(root: Path) -> dict[str, bytes]:
    """The folder's files, but its binding to the state DB (bookkeeping a run writes as it starts)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and str(path.relative_to(root)) != STATE_BINDING_PATH
    }
