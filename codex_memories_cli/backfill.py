"""`codex-memories backfill` (merged into the main CLI): old and archived sessions become memories.

Runs the `memories-backfill` flow in-process (as `run` does for phase 1 and 2); `--source` is
`archived` (default: `$CODEX_HOME/archived_sessions`), a local folder, or an `s3://` prefix whose
rollouts are copied to the backfill cache first. A bad source or date is one line on stderr and
exit 1.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from codex_memories.settings import SettingsOverrides
from codex_memories_cli.errors import EXIT_USER_ERROR, fail
from codex_memories_cli.options import Verbose, prepare_prefect, require_codex_home, with_common_options

backfill_app = typer.Typer()


@backfill_app.command()
@with_common_options
def backfill(
    overrides: SettingsOverrides,
    source: Annotated[
        Optional[str],
        typer.Option("--source", help="archived (default: $CODEX_HOME/archived_sessions), a folder, or s3://bucket/prefix."),
    ] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only sessions last active on or after this day (YYYY-MM-DD, UTC).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Only sessions last active on or before this day (YYYY-MM-DD, UTC).")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", help="Threads claimed and extracted per batch (1..1024).")] = None,
    verbose: Verbose = False,
) -> None:
    """Backfill: extract memories from archived or old sessions (no idle/age windows), then phase 2."""
    overrides = overrides.with_values(backfill_batch_size=batch_size)
    config = overrides.load()
    require_codex_home(config)
    prepare_prefect(verbose)
    from codex_memories.ingest.backfill import BackfillSourceError, day_window, resolve_source
    from codex_memories.reports.backfill import render_backfill_markdown
    from codex_memories_flows.backfill import backfill as backfill_flow

    try:  # check the source and days before starting Prefect
        resolve_source(source, config.settings)
        day_window(since, until)
    except BackfillSourceError as error:
        fail(str(error))
    from codex_memories import progress
    from codex_memories.reports.verdicts import format_counts
    from codex_memories_cli.interrupts import RUN, interruptible_run
    from codex_memories_cli.prefect_server import reporting_to_prefect
    from codex_memories_flows.flow_runs import report_of

    RUN.begin("backfill")
    unsubscribe = progress.subscribe(RUN)  # what an interruption's line reports as answered
    try:
        with interruptible_run(), reporting_to_prefect("backfill", config):
            report = report_of(backfill_flow(source=source, since=since, until=until, overrides=overrides, return_state=True))
    finally:
        unsubscribe()
    RUN.end(f"backfill ({format_counts(report.phase1.outcome_counts())})")
    print(render_backfill_markdown(report))
    failed = report.phase2_outcome is not None and report.phase2_outcome.startswith("failed")
    if failed or report.phase1.failures():
        raise typer.Exit(EXIT_USER_ERROR)
