"""Two Prefect workers against one on the same backfill, the model as the bottleneck (issue 37, item 5).

One stack for the whole run, set up as infra/README.md ("Several workers") tells a team to, with
the pieces of tests/deploy/team.py: `prefect server start` on PostgreSQL, the `codex-memories`
process work pool, `prefect deploy --all`, the results block the workers share
(`infra/shared_results.py`, a folder here: the workers run on this machine). The model is the
OpenAI-compatible test server answering every extraction after `--delay` seconds (phase 2's
consolidation agent at once). `--days * --per-day` archived sessions, `--per-day` on each day.

One measurement: a fresh PostgreSQL state DB and memory root, `W` process workers (each its own
Prefect home, `--limit` flow runs at once), and one backfill run per day launched at once, as a
team would; timed from the launch to the end of the last run. Each run must end Completed with
every session extracted, or the measurement is reported as broken. W = 1 and W = 2 alternate
(the order flips each repeat); the speed-up is t(1 worker) / t(2 workers) of each pair, reported
as median and range. The model-bound ideal is 2.0: with `--limit` L a worker runs L backfills at
once, each with `concurrency` (8) extractions in flight, so two workers have twice the requests
in flight; each run's fixed cost (a flow-run process starting Prefect and our code on a shared
2-core machine, discovery, phase 2) is paid in both, and so are the CPU of twice the processes.

    .venv/bin/python -m benchmarks.team_workers [--days 8] [--per-day 40] [--delay 12] [--limit 2] [--repeats 1] [--save-report]
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import psycopg

from benchmarks.support import (
    machine_description,
    markdown_table,
    prepare_prefect_environment,
    save_report,
    scratch_dir,
    spread,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--days", type=int, default=8, help="one backfill run per day")
    parser.add_argument("--per-day", type=int, default=40, help="archived sessions per day")
    parser.add_argument("--delay", type=float, default=12.0, help="seconds the model takes per extraction")
    parser.add_argument("--limit", type=int, default=2, help="flow runs a worker runs at once (`--limit`)")
    parser.add_argument("--repeats", type=int, default=1, help="pairs of measurements (1 worker, 2 workers)")
    parser.add_argument("--save-report", action="store_true")
    options = parser.parse_args()

    scratch = scratch_dir("team-workers-")
    prepare_prefect_environment(scratch / "benchmark-prefect-home")

    from tests.deploy.prefect_stack import REPO_ROOT, PrefectStack
    from tests.deploy.team import slow_extractions, write_archived_sessions
    from tests.deploy.test_deployments import _consolidation_agent
    from tests.support.openai_server import running_openai_server

    codex_home = scratch / "codex-home"
    codex_home.mkdir()
    by_day = write_archived_sessions(codex_home, days=options.days, per_day=options.per_day)
    released = threading.Event()
    released.set()
    rows, ratios = [], []
    with running_openai_server(handler=slow_extractions(_consolidation_agent(released), options.delay)) as model:
        stack = PrefectStack(scratch / "stack")
        stack.root.mkdir()
        try:
            stack.start_server()
            stack.create_work_pool()
            stack.deploy("--all")
            saved = stack.prefect_python(str(REPO_ROOT / "infra" / "shared_results.py"), str(scratch / "prefect-results"))
            results_block = saved.stdout.strip().split("=", 1)[1]
            for repeat in range(options.repeats):
                times: dict[int, float] = {}
                for workers in (1, 2) if repeat % 2 == 0 else (2, 1):
                    seconds, verdict = measure(
                        stack, model, codex_home, by_day, scratch / f"run-{repeat}-{workers}",
                        workers=workers, limit=options.limit, results_block=results_block,
                    )
                    times[workers] = seconds
                    rows.append([str(repeat + 1), str(workers), f"{seconds:.1f}", verdict])
                    print(f"repeat {repeat + 1}, {workers} worker(s): {seconds:.1f} s; {verdict}", flush=True)
                ratios.append(times[1] / times[2])
        finally:
            stack.stop()

    sessions = options.days * options.per_day
    ideal_one = -(-sessions // (options.limit * 8)) * options.delay
    report = "\n\n".join(
        [
            "# Two workers against one on the same backfill",
            f"{sessions} archived sessions, {options.days} one-day backfill runs launched at once, model "
            f"delay {options.delay} s per extraction, `--limit {options.limit}` per worker, concurrency 8 per run. "
            f"Model-bound floor for one worker: {ideal_one:.0f} s (sessions / (limit x 8) x delay).",
            markdown_table(["repeat", "workers", "seconds (launch to last run's end)", "runs"], rows),
            f"**Speed-up of two workers over one: {spread(ratios)}x** (goal >= 1.6x, model-bound ideal 2.0x).",
            machine_description(),
        ]
    )
    print(report)
    if options.save_report:
        save_report("team_workers", report)


def measure(
    stack: object, model: object, codex_home: Path, by_day: dict[str, list[str]], root: Path,
    *, workers: int, limit: int, results_block: str,
) -> tuple[float, str]:
    """One backfill of every day with `workers` workers: seconds, and what the runs ended as."""
    from tests.deploy.prefect_stack import wait_for
    from tests.deploy.team import Team, final_or_none, fresh_database, launch_day_backfills

    root.mkdir(parents=True)
    with fresh_database("team_bench") as db_url:
        team = Team(
            stack,  # type: ignore[arg-type]
            {
                "CODEX_HOME": str(codex_home),
                "CODEX_MEMORIES_DB_URL": db_url,
                "CODEX_MEMORIES_MEMORY_ROOT": str(root / "memories"),
                "CODEX_MEMORIES_PROVIDER": "openai",
                "CODEX_MEMORIES_BASE_URL": model.base_url,  # type: ignore[attr-defined]
                "OPENAI_API_KEY": "test-key",
                "HOME": str(root),
                "PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK": results_block,
            },
            limit=limit,
        )
        try:
            for number in range(workers):
                team.start_worker(f"bench-{root.name}-{number + 1}")
            time.sleep(5)  # the workers poll before the runs exist, as a standing team's do
            with stack.client() as client:  # type: ignore[attr-defined]
                started = time.monotonic()
                runs = launch_day_backfills(client, sorted(by_day))
                final = [
                    wait_for(lambda run_id=run_id: final_or_none(client, run_id), timeout=3600, interval=0.5, what="a backfill run")
                    for run_id in runs
                ]
                seconds = time.monotonic() - started
        finally:
            team.stop()
        with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://")) as connection:
            outputs = connection.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0]
    states = sorted({run.state.type.value for run in final})
    wanted = sum(len(ids) for ids in by_day.values())
    verdict = f"{'/'.join(states)}, {outputs}/{wanted} extracted"
    if states != ["COMPLETED"] or outputs != wanted:
        verdict = f"BROKEN: {verdict}"
    return seconds, verdict


if __name__ == "__main__":
    main()
