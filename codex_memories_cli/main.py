"""`codex-memories`: the command line.

Every subcommand takes the common options after its name (`--codex-home`, `--db`,
`--memory-root`, `--provider`, ...); environment variables and our settings file fill in the
rest (see `codex_memories.settings`). A user error is one line on stderr and a non-zero exit
(2 for a bad setting), never a traceback. Heavy imports (Prefect, great-expectations) happen
inside the commands that need them, so `--help` and `status` start fast.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from codex_memories.disk_full import disk_full_cause, disk_full_line
from codex_memories.paths import local_memory_folder
from codex_memories.settings import RuntimeConfig, SettingsError, SettingsOverrides
from codex_memories_cli.errors import EXIT_BAD_SETTING, EXIT_USER_ERROR, error_sentence, fail, say_error
from codex_memories_cli.interrupts import interruptible_run
from codex_memories_cli.options import (
    Local,
    Verbose,
    prepare_prefect,
    require_codex_home,
    with_common_options,
)
from codex_memories_cli.runs import console, run_flow

app = typer.Typer(
    name="codex-memories",
    help="Long-term memory for Codex: rollouts in, the Codex memory folder out, via Prefect flows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# ---- commands ------------------------------------------------------------------------------
# (run through `runs`: handed to `serve` when one listens, else here)


RebuildState = Annotated[
    bool,
    typer.Option(
        "--rebuild-state",
        help="Use this state DB although the memory folder was built with another one (a new machine, a lost DB): "
        "its state is rebuilt from the sessions; what the folder's forget ledger names stays forgotten.",
    ),
]


def _print_where(config: RuntimeConfig) -> None:
    from codex_memories.state.db import shown_db_url

    console.print(f"codex home:  {config.settings.codex_home_path}", markup=False, highlight=False)
    console.print(f"state DB:    {shown_db_url(config.settings.resolved_db_url)}", markup=False, highlight=False)
    console.print(f"memory root: {config.settings.resolved_memory_root}", markup=False, highlight=False)
    console.print(f"provider:    {config.provider_name}", markup=False, highlight=False)


@app.command()
@with_common_options
def phase1(overrides: SettingsOverrides, local: Local = False, verbose: Verbose = False, rebuild_state: RebuildState = False) -> None:
    """Run phase 1 now: discover rollouts, claim, extract stage-1 memories."""
    config = overrides.load()
    require_codex_home(config)
    _check_memory_folder(config, rebuild=rebuild_state)
    prepare_prefect(verbose)
    from codex_memories.reports.phase1 import render_phase1_text

    _print_where(config)
    with interruptible_run():
        report = run_flow("phase1", overrides, config, local=local, verbose=verbose)
    console.print(render_phase1_text(report), markup=False, highlight=False, soft_wrap=True)


@app.command()
@with_common_options
def phase2(
    overrides: SettingsOverrides,
    force: Annotated[bool, typer.Option("--force", help="Skip the 6-hour cooldown (never the lease).")] = False,
    local: Local = False,
    verbose: Verbose = False,
) -> None:
    """Run phase 2 now: consolidate the selected stage-1 outputs into the memory folder."""
    config = overrides.load()
    prepare_prefect(verbose)
    from codex_memories.reports.phase2 import render_phase2_text

    _print_where(config)
    with interruptible_run():
        report = run_flow("phase2", overrides, config, force=force, local=local, verbose=verbose)
    console.print(render_phase2_text(report), markup=False, highlight=False, soft_wrap=True)
    if report.outcome is not None and report.outcome.is_failure:
        raise typer.Exit(EXIT_USER_ERROR)


@app.command()
@with_common_options
def run(
    overrides: SettingsOverrides,
    force: Annotated[bool, typer.Option("--force", help="Phase 2 skips the cooldown (never the lease).")] = False,
    local: Local = False,
    verbose: Verbose = False,
    rebuild_state: RebuildState = False,
    catch_up: Annotated[
        bool,
        typer.Option(
            "--catch-up",
            help="A long history in one command (a first use): phase 1 pass after pass, each claiming up to "
            "max_rollouts_per_startup sessions, a progress line after each, until none is waiting; then phase 2 "
            "without its cooldown. With --ignore-age-windows, sessions of any age.",
        ),
    ] = False,
) -> None:
    """The main job: phase 1, then phase 2, then a short report of both."""
    config = overrides.load()
    require_codex_home(config)
    _check_memory_folder(config, rebuild=rebuild_state)
    prepare_prefect(verbose)
    from codex_memories.reports.phase1 import render_phase1_text
    from codex_memories.reports.phase2 import render_phase2_text

    _print_where(config)
    with interruptible_run():
        extracted_so_far = 0
        for pass_number in itertools.count(1):
            phase1_report = run_flow("phase1", overrides, config, local=local, verbose=verbose)
            console.print(render_phase1_text(phase1_report), markup=False, highlight=False, soft_wrap=True)
            if not catch_up:
                break
            done = sum(1 for line in phase1_report.extractions if not line.outcome.is_failure)
            extracted_so_far += done
            waiting = _sessions_waiting(config)
            console.print(
                f"catch-up: pass {pass_number}: {done} session(s) extracted, {extracted_so_far} in all, "
                + (f"{waiting} waiting" if waiting is not None else "the state DB does not say how many are waiting"),
                markup=False, highlight=False, soft_wrap=True,
            )
            stop = _catch_up_stops(phase1_report, done, waiting)
            if stop is not None:
                console.print(f"catch-up: done after {pass_number} pass(es): {stop}", markup=False, highlight=False, soft_wrap=True)
                break
        # A catch-up ends in one consolidation of all it extracted, now: the cooldown is for a
        # schedule that runs phase 2 every few hours, not for the person waiting on this command.
        report = run_flow("phase2", overrides, config, force=force or catch_up, local=local, verbose=verbose)
    console.print(render_phase2_text(report), markup=False, highlight=False, soft_wrap=True)
    _print_memory_folder(config)
    if report.outcome is not None and report.outcome.is_failure:
        raise typer.Exit(EXIT_USER_ERROR)


def _sessions_waiting(config: RuntimeConfig) -> int | None:
    """How many sessions a next phase 1 would take (`status`'s "waiting" and "failed", under the
    windows this run applies); None without a state DB."""
    from codex_memories.runtime import read_only_store
    from codex_memories.state.records import CoverageReason
    from codex_memories_cli.views import session_coverage

    with read_only_store(config.settings.resolved_db_url) as store:
        if store is None:
            return None
        coverage = session_coverage(config, store)
    return sum(coverage.by_reason.get(reason.value, 0) for reason in (CoverageReason.waiting, CoverageReason.failed))


def _catch_up_stops(report: Any, done: int, waiting: int | None) -> str | None:
    """Why a catch-up takes no further phase-1 pass, or None to go on. A pass that extracted
    nothing ends it too: the sessions left are the ones that keep failing (named in the report
    above), and another pass would only fail them again."""
    if report.gate is not None:
        return f"phase 1 stopped at its gate ({report.gate.value})" + (f": {report.rate_limit}" if report.rate_limit else "")
    if waiting == 0:
        return "no session is waiting"
    if done == 0:
        return f"this pass extracted nothing; {waiting} session(s) left for a later run (see the failures above)"
    return None


def _check_memory_folder(config: RuntimeConfig, *, rebuild: bool) -> None:
    """Before a run: the memory folder takes writes and was built with this state DB; else one
    line and exit 2, nothing extracted (`memory_folder.identity`)."""
    from codex_memories.memory_folder.identity import (
        BindingOutcome,
        StateDbMismatch,
        check_memory_folder,
        check_missing_state_db,
    )
    from codex_memories.runtime import memory_root, open_store
    from codex_memories.state.db import StateDbUnavailable, shown_db_url, sqlite_database_file
    from codex_memories.storage import MemoryRootNotWritable

    url = config.settings.resolved_db_url
    root = memory_root(config)
    try:
        database = sqlite_database_file(url)
        if database is not None and not database.exists():
            check_missing_state_db(root, rebuild=rebuild, db_shown=shown_db_url(url))
        outcome = check_memory_folder(open_store(url), root, rebuild=rebuild, db_shown=shown_db_url(url))
    except (StateDbMismatch, MemoryRootNotWritable, StateDbUnavailable) as error:
        say_error(str(error))
        raise typer.Exit(EXIT_BAD_SETTING) from None
    if outcome is BindingOutcome.rebound:
        console.print(
            f"state DB:    {shown_db_url(url)} now writes this memory folder (--rebuild-state); its forget ledger still applies",
            markup=False, highlight=False, soft_wrap=True,
        )


@app.command()
@with_common_options
def serve(
    overrides: SettingsOverrides,
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port of the Prefect server started when none is configured.")] = 4200,
    verbose: Verbose = False,
) -> None:
    """The schedules of prefect.yaml on this machine: phase 1 hourly, phase 2 every 6 h, backfill and forget on demand.

    Uses the Prefect server of PREFECT_API_URL; without one, starts `prefect server start` on
    127.0.0.1 (the UI) for as long as this command runs."""
    config = overrides.load()
    require_codex_home(config)
    prepare_prefect(verbose, quiet_level="WARNING")  # its runs' warnings and errors, as before
    from codex_memories_cli.prefect_server import local_prefect_server
    from codex_memories_flows.serve import PrefectYamlError, read_served_deployments, serve_deployments

    # Before any server starts: a prefect.yaml serve cannot follow is a setting to fix.
    try:
        served = read_served_deployments()
    except PrefectYamlError as error:
        fail(str(error), EXIT_BAD_SETTING)

    # Until Prefect's runner installs its own SIGTERM handler (a graceful stop, once the
    # deployments are served), a SIGTERM (`kill`, a service manager) would end this process
    # without unwinding it, and the Prefect server it started would outlive it.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _print_where(config)
    with local_prefect_server(port, config) as api_url:
        console.print(f"Prefect API: {api_url}  (UI: {api_url.removesuffix('/api')})", markup=False, highlight=False)
        with _hand_off_listener(api_url):
            serve_deployments(served, overrides)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _hand_off_listener(api_url: str) -> Iterator[None]:
    """While serve runs: the socket that takes the CLI's phase-1 and phase-2 runs (`handoff`),
    and the imports those runs need, warmed in the background. Without the socket (its reason
    printed) serve runs its schedules all the same."""
    from functools import partial

    from codex_memories_cli.handoff import HandoffServer, HandoffUnavailable, default_socket_path
    from codex_memories_flows.serve import run_handed_off, warm_up_hand_off_runs

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    # The path the CLI's side looks at, by the same function: the two cannot disagree.
    listener = HandoffServer(
        default_socket_path(), partial(run_handed_off, api_url=api_url), prefect_api_url=api_url, say=say
    )
    try:
        listener.start()
    except HandoffUnavailable as error:
        say(f"Hand-off socket: off ({error}); `phase1`, `phase2` and `run` run in their own process")
        yield
        return
    say(f"Hand-off socket: {listener.path}  (`phase1`, `phase2` and `run` run here; `--local` to run them apart)")
    threading.Thread(target=warm_up_hand_off_runs, name="warm-up", daemon=True).start()
    try:
        yield
    finally:
        listener.close()


def _print_memory_folder(config: RuntimeConfig) -> None:
    root = config.settings.resolved_memory_root
    console.print(f"memory folder: {root}", markup=False, highlight=False)
    local_root = local_memory_folder(root)
    if local_root is None:
        return
    for name in ("memory_summary.md", "MEMORY.md", "raw_memories.md"):
        path = local_root / name
        if path.is_file():
            console.print(f"  {name}: {path.stat().st_size} bytes", markup=False, highlight=False)
    summaries = local_root / "rollout_summaries"
    if summaries.is_dir():
        console.print(f"  rollout_summaries/: {len(list(summaries.glob('*.md')))} files", markup=False, highlight=False)


# `status` and `show`: what the runs did and what sessions get, in words.
from codex_memories_cli.views import views_app  # noqa: E402 - registers after the core commands

app.add_typer(views_app)

# Commands of the read path and of forgetting live in their own module.
from codex_memories_cli.memory import memory_app  # noqa: E402 - registers after the core commands

app.add_typer(memory_app)

from codex_memories_cli.backfill import backfill_app  # noqa: E402 - registers after the core commands

app.add_typer(backfill_app)

from codex_memories_cli.codex import codex_app  # noqa: E402 - registers after the core commands

app.add_typer(codex_app)

from codex_memories_cli.export import export_app  # noqa: E402 - registers after the core commands

app.add_typer(export_app)
from codex_memories_cli.review import review_app  # noqa: E402 - registers after the core commands

app.add_typer(review_app)



def main() -> None:
    try:
        # Not standalone: click's own handling prints a usage error as a framed box of several
        # lines; a bad option here is one line and exit 2, like a bad setting. The program's
        # name is fixed so that `python -m codex_memories_cli.main` names the same help.
        code = app(prog_name="codex-memories", standalone_mode=False)
    except _ClickException as error:
        if type(error).__name__ != "NoArgsIsHelpError":  # that one printed the help when made
            say_error(command_line_error(error))
        sys.exit(error.exit_code)
    except typer.Abort:
        say_error("aborted")
        sys.exit(EXIT_USER_ERROR)
    except SettingsError as error:
        say_error(str(error))
        sys.exit(EXIT_BAD_SETTING)
    except Exception as error:  # noqa: BLE001 - one line for people; the traceback on request
        if os.environ.get("CODEX_MEMORIES_DEBUG"):
            raise
        cause = disk_full_cause(error)
        if cause is not None:
            say_error(disk_full_line(cause, "", "the command stopped, and what it wrote before is whole (every write is atomic)"))
        else:
            say_error(error_sentence(error))
        sys.exit(EXIT_BAD_SETTING if _is_unusable_setting(error) else EXIT_USER_ERROR)
    finally:
        from codex_memories.runtime import close_stores

        _stop_temporary_prefect_server()
        close_stores()
    sys.exit(code if type(code) is int else 0)  # a command's `typer.Exit(code)`; 0 for what it returns


def _is_unusable_setting(error: BaseException) -> bool:
    """A state DB that cannot be opened (a driver missing) or a memory folder that refuses writes
    or belongs to another state DB: a setting to fix, exit 2, as for a bad value."""
    from codex_memories.forget.ledger import LedgerUnreadable
    from codex_memories.memory_folder.identity import StateDbMismatch
    from codex_memories.state.db import StateDbUnavailable
    from codex_memories.storage import MemoryRootNotWritable

    kinds = (StateDbUnavailable, MemoryRootNotWritable, StateDbMismatch, LedgerUnreadable)
    return any(isinstance(cause, kinds) for cause in (error, error.__cause__, error.__context__))


def _stop_temporary_prefect_server() -> None:
    """The command's temporary Prefect server, if it started one (`prefect_server`), stops with it."""
    server_module = sys.modules.get("codex_memories_cli.prefect_server")
    if server_module is not None:
        server_module.TEMPORARY_SERVER.stop()


# The base of click's parse errors, from the click typer runs on (typer 0.29 vendors its own).
_ClickException: type[Exception] = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "ClickException")


def command_line_error(error: Any) -> str:
    """A parse error of the command line (unknown option, bad value, missing option, extra
    argument) as one line, naming the help to read."""
    message = error.format_message()
    context = getattr(error, "ctx", None)
    if context is not None and context.command.get_help_option(context) is not None:
        message += f" (see '{context.command_path} {context.help_option_names[0]}')"
    return message


if __name__ == "__main__":
    main()
