"""Fixed cost of `codex-memories phase1`: 64 small sessions at zero model latency, with and without a
Prefect server that is already up, against baselines measured in the same run.

Setup (untimed): 64 small interactive sessions (`phase1_efficiency.write_sessions`) in a temp
CODEX_HOME, the test OpenAI-compatible server on 127.0.0.1 answering at once, a throw-away
PREFECT_HOME and no PREFECT_API_URL.

Measured, each a fresh process timed from spawn to exit, `--repeats` times, each phase-1 run on a
fresh state DB and memory root (so each extracts all 64 sessions):
(a) baseline: `python -c pass` (the interpreter's start);
(b) `python -X importtime -c "import codex_memories_cli.main"` and the same for the phase-1 flow
    module: the import costs, with the heaviest imports named (once);
(c) `codex-memories phase1` with no server anywhere: Prefect starts its temporary server;
(d) `codex-memories serve` started (untimed; it records its server in its state folder and
    listens on its hand-off socket), then `codex-memories phase1`: the CLI hands the run to serve, which runs
    it in-process with everything imported (`codex_memories_cli.handoff`). The first run right
    after serve's start (its background warm-up may still be going) is reported apart; the
    repeats after it are the warm figure. Each run is checked to have run in serve (`--verbose`);
(d') `codex-memories phase1 --local` with serve up: the flow in the CLI's own process, reporting
    to serve's server (given as PREFECT_API_URL: serve serves another Codex home), as before the
    hand-off;
(e) baseline: a bare Prefect flow run (a no-op `@flow`) in a fresh process against the same server;
(f) Prefect's own hand-off: a fresh process that calls `run_deployment` on serve's deployment
    `memories-phase1` with the same settings as (d) (as the deployment's run parameters, over
    serve's default `overrides`) and waits for its end (polling every 0.1 s); serve's runner
    picks the run up and runs it in a subprocess of its own. A lower bound for a CLI that would
    hand off this way: it pays for no CLI import and no settings resolution. Serve's runner
    polls the server every second here (PREFECT_RUNNER_POLL_FREQUENCY=1 in serve's environment;
    Prefect's default, 10 s, adds 5 s on average), its best case.
(d), (d'), (e) and (f) are interleaved run by run, one of each per repeat, after (d)'s first run.
Goal (issue 38): (d) <= 1.3 x (e), the bare flow run of the same run; (c), (d') and (f) are
stated, (f) against (d) to choose the hand-off.

    .venv/bin/python -m benchmarks.fixed_cost [--sessions 64] [--repeats 3] [--save-report]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchmarks.phase1_efficiency import write_sessions
from benchmarks.support import (
    REPO_ROOT,
    machine_description,
    markdown_table,
    median,
    save_report,
    scratch_dir,
    spread,
)
from codex_memories_cli.handoff import SOCKET_FILE

SECTION = "fixed_cost"
PYTHON = sys.executable
CLI = str(Path(sys.executable).with_name("codex-memories"))
BARE_FLOW = "from prefect import flow\n\n@flow\ndef noop():\n    return None\n\nnoop()\n"
# Prefect's `run_deployment`, waiting for the run's end; argv: the deployment, the overrides as JSON.
RUN_DEPLOYMENT = (
    "import json, sys\n"
    "from prefect.deployments import run_deployment\n"
    "run = run_deployment(sys.argv[1], parameters={'overrides': json.loads(sys.argv[2])}, poll_interval=0.1)\n"
    "sys.exit(0 if run.state is not None and run.state.is_completed() else f'flow run {run.id}: {run.state}')\n"
)
SERVED_PHASE1 = "memories-phase1/memories-phase1"  # flow name / deployment name
SERVE_START_TIMEOUT_SECONDS = 300.0
GOAL_RATIO = 1.3


def _environment(prefect_home: Path, api_url: str | None = None) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    environment.update(
        PREFECT_HOME=str(prefect_home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        # The temporary server's default start-up budget runs out on a loaded 2-core machine.
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="300",
        OPENAI_API_KEY="sk-benchmark",
    )
    if api_url is not None:
        environment["PREFECT_API_URL"] = api_url
    return environment


def _timed_process(command: list[str], environment: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    completed = subprocess.run(command, env=environment, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited {completed.returncode}: {completed.stderr[-2000:]}")
    return elapsed, completed


def _phase1_command(work: Path, codex_home: Path, base_url: str, run: str, sessions: int, *extra: str) -> list[str]:
    return [
        CLI, "phase1",
        "--codex-home", str(codex_home),
        "--db", f"sqlite:///{work / f'state-{run}.sqlite'}",
        "--memory-root", str(work / f"memories-{run}"),
        "--provider", "openai",
        "--base-url", base_url,
        "--ignore-age-windows",
        "--max-rollouts", str(min(sessions, 128)),
        "--concurrency", "8",
        *extra,
    ]


def _run_deployment_command(work: Path, codex_home: Path, base_url: str, run: str, sessions: int) -> list[str]:
    """(f): the settings `_phase1_command` gives as options, as the run's `overrides`."""
    overrides = {
        "codex_home": str(codex_home),
        "db_url": f"sqlite:///{work / f'state-{run}.sqlite'}",
        "memory_root": str(work / f"memories-{run}"),
        "provider": "openai",
        "base_url": base_url,
        "ignore_age_windows": True,
        "max_rollouts_per_startup": min(sessions, 128),
        "concurrency": 8,
    }
    return [PYTHON, "-c", RUN_DEPLOYMENT, SERVED_PHASE1, json.dumps(overrides)]


