"""Phase-1 efficiency: how close the extraction map gets to `ceil(N / 8) x latency`.

What it does, per repetition, in a fresh child process (as the CLI runs):
1. writes N realistic small interactive `cli` rollouts with the rollout factory into a temp
   CODEX_HOME (`[features] memories = true`), all eligible (`ignore_age_windows=True`);
2. starts the test OpenAI-compatible server on 127.0.0.1 with a fixed latency per request, by
   default in a process of its own (`--server process`, as a real model server is remote; it
   records each request's arrival on the shared monotonic clock), or in a thread of the child
   (`--server thread`, how this benchmark ran until 2026-12-01 evening: its request handling then
   shares the GIL with the flow and with the baselines alike);
3. imports the flow and starts Prefect's temporary server with a no-op flow (both timed and
   reported apart: they are per-process costs, not phase-1 costs);
4. runs the real `phase1` flow (provider `openai`, `base_url` = the test server, concurrency 8,
   `max_rollouts_per_startup=128`) until every rollout is extracted. The store caps one run's
   claims at `max_rollouts_per_startup` (128, the maximum), so N=200 takes two flow runs
   (128 + 72); both are measured and summed. 128 is a multiple of 8, so the ideal of the two runs
   together equals `ceil(N / 8) x latency`;
5. replays the very same HTTP request bodies the flow sent through a plain
   `ThreadPoolExecutor(8)` with the `openai` client (the baseline), then runs the library's
   `extract_memory` on the same claims in a plain pool, once with one shared provider and once
   building the provider per call as `tasks/extract.py` does (these two locate the overhead).

Timing hooks live in this script only: every Prefect task the flow module calls is wrapped in a
timer (stage breakdown), and a `codex_memories.progress` listener marks when the extraction map
starts. The extraction stage is measured from the map's start (first submission) to the start of
the quality check (all futures collected); the model-call window is the first request the server
received to the last extraction finished. The slot turnaround is, per freed slot, the time from an
answer sent to the next request received (`_turnarounds`): the window's loss against the ideal is
made of these gaps.

    .venv/bin/python -m benchmarks.phase1_efficiency [--rollouts 200] [--latency 0.5] [--repeats 3] [--server process|thread] [--save-report]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.support import (
    REPO_ROOT,
    machine_description,
    markdown_table,
    median,
    prepare_prefect_environment,
    save_report,
    scratch_dir,
    spread,
)
from codex_memories.settings import SettingsOverrides

CONCURRENCY = 8
MAX_CLAIMS_PER_RUN = 128  # the clamp of Codex's max_rollouts_per_startup
SECTION = "phase1_efficiency"


# ---- data ------------------------------------------------------------------------------------


def write_sessions(codex_home: Path, count: int) -> int:
    """N small interactive sessions: 1-3 turns, 2-6 shell calls, outputs of a few hundred bytes
    to a few KB, in a handful of projects. Returns the bytes written."""
    import random
    from datetime import UTC, datetime, timedelta

    from tests.support.rollout_factory import write_rollout

    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    rng = random.Random(1234)
    projects = ["api", "web", "infra", "billing", "cli", "docs", "search", "mobile"]
    asks = [
        "Fix the failing test in {p} and keep using pnpm, never npm.",
        "Add retries with exponential backoff to the {p} webhook sender.",
        "Why does the {p} build fail on CI but not locally?",
        "Rename the config loader in {p} and update its callers.",
        "Write a migration for the new column in {p}; we use alembic.",
    ]
    follow_ups = ["Also run the linter.", "Keep the diff small please.", "Now update the changelog."]
    commands = [
        ("pnpm test --filter {p}", "PASS src/{p}/a.test.ts\nFAIL src/{p}/b.test.ts\n  expected 200, got 500\n"),
        ("rg -n 'def load_config' {p}", "{p}/config.py:12:def load_config(path):\n"),
        ("git status --short", " M {p}/sender.py\n M tests/test_sender.py\n"),
        ("pytest -q tests/{p}", "....F..\nFAILED tests/{p}/test_retry.py::test_backoff - AssertionError\n"),
        ("cat {p}/README.md", "# {p}\n\nRun `make dev` to start. Requires Python 3.11.\n"),
    ]
    start = datetime.now(UTC) - timedelta(days=3)
    total = 0
    for index in range(count):
        project = rng.choice(projects)
        turns = rng.randint(1, 3)
        messages = [rng.choice(asks).format(p=project)] + rng.sample(follow_ups, turns - 1)
        calls = []
        for _ in range(rng.randint(2, 6)):
            command, output = rng.choice(commands)
            calls.append((command.format(p=project), output.format(p=project) * rng.randint(1, 12)))
        path = write_rollout(
            codex_home,
            created_at=start + timedelta(minutes=17 * index),
            cwd=f"/home/dana/src/{project}",
            user_messages=messages,
            tool_calls=calls,
            assistant_messages=[f"Done with step {turn + 1} in {project}." for turn in range(turns)],
        )
        total += path.stat().st_size
    return total


# ---- the model server in its own process -----------------------------------------------------


class _ServerProcess:
    """The test OpenAI-compatible server in a process of its own, as a real model server is: in
    the flow's process its HTTP handling and JSON encoding of every answer share the GIL with the
    flow. It appends one JSON line per request (arrival on the shared monotonic clock: perf_counter
    is CLOCK_MONOTONIC on Linux, comparable across processes; endpoint; body) to `record`, and runs
    until its stdin closes."""

    def __init__(self, latency: float, record: Path) -> None:
        self.record = record
        self._read = 0
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.phase1_efficiency", "--model-server", "--latency", str(latency), "--output", str(record)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO_ROOT, text=True,
        )
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the model-server process did not start (said {self.base_url!r})")

    def all_requests(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines() if line]

    def new_arrivals(self) -> list[float]:
        """Arrival times of the extraction requests received since the last call."""
        requests = self.all_requests()
        fresh, self._read = requests[self._read:], len(requests)
        return [request["at"] for request in fresh if request["endpoint"] == "responses"]

    def stop(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def run_model_server(latency: float, record: Path) -> None:
    from tests.support.openai_server import default_handler, running_openai_server

    lock = threading.Lock()
    with record.open("a", encoding="utf-8") as sink:

        def recording_handler(request: Any) -> Any:
            arrived = time.perf_counter()
            line = json.dumps({"at": arrived, "endpoint": request.endpoint, "body": request.body})
            with lock:
                sink.write(line + "\n")
                sink.flush()
            return default_handler(request)

        with running_openai_server(recording_handler, latency_seconds=latency) as server:
            print(server.base_url, flush=True)
            sys.stdin.read()  # until the benchmark closes the pipe


# ---- the child: one measured repetition ------------------------------------------------------


class _Marks:
    """Thread-safe timestamps (perf_counter) from the hooks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.extract_started: list[float] = []
        self.extract_advanced: list[float] = []
        self.requests: list[float] = []
        self.stages: list[tuple[str, float, float]] = []
        self.claims: list[Any] = []

    # progress listener protocol
    def start(self, stage: str, total: int) -> None:
        if stage == "extract":
            with self.lock:
                self.extract_started.append(time.perf_counter())

    def advance(self, stage: str, amount: int = 1) -> None:
        if stage == "extract":
            with self.lock:
                self.extract_advanced.append(time.perf_counter())


