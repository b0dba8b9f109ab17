"""Options every `codex-memories` subcommand accepts after its name, and how they become settings."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer
from pydantic import ValidationError

from codex_memories.settings import RuntimeConfig, SettingsError, SettingsOverrides, describe_validation_error

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


# The common options, in the order `--help` lists them (README, "Command line").
COMMON_OPTIONS: dict[str, Any] = {
    "codex_home": CodexHome,
    "db": DbUrl,
    "memory_root": MemoryRoot,
    "provider": Provider,
    "base_url": BaseUrl,
    "api_mode": ApiMode,
    "extract_model": ExtractModel,
    "consolidation_model": ConsolidationModel,
    "concurrency": Concurrency,
    "config_file": ConfigFile,
    "max_rollouts": MaxRollouts,
    "ignore_age_windows": IgnoreAgeWindows,
}

F = TypeVar("F", bound=Callable[..., Any])


def with_common_options(command: F) -> F:
    """A command that takes every common option after its own, and gets them loaded: its
    `config` parameter receives the `RuntimeConfig` (a bad value is one line and exit 2, as
    everywhere). The command declares only its own options."""
    signature = inspect.signature(command, eval_str=True)
    own = [parameter for name, parameter in signature.parameters.items() if name != "config"]
    common = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in COMMON_OPTIONS.items()
    ]

    @functools.wraps(command)
    def with_config(**values: Any) -> Any:
        _, config = load_config(**{name: values.pop(name) for name in COMMON_OPTIONS})
        return command(**values, config=config)

    parameters = [*own, *common]
    with_config.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_config.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    return with_config  # type: ignore[return-value]


def load_config(**values: Any) -> tuple[SettingsOverrides, RuntimeConfig]:
    """CLI values (None = not given) -> the overrides the flows get, and the effective configuration.

    Loading here checks every value before Prefect starts: a bad one is one line and exit 2."""
    renames = {"db": "db_url", "max_rollouts": "max_rollouts_per_startup", "batch_size": "backfill_batch_size"}
    given = {renames.get(key, key): value for key, value in values.items()}
    if isinstance(given.get("codex_home"), Path):
        given["codex_home"] = str(given["codex_home"])
    if isinstance(given.get("config_file"), Path):
        given["config_file"] = str(given["config_file"])
    try:
        overrides = SettingsOverrides(**given)
    except ValidationError as error:  # a value outside a choice (`--provider gpt`): a bad setting
        raise SettingsError(describe_validation_error(error)) from None
    return overrides, overrides.load()


def prepare_prefect(verbose: bool, *, quiet_level: str = "CRITICAL") -> None:
    """Quiet Prefect's console logs for the CLI unless asked (`serve`, which prints no report of
    its own, keeps Prefect's warnings: `quiet_level`); keep its files in one place."""
    if not verbose:
        # Quiet the terminal only: the flow-run loggers keep INFO, so the runs the CLI starts
        # still send their stage lines to the Prefect API (the flow-run page shows them).
        # PREFECT_LOGGING_LEVEL=WARNING would drop them at the logger, API included. Nothing of
        # Prefect's reaches the terminal (its engine's crash notes, its queues' "still
        # processing" warnings, a retried task's traceback): the command prints its own report,
        # failures with their reasons, and one line for an error; `--verbose` shows Prefect's logs.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", quiet_level)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Without a server, Prefect starts a temporary one per command; its 20 s default start-up
    # budget was seen to run out on a loaded 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
