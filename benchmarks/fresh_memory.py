"""Fresh memory on real Codex (issue 35, item 5): how long after a session ends is what the user
said in it in the next session's context?

    .venv/bin/python -m benchmarks.fresh_memory [--versions 0.171.0 0.147.0] [--endings quit close kill] [--save-report]

Method, as a user with `fresh_memory = true` has it:
1. A fresh Codex home configured for a recording model server (Codex's own memory feature off), a
   git checkout with an origin remote, our settings file `$CODEX_HOME/codex-memories.toml` with
   `provider = "heuristic"` (offline: no quota) and `fresh_memory = true`, and
   `codex-memories install --trust`. No memory folder yet, no `serve`, no `CODEX_MEMORIES_*`
   variable anywhere: Codex starts the hooks with its own environment.
2. Session one states a rule for the project in the interactive TUI, and ends: with `/quit`,
   with the terminal closed under it (no `/quit`), or with Codex killed (SIGKILL). Its end is the
   clock's zero: the moment Codex exited, or the terminal was closed, or Codex was killed.
3. The clock stops at the `Fresh` line in `hooks.log` that says the pass is done (or failed).
   Which hook started the pass (`SessionEnd` at once, or the `Stop` hook's idle waiter after two
   minutes with no newer turn) is read from the same log.
4. Session two (`codex exec`, a question in the same checkout): the rule counts as delivered when
   its key and a piece of the user's own words are in one developer message our hooks added to
   the model request.

The goal is a time, not a ratio: within 5 minutes of the session's end (issue 35's figure). The
load average is printed beside each row, because the pass starts its own temporary Prefect server
when no `serve` runs, and that start is most of its time on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.support import machine_description, markdown_table, save_report, scratch_dir
from codex_memories.read.hook_log import hook_log_path
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    codex_binary,
    developer_texts,
    git_checkout,
    run_codex_exec,
    run_codex_tui,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.openai_server import running_openai_server

CLI = Path(sys.executable).with_name("codex-memories")
SECTION = "fresh_memory"
ORIGIN = "git@github.com:acme/osprey.git"
STATEMENT = "From now on, always run make lint-strict before pushing in this repo (OSPREY-4417)."
KEY = "OSPREY-4417"
STATEMENT_KEY = "lint-strict"
QUESTION = "What do I need to run before I push?"
GOAL_SECONDS = 300.0
WAIT_SECONDS = 900.0
FRESH_DONE = " Fresh fresh_pass_done "
FRESH_FAILED = " Fresh failed_"
# How session one ends (`run_codex_tui`'s `end`): `/quit`, the terminal window closed under it
# (SIGHUP), or Codex killed (SIGKILL: no hook can run, the Stop hook's idle waiter is what is
# left). A `codex exec` session is not measured: phase 1 takes only interactive sessions (spec:
# `exec`, MCP and sub-agent sessions are left out), so what is said there is never memory.
ENDINGS = {"quit": "TUI, `/quit`", "close": "TUI, terminal closed", "kill": "TUI, Codex killed"}
STARTED_BY = {"end": "SessionEnd, at once", "idle": "Stop's idle waiter (2 min)"}


@dataclass
class Measurement:
    version: str
    ending: str
    started_by: str = "none"
    seconds_to_pass_done: float | None = None
    pass_seconds: float | None = None
    outcome: str = "no pass"
    delivered: bool = False
    as_statement: bool = False
    load: float = 0.0


def user_environment(home: CodexHome) -> dict[str, str]:
    """The shell a user runs our CLI from: none of our variables, no Prefect server of anyone's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_", "PREFECT_"))}
    env["CODEX_HOME"] = str(home.path)
    env["HOME"] = str(home.user_home)
    return env