def _install_stage_timers(module: Any, marks: _Marks) -> None:
    """Wrap every Prefect task the flow module calls directly (not the extraction, which the flow
    re-optioned and submits) in a timer. Calling the wrapped Task inside the flow still runs it as
    a Prefect task."""
    from prefect import Task

    for name, value in list(vars(module).items()):
        if not isinstance(value, Task) or name == "extract_rollout":
            continue

        def timed(*args: Any, __task: Task = value, __name: str = name, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = __task(*args, **kwargs)
            finished = time.perf_counter()
            with marks.lock:
                marks.stages.append((__name, started, finished))
                if __name == "claim_stage1_jobs":
                    marks.claims.extend(result)
            return result

        setattr(module, name, timed)


def run_child(rollouts: int, latency: float, work: Path, output: Path, server_mode: str, whole_run_pairs: int) -> None:
    prepare_prefect_environment(work / "prefect")
    codex_home = work / "codex_home"
    data_bytes = write_sessions(codex_home, rollouts)
    _say(f"wrote {rollouts} rollouts ({data_bytes / 1e6:.1f} MB)")

    from tests.support.openai_server import default_handler, running_openai_server

    marks = _Marks()

    def recording_handler(request: Any) -> Any:
        with marks.lock:
            marks.requests.append(time.perf_counter())
        return default_handler(request)

    started = time.perf_counter()
    from prefect import flow

    import codex_memories_flows.phase1 as phase1_module

    import_seconds = time.perf_counter() - started

    @flow(name="benchmark-warmup")
    def warmup() -> None:
        return None

    started = time.perf_counter()
    warmup()
    prefect_start_seconds = time.perf_counter() - started
    _say(f"imports {import_seconds:.1f} s, Prefect temporary server {prefect_start_seconds:.1f} s")

    from codex_memories import progress

    _install_stage_timers(phase1_module, marks)
    progress.subscribe(marks)

    result: dict[str, Any] = {
        "rollouts": rollouts,
        "latency": latency,
        "data_bytes": data_bytes,
        "import_seconds": import_seconds,
        "prefect_start_seconds": prefect_start_seconds,
        "runs": [],
    }
    result["server_mode"] = server_mode
    with contextlib.ExitStack() as stack:
        if server_mode == "process":
            server_process = _ServerProcess(latency, work / "requests.jsonl")
            stack.callback(server_process.stop)
            base_url = server_process.base_url
        else:
            server_process = None
            in_process = stack.enter_context(running_openai_server(recording_handler, latency_seconds=latency))
            base_url = in_process.base_url
        extracted = 0
        while extracted < rollouts:
            marks.stages.clear()
            marks.extract_started.clear()
            marks.extract_advanced.clear()
            marks.requests.clear()
            started = time.perf_counter()
            report = phase1_module.phase1(overrides=_run_overrides(codex_home, work, base_url))
            finished = time.perf_counter()
            if server_process is not None:
                marks.requests[:] = server_process.new_arrivals()
            if report.claimed == 0:
                raise RuntimeError(f"a flow run claimed nothing with {rollouts - extracted} rollouts left")
            outcomes = {str(key): value for key, value in report.outcome_counts().items()}
            quality_start = next(start for name, start, _ in marks.stages if name == "check_extraction_quality")
            stages: dict[str, float] = {}
            for name, stage_start, stage_end in marks.stages:
                stages[name] = stages.get(name, 0.0) + stage_end - stage_start
            result["runs"].append(
                {
                    "claimed": report.claimed,
                    "outcomes": outcomes,
                    "flow_seconds": finished - started,
                    "extract_stage_seconds": quality_start - marks.extract_started[0],
                    "model_window_seconds": max(marks.extract_advanced) - min(marks.requests),
                    # As the model server sees it: first request received to the last answer
                    # sent (each answer leaves `latency` after its request arrived).
                    "server_window_seconds": max(marks.requests) + latency - min(marks.requests),
                    "requests": len(marks.requests),
                    "turnarounds": _turnarounds(marks.requests, latency),
                    "stages": stages,
                }
            )
            extracted += report.claimed
            _say(f"flow run: {report.claimed} claimed, {finished - started:.1f} s")

        if server_process is not None:
            bodies = [request["body"] for request in server_process.all_requests() if request["endpoint"] == "responses"]
        else:
            bodies = [request.body for request in in_process.requests if request.endpoint == "responses"]
        claims = list(marks.claims)
        result["plain_pool_seconds"] = _plain_pool(base_url, bodies)
        result["library_shared_seconds"], result["library_per_call_seconds"] = _library_pools(
            base_url, codex_home, claims
        )
        result["replayed_requests"] = len(bodies)
        result["prefect_floor_seconds"], result["prefect_floor_persisted_seconds"] = _prefect_floor(
            phase1_module, codex_home, claims, latency
        )
        _say(f"baselines: plain pool {result['plain_pool_seconds']:.1f} s, library "
             f"{result['library_shared_seconds']:.1f} s / {result['library_per_call_seconds']:.1f} s, Prefect floor "
             f"{result['prefect_floor_seconds']:.1f} s / {result['prefect_floor_persisted_seconds']:.1f} s")

        # Whole runs: the same flow on fresh state at zero latency and at `latency`, alternating, in
        # this warm process (imports, the temporary server and the quality check's first import
        # are paid by the runs above), so the difference is what the model's latency costs.
        if whole_run_pairs:
            if server_process is not None:
                instant = _ServerProcess(0.0, work / "requests-instant.jsonl")
                stack.callback(instant.stop)
                instant_url = instant.base_url
            else:
                instant_url = stack.enter_context(running_openai_server(default_handler)).base_url
            result["whole_runs"] = {"instant": [], "latency": []}
            # One discarded zero-latency run first: the first run against a new server paid 2 s
            # more than the next (a new connection pool, first requests) in a trial.
            runs = [(-1, "warm-up", instant_url)] + [
                (pair, kind, url) for pair in range(whole_run_pairs) for kind, url in (("instant", instant_url), ("latency", base_url))
            ]
            for pair, kind, url in runs:
                fresh = work / f"whole-{pair}-{kind}"
                started = time.perf_counter()
                report = phase1_module.phase1(overrides=_run_overrides(codex_home, fresh, url))
                elapsed = time.perf_counter() - started
                if report.claimed != min(rollouts, MAX_CLAIMS_PER_RUN):
                    raise RuntimeError(f"a whole run claimed {report.claimed}")
                if kind != "warm-up":
                    result["whole_runs"][kind].append(elapsed)
                _say(f"whole run {pair + 1} ({kind}) at {latency if kind == 'latency' else 0} s: {elapsed:.1f} s")
    output.write_text(json.dumps(result), encoding="utf-8")


def _run_overrides(codex_home: Path, state_dir: Path, base_url: str) -> SettingsOverrides:
    """One measured flow run: its state DB and memory root under `state_dir`, the test server's URL."""
    return SettingsOverrides(
        codex_home=str(codex_home), db_url=f"sqlite:///{state_dir / 'state.sqlite'}", memory_root=str(state_dir / "memories"),
        provider="openai", base_url=base_url, max_rollouts_per_startup=MAX_CLAIMS_PER_RUN, ignore_age_windows=True,
        concurrency=CONCURRENCY,
    )


def _turnarounds(requests: list[float], latency: float) -> list[float]:
    """Per freed slot: from an answer sent to the next request received. With a fixed latency
    answers leave in request order, and the bounded submitter sends request k (k >= concurrency)
    once an answer frees a slot, i.e. after answer k - concurrency; the window's loss against the
    ideal is these gaps along each slot's chain."""
    ordered = sorted(requests)
    return [ordered[k] - (ordered[k - CONCURRENCY] + latency) for k in range(CONCURRENCY, len(ordered))]


def _say(message: str) -> None:
    print(f"  [child] {message}", file=sys.stderr, flush=True)


def _plain_pool(base_url: str, bodies: list[dict[str, Any]]) -> float:
    """The baseline: the same request bodies, one shared `openai` client, 8 threads."""
    from concurrent.futures import ThreadPoolExecutor

    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="benchmark", max_retries=0)
    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(lambda body: client.responses.create(**body), bodies))
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def _library_pools(base_url: str, codex_home: Path, claims: list[Any]) -> tuple[float, float]:
    """`extract_memory` on the same claims in a plain pool: one shared provider, then one provider
    per call (as `tasks/extract.py` builds it). No Prefect, no DB."""
    from concurrent.futures import ThreadPoolExecutor

    from codex_memories.extract.extraction import extract_memory
    from codex_memories.runtime import extraction_provider
    from codex_memories.settings import load_runtime_config

    config = load_runtime_config(codex_home=str(codex_home), provider="openai", base_url=base_url)
    budget = config.settings.rollout_token_budget
    shared = extraction_provider(config)

    def with_shared(claim: Any) -> Any:
        return extract_memory(claim, shared, model=config.extract_model, token_budget=budget)

    def with_per_call(claim: Any) -> Any:
        return extract_memory(claim, extraction_provider(config), model=config.extract_model, token_budget=budget)

    timings = []
    for work in (with_shared, with_per_call):
        started = time.perf_counter()
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            results = list(pool.map(work, claims))
        timings.append(time.perf_counter() - started)
        failed = [r for r in results if r.outcome.value != "succeeded"]
        if failed:
            raise RuntimeError(f"library baseline: {len(failed)} extraction(s) did not succeed: {failed[0].reason}")
    return timings[0], timings[1]


