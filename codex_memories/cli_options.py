"""Options every `codex-memories` subcommand accepts after its name, and how they become config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from codex_memories.settings import RuntimeConfig, load_runtime_config

CodexHome = Annotated[Optional[Path], typer.Option("--codex-home", help="Codex home (default $CODEX_HOME or ~/.codex).")]
DbUrl = Annotated[Optional[str], typer.Option("--db", help="State DB SQLAlchemy URL.")]
MemoryRoot = Annotated[Optional[str], typer.Option("--memory-root", help="Memory folder path or s3:// URL.")]
Provider = Annotated[Optional[str], typer.Option("--provider", help="openai | heuristic | auto.")]
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
