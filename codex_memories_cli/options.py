"""Options every `codex-memories` subcommand accepts after its name, and how they become settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from codex_memories.settings import RuntimeConfig, SettingsOverrides

CodexHome = Annotated[Optional[Path], typer.Option("--codex-home", help="Codex home (default $CODEX_HOME or ~/.codex).")]
DbUrl = Annotated[Optional[str], typer.Option("--db", help="State DB SQLAlchemy URL.")]
MemoryRoot = Annotated[Optional[str], typer.Option("--memory-root", help="Memory folder path or s3:// URL.")]
Provider = Annotated[Optional[str], typer.Option("--provider", help="auto | openai | codex | heuristic.")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible base URL.")]
ApiMode = Annotated[Optional[str], typer.Option("--api-mode", help="responses | chat.")]
ExtractModel = Annotated[Optional[str], typer.Option("--extract-model", help="Phase-1 model.")]
ConsolidationModel = Annotated[Optional[str], typer.Option("--consolidation-model", help="Phase-2 model.")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", help="Extractions at once (1..64).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config-file", help="Our own TOML settings file.")]
MaxRollouts = Annotated[
    Optional[int], typer.Option("--max-rollouts", help="Override [memories] max_rollouts_per_startup (1..128).")
]
IgnoreAgeWindows = Annotated[
    Optional[bool],
    typer.Option("--ignore-age-windows/--age-windows", help="Claim regardless of the idle and age windows."),
]

Local = Annotated[
    bool,
    typer.Option(
        "--local",
        help="Run the flow in this process, even when `codex-memories serve` is up to take it (see README, serve).",
    ),
]


def load_config(**values: Any) -> tuple[SettingsOverrides, RuntimeConfig]:
    """CLI values (None = not given) -> the overrides the flows get, and the effective configuration.

    Loading here checks every value before Prefect starts: a bad one is one line and exit 2."""
    renames = {"db": "db_url", "max_rollouts": "max_rollouts_per_startup", "batch_size": "backfill_batch_size"}
    given = {renames.get(key, key): value for key, value in values.items()}
    if isinstance(given.get("codex_home"), Path):
        given["codex_home"] = str(given["codex_home"])
    if isinstance(given.get("config_file"), Path):
        given["config_file"] = str(given["config_file"])
    overrides = SettingsOverrides(**given)
    return overrides, overrides.load()


def prepare_prefect(verbose: bool) -> None:
    """Quiet Prefect's console logs for the CLI unless asked; keep its files in one place."""
    if not verbose:
        # Quiet the terminal only: the flow-run loggers keep INFO, so the runs the CLI starts
        # still send their stage lines to the Prefect API (the flow-run page shows them).
        # PREFECT_LOGGING_LEVEL=WARNING would drop them at the logger, API included.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Without a server, Prefect starts a temporary one per command; its 20 s default start-up
    # budget was seen to run out on a loaded 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
