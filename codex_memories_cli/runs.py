"""Running a flow from the command line: handed to the `serve` of the same data when one is
listening (`handoff`), else here, with a progress bar and the interruption record (`interrupts`).

The `phase1`, `phase2` and `run` commands and `memory`'s `--now` steering run the flows through
`run_flow`, so there is one way to run each, and one place that chooses serve or here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codex_memories.disk_full import LIVE_FOLDER_UNTOUCHED, disk_full_cause, disk_full_line
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories_cli.errors import fail
from codex_memories_cli.interrupts import RUN

console = Console(stderr=False)
errors = Console(stderr=True)


class _RichProgress:
    """Bridges `codex_memories.progress` to a rich progress bar."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, Any] = {}

    def start(self, stage: str, total: int) -> None:
        self._tasks[stage] = self._progress.add_task(stage, total=total)

    def advance(self, stage: str, amount: int = 1) -> None:
        if stage in self._tasks:
            self._progress.advance(self._tasks[stage], amount)


@contextmanager
def _progress_bar() -> Iterator[_RichProgress]:
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=errors,
        transient=True,
        # Only on a terminal: elsewhere (a log file, a pipe) it would leave a blank line behind.
        disable=not errors.is_terminal,
    )
    with bar:
        yield _RichProgress(bar)


def _with_progress(run: Any) -> Any:
    from codex_memories import progress as progress_events

    with _progress_bar() as listener:
        # The bar, and the record of what was answered that an interruption's line reports.
        unsubscribes = [progress_events.subscribe(listener), progress_events.subscribe(RUN)]
        try:
            return run()
        finally:
            for unsubscribe in unsubscribes:
                unsubscribe()



# What the progress and interruption lines call each flow.
LABELS = {"phase1": "phase 1", "phase2": "phase 2"}


def run_flow(flow: str, overrides: SettingsOverrides, config: RuntimeConfig, *, force: bool = False, local: bool, verbose: bool) -> Any:
    """Run phase 1 or phase 2 (`flow`: "phase1" | "phase2") and return its report: handed to the
    `serve` of the same data when one listens (`handoff`; never with `local`), else in this
    process. Every command runs the flows through here, so the choice is made in one place."""
    RUN.begin(LABELS[flow])
    report = None if local else _handed_off(flow, overrides, config, verbose=verbose, force=force)
    if report is None:
        report = _run_here(flow, overrides, config, force=force)
    RUN.end(f"{LABELS[flow]} ({_in_brief(flow, report)})")
    return report


def _run_here(flow: str, overrides: SettingsOverrides, config: RuntimeConfig, *, force: bool) -> Any:
    """The flow in this process, reporting to the Prefect server `reporting_to_prefect` finds."""
    from codex_memories_cli.prefect_server import reporting_to_prefect
    from codex_memories_flows.flow_runs import report_of

    with reporting_to_prefect(LABELS[flow], config):
        if flow == "phase2":
            from codex_memories_flows.phase2 import phase2

            return report_of(phase2(overrides=overrides, force=force, return_state=True))
        from codex_memories_flows.phase1 import phase1

        try:
            return report_of(_with_progress(lambda: phase1(overrides=overrides, return_state=True)))
        except Exception as error:
            cause = disk_full_cause(error)
            if cause is None:
                raise
            fail(disk_full_line(cause, "in phase 1", LIVE_FOLDER_UNTOUCHED))


def _in_brief(flow: str, report: Any) -> str:
    """The end of the run's line in the interruption record."""
    if flow == "phase1":
        from codex_memories.reports.verdicts import format_counts

        return format_counts(report.outcome_counts())
    return report.outcome.value if report.outcome else "unknown"


def _handed_off(flow: str, overrides: SettingsOverrides, config: RuntimeConfig, *, verbose: bool, force: bool) -> Any:
    """The flow's report when `codex-memories serve` ran it (`handoff`), else None: run it here."""
    from codex_memories.settings import config_fingerprint
    from codex_memories_cli.handoff import HandoffFailed, hand_off

    fingerprint = config_fingerprint(config)
    try:
        if flow == "phase1":  # its progress bar, fed by serve's events; phase 2 has none here either
            with _progress_bar() as bar:
                outcome = hand_off(flow, overrides, fingerprint, force=force, listener=bar)
        else:
            outcome = hand_off(flow, overrides, fingerprint, force=force)
    except HandoffFailed as error:
        fail(str(error), error.exit_code)
    if outcome.report is not None:  # where it ran, as a run here says where it reports
        console.print(f"prefect:     {flow} {outcome.reason}", markup=False, highlight=False, soft_wrap=True)
    if verbose:
        errors.print(
            f"{flow}: {outcome.reason}" + ("" if outcome.report is not None else "; running it here"),
            markup=False, highlight=False, soft_wrap=True,
        )
    return outcome.report
