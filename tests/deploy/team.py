"""A team's Prefect setup for the deploy test and the benchmark of two workers against one
(`tests/deploy/test_team_stack.py`, `benchmarks/team_workers.py`): archived sessions over several
days, a test model whose extractions are slow (the model is the bottleneck), a fresh PostgreSQL
state DB, a bucket on an S3 endpoint (the memory root and the shared results storage), and
process workers with their own Prefect homes (as on their own machines) that share the flows'
settings and the results block.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from tests.deploy.prefect_stack import POSTGRES_ADMIN_DSN, PrefectStack, stop_process_group
from tests.support.openai_server import RecordedRequest, ScriptedReply, is_stage1_request
from tests.support.rollout_factory import write_rollout

MARKER = re.compile(r"team-session-(\d{3})")
BACKFILL_DEPLOYMENT = "memories-backfill/memories-backfill"


class ModelGate:
    """While closed, extraction requests wait unanswered at the model (`slow_extractions`): a test
    closes it to kill a worker at a moment when every answer already sent has been stored."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._waiting: Counter[int] = Counter()

    def close(self) -> None:
        self._open.clear()

    def open(self) -> None:
        self._open.set()

    def held_sessions(self) -> set[int]:
        with self._lock:
            return {session for session, count in self._waiting.items() if count}

    def pass_through(self, request: RecordedRequest) -> None:
        if self._open.is_set():
            return
        session = session_of(request)
        with self._lock:
            self._waiting[session] += 1
        self._open.wait()
        with self._lock:
            self._waiting[session] -= 1


def slow_extractions(otherwise: Any, delay: float, gate: ModelGate | None = None) -> Any:
    """Stage-1 requests answered as `otherwise` answers them, after `delay` seconds (and after
    `gate` opens, when it is closed)."""

    def handler(request: RecordedRequest) -> ScriptedReply:
        if gate is not None and is_stage1_request(request):
            gate.pass_through(request)
        reply = otherwise(request)
        if is_stage1_request(request):
            return dataclasses.replace(reply, delay_seconds=reply.delay_seconds + delay)
        return reply

    return handler


