"""`codex-memories export` and `codex-memories rebuild` (merged into the main CLI).

`export --project DIR` writes the project's memories to `<repository>/.codex/memories.md` (see
`codex_memories.memory_folder.team_memory` for where and why); it calls the library directly, no Prefect
run. `rebuild` runs the `memories-rebuild` flow in-process (a forced phase 2 on a fresh folder,
the old folder kept until it succeeded). A user error is one line on stderr and exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codex_memories.settings import SettingsOverrides
from codex_memories_cli.errors import EXIT_USER_ERROR, fail
from codex_memories_cli.options import Verbose, local_memory_root, prepare_prefect, with_common_options

export_app = typer.Typer()

ProjectDir = Annotated[
    Path, typer.Option("--project", help="A folder of the project (its repository root receives the file).", show_default=False)
]


@export_app.command()
@with_common_options
def export(
    overrides: SettingsOverrides,
    project: ProjectDir,
) -> None:
    """Write the project's memories to <repository>/.codex/memories.md for the team to review and commit."""
    from codex_memories.memory_folder.team_memory import export_team_memory
    from codex_memories.runtime import open_store

    config = overrides.load()
    try:
        result = export_team_memory(open_store(config.settings.resolved_db_url), project)
    except (OSError, ValueError) as error:
        fail(f"cannot export the team memory of {project}: {error}")
    memories = result.memories
    state = "written" if result.changed else "unchanged"
    print(
        f"{result.path}: {state}; {memories.line_count} line(s) from {memories.memories_used} memory(ies) of {memories.key}"
        + (f"; {memories.user_level_left_out} user-level line(s) left out" if memories.user_level_left_out else "")
    )


@export_app.command()
@with_common_options
def rebuild(
    overrides: SettingsOverrides,
    verbose: Verbose = False,
) -> None:
    """Consolidate from scratch: a fresh memory folder from the current stage-1 selection (notes kept)."""
    config = overrides.load()
    local_memory_root(config, "rebuild")
    prepare_prefect(verbose)
    from codex_memories.reports.phase2 import render_phase2_text
    from codex_memories_flows.flow_runs import report_of
    from codex_memories_flows.rebuild import rebuild as rebuild_flow

    report = report_of(rebuild_flow(overrides=overrides, return_state=True))
    print(render_phase2_text(report.phase2))
    if report.kept:
        print(f"rebuilt {config.settings.resolved_memory_root} from the stage-1 outputs (ad-hoc notes and extensions kept)")
        return
    print(f"rebuild did not succeed: the previous memory folder stays live at {config.settings.resolved_memory_root}")
    raise typer.Exit(EXIT_USER_ERROR)