def install(home: CodexHome) -> None:
    (home.path / "codex-memories.toml").write_text('provider = "heuristic"\nfresh_memory = true\n', encoding="utf-8")
    done = subprocess.run(
        [str(CLI), "install", "--trust", "--codex-binary", str(home.codex)],
        env=user_environment(home), capture_output=True, text=True, timeout=300, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"codex-memories install exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def log_lines(home: CodexHome) -> list[str]:
    path = hook_log_path(home.path)
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def wait_for_pass(home: CodexHome, ended: float, result: Measurement) -> None:
    deadline = ended + WAIT_SECONDS
    while time.monotonic() < deadline:
        lines = log_lines(home)
        finished = [line for line in lines if FRESH_DONE in line or FRESH_FAILED in line]
        if finished:
            result.seconds_to_pass_done = time.monotonic() - ended
            result.outcome = finished[0].split()[2]
            result.pass_seconds = float(finished[0].split()[3].removesuffix("ms")) / 1000
            # The pass's line names its mode first: `end` (SessionEnd) or `idle` (the Stop hook's waiter).
            mode = finished[0].split()[4].rstrip(",:")
            result.started_by = STARTED_BY.get(mode, mode)
            return
        time.sleep(1.0)


def measure(version: str, ending: str, root: Path) -> Measurement:
    result = Measurement(version, ending)
    with running_openai_server(with_pipeline_requests(text_reply("Noted."))) as server:
        home = CodexHome.create(root / f"codex-{version}-{ending}", server, binary=codex_binary(version))
        home.write_config(features={"memories": False})
        cwd = git_checkout(root / f"work-{version}-{ending}" / "src" / "osprey", ORIGIN)
        install(home)
        first = run_codex_tui(home, STATEMENT, cwd=cwd, server=server, timeout=180, end=ending)
        ended = time.monotonic()
        code, output = first.returncode, first.pane
        if ending == "quit" and code != 0:
            raise RuntimeError(f"session one ({version}, {ending}) exited {code}:\n{output[-3000:]}")
        wait_for_pass(home, ended, result)
        result.load = os.getloadavg()[0]
        before = len(user_turn_requests(server))
        second = run_codex_exec(home, QUESTION, cwd=cwd, server=server, timeout=180)
        if second.returncode != 0:
            raise RuntimeError(f"session two ({version}, {ending}) exited {second.returncode}:\n{second.stderr[-3000:]}")
        [request] = user_turn_requests(server)[before:]
        ours = [text for text in developer_texts(request) if KEY in text]
        result.delivered = bool(ours)
        result.as_statement = any(STATEMENT_KEY in text for text in ours)
        if result.outcome == "no pass":
            print("\n".join(log_lines(home)), file=sys.stderr)
    return result


def row(result: Measurement) -> list[str]:
    seconds = result.seconds_to_pass_done
    within = "yes" if seconds is not None and seconds <= GOAL_SECONDS and result.delivered else "no"
    return [
        result.version,
        ENDINGS[result.ending],
        result.started_by,
        result.outcome,
        f"{seconds:.0f} s" if seconds is not None else f"none in {WAIT_SECONDS:.0f} s",
        f"{result.pass_seconds:.0f} s" if result.pass_seconds is not None else "",
        "yes" if result.delivered else "no",
        "yes" if result.as_statement else "no",
        within,
        f"{result.load:.1f}",
    ]


HEADERS = [
    "Codex", "session one", "pass started by", "pass outcome", "session end → pass done", "the pass itself",
    "in session two", "as the user's statement", "within 5 min", "load at the end",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--versions", nargs="+", default=list(CODEX_VERSIONS))
    parser.add_argument("--endings", nargs="+", choices=list(ENDINGS), default=list(ENDINGS))
    parser.add_argument("--save-report", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (printed)")
    args = parser.parse_args()

    root = scratch_dir("fresh-memory-")
    rows = []
    for version in args.versions:
        for ending in args.endings:
            rows.append(row(measure(version, ending, root)))
            print(markdown_table(HEADERS, rows[-1:]), flush=True)
    table = markdown_table(HEADERS, rows)
    print(table)
    if args.keep:
        print(f"kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    if args.save_report:
        command = (
            f"`.venv/bin/python -m benchmarks.fresh_memory --versions {' '.join(args.versions)} "
            f"--endings {' '.join(args.endings)} --save-report`"
        )
        save_report(SECTION, "\n\n".join(["## Fresh memory on real Codex (`fresh_memory.py`)", f"Command: {command}. {machine_description()}.", table]))


if __name__ == "__main__":
    main()
