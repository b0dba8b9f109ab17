"""Options every `codex-memories` subcommand accepts after its name, and how they become config."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from codex_memories.settings import RuntimeConfig, load_runtime_config

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




def load_config(**values: Any) -> RuntimeConfig:
    """CLI values (None = not given) -> the effective configuration."""
    renames = {"db": "db_url", "max_rollouts": "max_rollouts_per_startup"}
    given = {renames.get(key, key): value for key, value in values.items()}
    return load_runtime_config(**given)


def prepare_prefect(verbose: bool) -> None:
    """Quiet Prefect's console logs for the CLI unless asked; keep its files in one place."""
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Without a server, Prefect starts a temporary one per command; its 20 s default start-up
    # budget was seen to run out on a loaded 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def common_flow_parameters(config: RuntimeConfig) -> dict[str, Any]:
    """What every flow needs to load the same configuration the CLI loaded.

    Flows load their settings from their parameters (they also run under a worker, without
    this CLI), so every option the CLI took must travel as a parameter or it is lost. The API
    key never does: it stays in the environment or the settings file."""
    settings = config.settings
    return {
        "codex_home": str(settings.codex_home_path),
        "db_url": settings.resolved_db_url,
        "memory_root": settings.resolved_memory_root,
        "provider": settings.provider,
        "base_url": settings.base_url,
        "api_mode": settings.api_mode,
        "config_file": str(settings.config_file) if settings.config_file else None,
    }