def _prefect_floor(phase1_module: Any, codex_home: Path, claims: list[Any], latency: float) -> tuple[float, float]:
    """Prefect's own cost: the flow's bounded submission (`_submit_bounded`, same task runner) of
    tasks that only sleep `latency`; once plain, once with a cache key and a persisted result as
    the extraction task has. No transcript, no HTTP, no DB."""
    import uuid

    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    from codex_memories.settings import load_runtime_config

    config = load_runtime_config(codex_home=str(codex_home), concurrency=CONCURRENCY)
    salt = uuid.uuid4().hex

    @task(name="benchmark-sleep", cache_policy=None)
    def sleep_plain(claim: Any, config: Any) -> str:
        time.sleep(latency)
        return claim.thread_id

    @task(
        name="benchmark-sleep-persisted",
        cache_key_fn=lambda _context, parameters: f"benchmark-{salt}-{parameters['claim'].thread_id}",
        persist_result=True,
    )
    def sleep_persisted(claim: Any, config: Any) -> str:
        time.sleep(latency)
        return claim.thread_id

    @flow(name="benchmark-prefect-floor", task_runner=ThreadPoolTaskRunner(max_workers=phase1_module.MAX_EXTRACTION_WORKERS))
    def floor(sleeper: Any) -> float:
        started = time.perf_counter()
        futures, _ = phase1_module._submit_bounded(sleeper, claims, config)
        for future in futures:
            future.result()
        return time.perf_counter() - started

    return floor(sleep_plain), floor(sleep_persisted)