def _extracted(work: Path, run: str) -> int:
    with sqlite3.connect(work / f"state-{run}.sqlite") as connection:
        return connection.execute("SELECT count(*) FROM stage1_outputs").fetchone()[0]


def _check_extracted(work: Path, run: str, sessions: int) -> None:
    if _extracted(work, run) != sessions:
        raise RuntimeError(f"{run}: extracted {_extracted(work, run)} of {sessions}")


def _hand_off(
    work: Path, codex_home: Path, base_url: str, run: str, sessions: int, environment: dict[str, str], into: list[float]
) -> None:
    """(d): one `codex-memories phase1` that must have run in serve."""
    command = _phase1_command(work, codex_home, base_url, run, sessions, "--verbose")
    elapsed, completed = _timed_process(command, environment)
    if "ran in codex-memories serve" not in completed.stderr:
        raise RuntimeError(f"{run} was not handed to serve: {completed.stderr[-2000:]}")
    into.append(elapsed)
    _check_extracted(work, run, sessions)
    print(f"handed to serve ({run}): {elapsed:.2f} s", file=sys.stderr, flush=True)


def _import_costs(environment: dict[str, str], module: str, top: int = 6) -> tuple[float, list[tuple[str, float]]]:
    """Total import time of `module` and its heaviest direct-or-deeper imports, in seconds."""
    completed = subprocess.run(
        [PYTHON, "-X", "importtime", "-c", f"import {module}"], env=environment, cwd=REPO_ROOT,
        capture_output=True, text=True, check=True,
    )
    entries = []
    for line in completed.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            entries.append((match.group(3), int(match.group(1)) / 1e6, len(match.group(2))))
    total = next(seconds for name, seconds, _depth in entries if name == module)
    # Top-level packages only (depth 1 below the module), heaviest first.
    children = sorted(((name, seconds) for name, seconds, depth in entries if depth == 3), key=lambda item: -item[1])
    return total, children[:top]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_serve(work: Path, environment: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """`codex-memories serve` on a free port, with its own empty Codex home (so a scheduled run it
    may start touches nothing measured); returns once its server is recorded and healthy."""
    port = _free_port()
    idle_home = work / "serve_codex_home"
    (idle_home / "sessions").mkdir(parents=True)  # a Codex home, or serve refuses it (exit 2)
    log = (work / "serve.log").open("wb")
    serve = subprocess.Popen(
        [CLI, "serve", "--port", str(port), "--codex-home", str(idle_home), "--db", f"sqlite:///{work / 'serve.sqlite'}",
         "--memory-root", str(work / "serve-memories"), "--provider", "heuristic"],
        # (f)'s best case: the runner looks for the run `run_deployment` made every second.
        env={**environment, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    api_url = f"http://127.0.0.1:{port}/api"
    record = idle_home / "codex-memories" / "serve.json"  # serve's record, in its settings' state folder
    hand_off_socket = Path(environment["PREFECT_HOME"]) / SOCKET_FILE
    deadline = time.monotonic() + SERVE_START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            raise RuntimeError(f"`codex-memories serve` exited with {serve.returncode}; see {work / 'serve.log'}")
        if record.is_file() and hand_off_socket.is_socket() and _healthy(api_url):
            return serve, api_url
        time.sleep(1)
    _stop(serve)
    raise RuntimeError(f"`codex-memories serve` was not up within {SERVE_START_TIMEOUT_SECONDS:.0f} s")


def _healthy(api_url: str) -> bool:
    try:
        return httpx.get(f"{api_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False  # recorded, not answering yet


def _stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--save-report", action="store_true")
    args = parser.parse_args()

    from tests.support.openai_server import default_handler, running_openai_server

    work = scratch_dir("fixed-cost-")
    times: dict[str, list[float]] = {
        "pass": [], "no server": [], "first hand-off": [], "hand-off": [], "local": [], "bare flow": [],
        "run_deployment": [],
    }
    try:
        codex_home = work / "codex_home"
        write_sessions(codex_home, args.sessions)
        environment = _environment(work / "prefect")
        with running_openai_server(default_handler, latency_seconds=0.0) as model:
            for _ in range(args.repeats):
                times["pass"].append(_timed_process([PYTHON, "-c", "pass"], environment)[0])
            cli_import, cli_heaviest = _import_costs(environment, "codex_memories_cli.main")
            flow_import, flow_heaviest = _import_costs(environment, "codex_memories_flows.phase1")
            for repeat in range(args.repeats):
                run = f"alone-{repeat}"
                elapsed, _ = _timed_process(_phase1_command(work, codex_home, model.base_url, run, args.sessions), environment)
                times["no server"].append(elapsed)
                _check_extracted(work, run, args.sessions)
                print(f"no server, repeat {repeat + 1}: {elapsed:.2f} s", file=sys.stderr, flush=True)
            serve, api_url = _start_serve(work, environment)
            try:
                load_at_serve_start = os.getloadavg()[0]
                _hand_off(work, codex_home, model.base_url, "handed-first", args.sessions, environment, times["first hand-off"])
                served_environment = _environment(work / "prefect", api_url)
                for repeat in range(args.repeats):
                    _hand_off(work, codex_home, model.base_url, f"handed-{repeat}", args.sessions, environment, times["hand-off"])
                    run = f"local-{repeat}"
                    command = _phase1_command(work, codex_home, model.base_url, run, args.sessions, "--local")
                    # Serve's server is another data's (its own idle Codex home): the command would
                    # start a temporary server; configured, it reports to serve's.
                    elapsed, _ = _timed_process(command, served_environment)
                    times["local"].append(elapsed)
                    _check_extracted(work, run, args.sessions)
                    print(f"--local with serve up, repeat {repeat + 1}: {elapsed:.2f} s", file=sys.stderr, flush=True)
                    times["bare flow"].append(_timed_process([PYTHON, "-c", BARE_FLOW], served_environment)[0])
                    run = f"deployment-{repeat}"
                    command = _run_deployment_command(work, codex_home, model.base_url, run, args.sessions)
                    elapsed, _ = _timed_process(command, served_environment)
                    times["run_deployment"].append(elapsed)
                    _check_extracted(work, run, args.sessions)
                    print(f"run_deployment on serve's deployment, repeat {repeat + 1}: {elapsed:.2f} s", file=sys.stderr, flush=True)
                load_at_end = os.getloadavg()
            finally:
                _stop(serve)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    served = median(times["hand-off"])
    local = median(times["local"])
    bare = median(times["bare flow"])
    deployment = median(times["run_deployment"])
    rows = [
        ["(a) baseline: `python -c pass`", spread(times["pass"], unit=" s"), "", ""],
        ["(b) import `codex_memories_cli.main` (once, `-X importtime`)", f"{cli_import:.2f} s", "", ", ".join(f"{name} {seconds:.2f}" for name, seconds in cli_heaviest)],
        ["(b) import `codex_memories_flows.phase1` (once, `-X importtime`)", f"{flow_import:.2f} s", "", ", ".join(f"{name} {seconds:.2f}" for name, seconds in flow_heaviest)],
        [f"(c) `codex-memories phase1`, {args.sessions} sessions, no server (Prefect's temporary one)", spread(times["no server"], unit=" s"), f"{median(times['no server']) / bare:.2f}×", ""],
        [f"(d) `codex-memories phase1` handed to `codex-memories serve`: the first run after serve's start (once; load {load_at_serve_start:.1f} then)", spread(times["first hand-off"], unit=" s"), f"{median(times['first hand-off']) / bare:.2f}×", ""],
        ["**(d) `codex-memories phase1` handed to `codex-memories serve` over its socket (warm: the runs after the first)**", f"**{spread(times['hand-off'], unit=' s')}**", f"**{served / bare:.2f}×**", ""],
        ["(d') `codex-memories phase1 --local`, serve up: the flow in the CLI's process, reporting to serve's server", spread(times["local"], unit=" s"), f"{local / bare:.2f}×", ""],
        ["(e) baseline: a bare Prefect flow run against the same server", spread(times["bare flow"], unit=" s"), "1.00×", ""],
        ["(f) Prefect's `run_deployment` of serve's `memories-phase1`, waiting for its end (runner polling every 1 s)", spread(times["run_deployment"], unit=" s"), f"{deployment / bare:.2f}×", ""],
    ]
    body = "\n".join(
        [
            f"{args.sessions} small sessions, model latency 0 s (the test OpenAI-compatible server), {args.repeats} repetitions; "
            "every row is a fresh process timed from spawn to exit. Load average at the end (1, 5, 15 min): "
            + ", ".join(f"{value:.1f}" for value in load_at_end) + ".",
            "",
            markdown_table(["what", "seconds, median (range)", "÷ (e)", "heaviest imports below it (s)"], rows),
            "",
            f"(d') − (d): {local - served:.2f} s saved by the hand-off; (d) / (a): {served / median(times['pass']):.1f}; "
            f"(d) − (e): {served - bare:.2f} s against a bare flow run in a fresh process; "
            f"(c) − (d'): {median(times['no server']) - local:.2f} s (the temporary server's start, saved when a server is up); "
            f"(f) / (d): {deployment / served:.2f} (Prefect's `run_deployment` against the socket hand-off).",
            "",
            f"Goal (d) ≤ {GOAL_RATIO}× (e): {served / bare:.2f}× — "
            + ("**met**." if served <= GOAL_RATIO * bare else f"**missed** by {served - GOAL_RATIO * bare:.2f} s."),
        ]
    )
    print(body)
    if args.save_report:
        header = (
            "## Fixed cost of a CLI run (`fixed_cost.py`)\n\n"
            "`codex-memories phase1` at zero model latency: with no Prefect server, handed to a running `codex-memories serve`, "
            "with `--local` against serve's server, and Prefect's own `run_deployment` of serve's deployment, against "
            "`python -c pass` and a bare Prefect flow run in the same run. "
            "See the script's docstring.\n\n"
            f"Command: `.venv/bin/python -m benchmarks.fixed_cost --sessions {args.sessions} --repeats {args.repeats} --save-report`\n\n"
            f"Machine: {machine_description()}\n\n"
        )
        save_report(SECTION, header + body)


if __name__ == "__main__":
    main()