def write_archived_sessions(codex_home: Path, *, days: int, per_day: int) -> dict[str, list[str]]:
    """`days * per_day` archived sessions, `per_day` last active on each of `days` past days;
    each names its number (`team-session-NNN`) so requests can be counted per session. Returns
    the thread ids by day (YYYY-MM-DD)."""
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    first_day = (datetime.now(UTC) - timedelta(days=days + 1)).replace(hour=9, minute=0, second=0, microsecond=0)
    by_day: dict[str, list[str]] = {}
    for number in range(days * per_day):
        created = first_day + timedelta(days=number // per_day, minutes=5 * (number % per_day))
        path = write_rollout(
            codex_home,
            created_at=created,
            cwd=f"/home/dana/src/team-{number:03d}",
            archived=True,
            user_messages=[f"In team-session-{number:03d} always run make check before pushing."],
        )
        by_day.setdefault(created.date().isoformat(), []).append(path.stem[-36:])
    return by_day


def session_of(request: RecordedRequest) -> int:
    """The session number an extraction request is about."""
    found = {int(number) for number in MARKER.findall(request.input_text)}
    if len(found) != 1:
        raise AssertionError(f"an extraction request naming {sorted(found)}")
    return found.pop()


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A new PostgreSQL database (its SQLAlchemy URL), dropped on the way out."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN_DSN, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_DSN, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclasses.dataclass(frozen=True)
class TeamBucket:
    """A bucket on an S3 endpoint (moto's server, or a real one such as radosgw) and the keys to it."""

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    name: str
    region: str = "us-east-1"

    def worker_env(self) -> dict[str, str]:
        """What infra/README.md puts in a worker's environment for an S3 memory root and S3 results
        storage: the standard AWS variables (the endpoint one only for a non-AWS S3)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": self.region,
        }

    def url(self, prefix: str) -> str:
        return f"s3://{self.name}/{prefix}"

    def filesystem(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(
            key=self.access_key_id,
            secret=self.secret_access_key,
            client_kwargs={"endpoint_url": self.endpoint_url},
            skip_instance_cache=True,
        )

    def keys(self, prefix: str) -> list[str]:
        """The objects under `prefix` (paths relative to it), without their content."""
        base = f"{self.name}/{prefix}"
        return [path[len(base) + 1 :] for path in self.filesystem().find(base)]

    def objects(self, prefix: str) -> dict[str, bytes]:
        """Every object under `prefix` (path relative to it -> content)."""
        filesystem = self.filesystem()
        base = f"{self.name}/{prefix}"
        return {path[len(base) + 1 :]: filesystem.cat_file(path) for path in filesystem.find(base)}


# AWS settings of the test's own environment that must not reach the workers (a developer's
# profile or endpoint): they get the bucket's variables only.
FOREIGN_AWS_VARIABLES = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@contextmanager
def new_bucket(endpoint_url: str, access_key_id: str, secret_access_key: str) -> Iterator[TeamBucket]:
    """A new bucket on the endpoint, emptied and removed on the way out."""
    bucket = TeamBucket(endpoint_url, access_key_id, secret_access_key, name=f"team-{uuid.uuid4().hex[:12]}")
    filesystem = bucket.filesystem()
    filesystem.mkdir(bucket.name)
    try:
        yield bucket
    finally:
        filesystem = bucket.filesystem()
        filesystem.rm(bucket.name, recursive=True)


def launch_day_backfills(client: Any, days: list[str]) -> list[Any]:
    """One run of the backfill deployment per day, as a team launches them."""
    return [launch_backfill(client, {"since": day, "until": day}) for day in days]


def launch_backfill(client: Any, parameters: dict[str, Any]) -> Any:
    deployment = client.read_deployment_by_name(BACKFILL_DEPLOYMENT)
    return client.create_flow_run_from_deployment(deployment.id, parameters=parameters).id


def final_or_none(client: Any, flow_run_id: Any) -> Any:
    run = client.read_flow_run(flow_run_id)
    return run if run.state and run.state.is_final() else None


class Team:
    """The stack, its workers and the environment they share (the flows' settings)."""

    def __init__(self, stack: PrefectStack, worker_env: dict[str, str], *, limit: int) -> None:
        self.stack = stack
        self.worker_env = worker_env
        self.limit = limit
        self.mark = uuid.uuid4().hex  # in every process this team starts
        self.workers: dict[str, Any] = {}

    def start_worker(self, name: str) -> None:
        env = self.worker_env | {
            "TEAM_STACK_MARK": self.mark,
            "TEAM_STACK_WORKER": name,
            # Its own Prefect home, as on its own machine: only the results block is shared.
            "PREFECT_HOME": str(self.stack.root / f"prefect-home-{name}"),
        }
        self.workers[name] = self.stack.start_worker(env, name=name, limit=self.limit)

    def flow_run_processes(self, worker: str | None = None) -> dict[int, str]:
        """Live flow-run processes of this team (pid -> flow run id), of one worker or all."""
        wanted = {f"TEAM_STACK_MARK={self.mark}".encode()}
        if worker is not None:
            wanted.add(f"TEAM_STACK_WORKER={worker}".encode())
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                variables = set((entry / "environ").read_bytes().split(b"\0"))
            except OSError:
                continue  # ended meanwhile, or not ours to read
            run_ids = [item.split(b"=", 1)[1].decode() for item in variables if item.startswith(b"PREFECT__FLOW_RUN_ID=")]
            if run_ids and wanted <= variables:
                found[int(entry.name)] = run_ids[0]
        return found

    def kill_worker(self, name: str) -> set[str]:
        """SIGKILL a worker's process group and its flow-run processes (their own sessions);
        returns the flow runs it was running."""
        children = self.flow_run_processes(name)
        os.killpg(self.workers[name].pid, signal.SIGKILL)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue  # went with the process group
        self.workers[name].wait(timeout=30)
        return set(children.values())

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                stop_process_group(process)
        for pid in self.flow_run_processes():
            try:
                os.kill(pid, signal.SIGKILL)  # a flow run the worker's stop left behind
            except ProcessLookupError:
                continue  # it ended meanwhile
        self.workers.clear()