# ---- the parent: repetitions, table, README --------------------------------------------------


def ideal_seconds(count: int, latency: float) -> float:
    return math.ceil(count / CONCURRENCY) * latency


def run_repetition(rollouts: int, latency: float, server_mode: str, whole_run_pairs: int) -> dict[str, Any]:
    """One fresh child process; retried once when it fails (the temporary Prefect server can
    fail to start on an overloaded machine), so one hiccup does not lose the other repetitions."""
    for attempt in (1, 2):
        work = scratch_dir("phase1-")
        output = work / "result.json"
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "benchmarks.phase1_efficiency", "--child", "--rollouts", str(rollouts), "--latency", str(latency),
                 "--work", str(work), "--output", str(output), "--server", server_mode, "--whole-run-pairs", str(whole_run_pairs)],
                check=False,
                cwd=REPO_ROOT,
            )
            if completed.returncode == 0:
                return json.loads(output.read_text(encoding="utf-8"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"  repetition failed (attempt {attempt}, exit code {completed.returncode})", file=sys.stderr, flush=True)
    raise RuntimeError("a repetition failed twice")


def summarize(results: list[dict[str, Any]]) -> str:
    first = results[0]
    rollouts, latency = first["rollouts"], first["latency"]
    ideal_total = sum(ideal_seconds(run["claimed"], latency) for run in first["runs"])
    ideal = ideal_seconds(rollouts, latency)

    def total(key: str) -> list[float]:
        return [sum(run[key] for run in result["runs"]) for result in results]

    flow = total("flow_seconds")
    stage = total("extract_stage_seconds")
    window = total("model_window_seconds")
    server_window = total("server_window_seconds")
    plain = [result["plain_pool_seconds"] for result in results]
    shared = [result["library_shared_seconds"] for result in results]
    per_call = [result["library_per_call_seconds"] for result in results]
    floor_plain = [result["prefect_floor_seconds"] for result in results]
    floor_persisted = [result["prefect_floor_persisted_seconds"] for result in results]

    def efficiency(values: list[float]) -> list[float]:
        return [ideal / value for value in values]

    rows = [
        ["phase-1 flow runs, whole (sum of runs)", spread(flow, unit=" s"), spread(efficiency(flow))],
        ["extraction stage (map start → all futures collected)", spread(stage, unit=" s"), spread(efficiency(stage))],
        ["**model-server window (first request received → last answer sent)**", spread(server_window, unit=" s"), spread(efficiency(server_window))],
        ["model-call window (first request → last extraction task done)", spread(window, unit=" s"), spread(efficiency(window))],
        ["baseline: ThreadPoolExecutor(8) + openai client, same requests", spread(plain, unit=" s"), spread(efficiency(plain))],
        ["library `extract_memory` in ThreadPoolExecutor(8), one shared provider", spread(shared, unit=" s"), spread(efficiency(shared))],
        ["library `extract_memory` in ThreadPoolExecutor(8), provider per call (as the task)", spread(per_call, unit=" s"), spread(efficiency(per_call))],
        ["Prefect floor: the flow's bounded submission of tasks that only sleep the latency", spread(floor_plain, unit=" s"), spread(efficiency(floor_plain))],
        ["Prefect floor, tasks with a cache key + persisted result (as the extraction task)", spread(floor_persisted, unit=" s"), spread(efficiency(floor_persisted))],
    ]
    main_table = markdown_table(["measured", "seconds, median (range)", "efficiency = ideal / measured"], rows)

    per_run_rows = []
    for index, run in enumerate(first["runs"]):
        flows = [result["runs"][index]["flow_seconds"] for result in results]
        stages = [result["runs"][index]["extract_stage_seconds"] for result in results]
        quality = [result["runs"][index]["stages"].get("check_extraction_quality", 0.0) for result in results]
        run_ideal = ideal_seconds(run["claimed"], latency)
        per_run_rows.append(
            [f"run {index + 1}", str(run["claimed"]), f"{run_ideal:.2f} s", spread(flows, unit=" s"),
             spread([run_ideal / value for value in flows]), spread(stages, unit=" s"),
             spread([run_ideal / value for value in stages]), spread(quality, unit=" s")]
        )
    per_run_table = markdown_table(
        ["flow run", "claimed", "ideal", "flow wall", "flow eff.", "extraction stage", "stage eff.", "quality check"],
        per_run_rows,
    )

    stage_names = sorted({name for result in results for run in result["runs"] for name in run["stages"]})
    stage_rows = []
    for name in stage_names:
        values = [sum(run["stages"].get(name, 0.0) for run in result["runs"]) for result in results]
        stage_rows.append([f"`{name}`", spread(values, unit=" s")])
    other = [
        sum(run["flow_seconds"] - run["extract_stage_seconds"] - sum(run["stages"].values()) for run in result["runs"])
        for result in results
    ]
    stage_rows.append(["flow start/finish, Prefect bookkeeping and the rest (flow − stages − extraction)", spread(other, unit=" s")])
    stage_table = markdown_table(["other stage (sum over the flow runs)", "seconds, median (range)"], stage_rows)

    turnarounds = [sorted(gap for run in result["runs"] for gap in run["turnarounds"]) for result in results]
    turnaround_rows = [
        ["median", spread([1000 * gaps[len(gaps) // 2] for gaps in turnarounds], unit=" ms")],
        ["90th percentile", spread([1000 * gaps[int(len(gaps) * 0.9)] for gaps in turnarounds], unit=" ms")],
        ["sum over the freed slots / concurrency (≈ the window's loss)", spread([sum(gaps) / CONCURRENCY for gaps in turnarounds], unit=" s")],
    ]
    turnaround_table = markdown_table(["slot turnaround: answer sent → the freed slot's next request received", "value"], turnaround_rows)

    process_rows = [
        ["`import codex_memories_flows.phase1` (Prefect, openai, SQLAlchemy, ...)", spread([r["import_seconds"] for r in results], unit=" s")],
        ["Prefect temporary server start (first flow call in a process)", spread([r["prefect_start_seconds"] for r in results], unit=" s")],
    ]
    process_table = markdown_table(["per-process cost (paid by every CLI invocation, outside the flow wall time)", "seconds"], process_rows)

    whole_lines: list[str] = []
    if all(result.get("whole_runs") for result in results):
        instant = [median(result["whole_runs"]["instant"]) for result in results]
        slow = [median(result["whole_runs"]["latency"]) for result in results]
        paired = [ideal / (s - i) for result in results for s, i in zip(result["whole_runs"]["latency"], result["whole_runs"]["instant"], strict=True)]
        pairs = len(results[0]["whole_runs"]["instant"])
        whole_rows = [
            [f"flow wall at 0 s latency (median of {pairs} per repetition)", spread(instant, unit=" s")],
            [f"flow wall at {latency} s latency (median of {pairs} per repetition)", spread(slow, unit=" s")],
            ["**whole-run efficiency `ideal / (wall(latency) − wall(0 s))`**, medians", spread([ideal / (s - i) for s, i in zip(slow, instant, strict=True)])],
            ["the same, per adjacent pair (all pairs)", spread(paired)],
            [f"wall({latency} s) − ideal: what the run adds to the model's own {ideal:.2f} s", spread([s - ideal for s in slow], unit=" s")],
        ]
        whole_lines = [
            markdown_table(["whole runs in one warm process, fresh state each, alternating 0 s / latency", "value"], whole_rows),
            "",
        ]
    flow_eff = median(efficiency(flow))
    stage_eff = median(efficiency(stage))
    outcome_line = ", ".join(f"{key}: {value}" for key, value in sorted(_merge_outcomes(first).items()))
    lines = [
        f"N = {rollouts} rollouts ({first['data_bytes'] / 1e6:.1f} MB), latency {latency} s, concurrency {CONCURRENCY}, "
        f"{len(results)} repetitions (fresh process each); flow runs per repetition: {len(first['runs'])} "
        f"(claims {', '.join(str(run['claimed']) for run in first['runs'])}); requests replayed by the baseline: "
        f"{first['replayed_requests']}; outcomes: {outcome_line}; the test model server ran "
        + ("in its own process." if first.get("server_mode", "thread") == "process" else "in a thread of the flow's process."),
        f"Ideal = ceil({rollouts}/{CONCURRENCY}) × {latency} s = **{ideal:.2f} s** (per-run ideals sum to {ideal_total:.2f} s).",
        "",
        main_table,
        "",
        per_run_table,
        "",
        turnaround_table,
        "",
        stage_table,
        "",
        process_table,
        "",
        *whole_lines,
        f"Goal efficiency ≥ 0.93 in the model-server window: {median(efficiency(server_window)):.2f} "
        f"({_verdict(median(efficiency(server_window)), 0.93)}); plain pool {median(efficiency(plain)):.2f}. "
        f"Whole flow {flow_eff:.2f}, extraction stage {stage_eff:.2f}.",
    ]
    return "\n".join(lines)


def _merge_outcomes(result: dict[str, Any]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for run in result["runs"]:
        for key, value in run["outcomes"].items():
            merged[key] = merged.get(key, 0) + value
    return merged


def _verdict(value: float, goal: float = 0.9) -> str:
    return "met" if value >= goal else f"missed by {goal - value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=200, help="N rollouts (default 200)")
    parser.add_argument("--latency", type=float, default=0.5, help="test-server latency per request, seconds")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions, each in a fresh process")
    parser.add_argument("--save-report", action="store_true", help="also write the report to benchmarks/.work/reports/")
    parser.add_argument(
        "--server", choices=("process", "thread"), default="process",
        help="the test model server in its own process (default, as a real server is) or in a thread of the flow's process",
    )
    parser.add_argument(
        "--whole-run-pairs", type=int, default=2,
        help="whole flow runs at 0 s and at --latency, alternating, per repetition (0: none); N <= 128 only",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_server:
        run_model_server(args.latency, args.output)
        return
    if args.child:
        run_child(args.rollouts, args.latency, args.work, args.output, args.server, args.whole_run_pairs)
        return

    command = ".venv/bin/python -m benchmarks.phase1_efficiency"
    options = (
        f" --rollouts {args.rollouts} --latency {args.latency} --repeats {args.repeats} --server {args.server}"
        f" --whole-run-pairs {args.whole_run_pairs}"
    )
    results = []
    for repetition in range(args.repeats):
        print(f"repetition {repetition + 1}/{args.repeats} ...", file=sys.stderr, flush=True)
        results.append(run_repetition(args.rollouts, args.latency, args.server, args.whole_run_pairs))
    body = summarize(results)
    print(body)
    if args.save_report:
        header = (
            "## Phase-1 efficiency (`phase1_efficiency.py`)\n\n"
            "How close phase 1 gets to the ideal `ceil(N/8) × latency` against the test OpenAI-compatible "
            "server with a fixed latency, for the whole flow runs and for the extraction map alone, next to a "
            "plain `ThreadPoolExecutor(8)` replaying the same HTTP requests with the `openai` client. "
            "See the script's docstring for the method.\n\n"
            f"Command: `{command}{options} --save-report`\n\n"
            f"Machine: {machine_description()}\n\n"
        )
        save_report(SECTION, header + body)


if __name__ == "__main__":
    main()
