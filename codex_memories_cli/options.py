"""The options every `codex-memories` subcommand accepts after its name, and how they become settings.

Contract:
- `COMMON_OPTIONS` is the one definition of the common options (`--codex-home`, `--db`,
  `--memory-root`, `--provider`, `--base-url`, `--api-mode`, `--extract-model`,
  `--consolidation-model`, `--concurrency`, `--config-file`, `--max-rollouts`,
  `--ignore-age-windows`), each keyed by the `SettingsOverrides` field it sets.
  `@with_common_options` adds all of them to a command's command line (listed under "Common
  options" in its help); the command declares `overrides: SettingsOverrides` and receives them
  there, as the one model that travels on into the flows. So no command can refuse one
  (`inject --db` was refused before), and a new common option reaches every command at once.
- Every value is checked before the command runs (`SettingsOverrides.checked`), and again with
  the environment and our TOML file when the command loads the configuration
  (`overrides.load()`), before anything is written: a bad one (`--provider gpt` included) is a
  `SettingsError`, which `main` prints as one line with exit code 2.
- `require_codex_home(config)`: the same for a Codex home that is not one, for the commands
  that read sessions or write into the home.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from codex_memories.paths import local_memory_folder
from codex_memories.settings import RuntimeConfig, SettingsError, SettingsOverrides
from codex_memories_cli.errors import fail

COMMON_PANEL = "Common options"


def _option(*names: str, help: str) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=COMMON_PANEL, show_default=False)


# The command line of each common option, keyed by the `SettingsOverrides` field it sets, in
# the order `--help` lists them.
COMMON_OPTIONS: dict[str, Any] = {
    "codex_home": Annotated[Optional[Path], _option("--codex-home", help="Codex home (default $CODEX_HOME or ~/.codex).")],
    "db_url": Annotated[Optional[str], _option("--db", help="State DB SQLAlchemy URL.")],
    "memory_root": Annotated[Optional[str], _option("--memory-root", help="Memory folder path or s3:// URL.")],
    "provider": Annotated[Optional[str], _option("--provider", help="auto | openai | codex | heuristic.")],
    "base_url": Annotated[Optional[str], _option("--base-url", help="OpenAI-compatible base URL.")],
    "api_mode": Annotated[Optional[str], _option("--api-mode", help="responses | chat.")],
    "extract_model": Annotated[Optional[str], _option("--extract-model", help="Phase-1 model.")],
    "consolidation_model": Annotated[Optional[str], _option("--consolidation-model", help="Phase-2 model.")],
    "concurrency": Annotated[Optional[int], _option("--concurrency", help="Extractions at once (1..64).")],
    "config_file": Annotated[Optional[Path], _option("--config-file", help="Our own TOML settings file.")],
    "max_rollouts_per_startup": Annotated[
        Optional[int],
        _option("--max-rollouts", help="Sessions claimed per run (1..128); overrides max_rollouts_per_startup of Codex's config.toml."),
    ],
    "ignore_age_windows": Annotated[
        Optional[bool],
        _option("--ignore-age-windows/--age-windows", help="Claim regardless of the idle and age windows."),
    ],
}

Local = Annotated[
    bool,
    typer.Option(
        "--local",
        help="Run the flow in this process, even when `codex-memories serve` is up to take it (see docs/deployments.md).",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Show Prefect's logs.")]

Command = TypeVar("Command", bound=Callable[..., Any])


def with_common_options(command: Command) -> Command:
    """`command` with every common option on its command line, handed to it as
    `overrides: SettingsOverrides` (checked: a bad value is a `SettingsError`)."""
    signature = inspect.signature(command, eval_str=True)
    if "overrides" not in signature.parameters:
        raise TypeError(f"{command.__name__} must take `overrides: SettingsOverrides`")
    own = [parameter for name, parameter in signature.parameters.items() if name != "overrides"]
    clashing = set(COMMON_OPTIONS) & {parameter.name for parameter in own}
    if clashing:
        raise TypeError(f"{command.__name__} declares common options itself: {sorted(clashing)}")
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in COMMON_OPTIONS.items()
    ]

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name, None) for name in COMMON_OPTIONS}
        overrides = SettingsOverrides.checked(**{name: str(value) if isinstance(value, Path) else value for name, value in given.items()})
        return command(*args, overrides=overrides, **kwargs)

    # Typer reads the parameters from the signature (annotations evaluated): the command's own
    # options first, in their order, then the common ones.
    run.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    run.__annotations__ = {}
    return run  # type: ignore[return-value]


def local_memory_root(config: RuntimeConfig, command: str) -> Path:
    """The memory folder for a command that works on local files (`note`, `show`, `install`,
    `rebuild`, ...); an object-store root is one line and exit 1."""
    root = config.settings.resolved_memory_root
    local = local_memory_folder(root)
    if local is None:
        fail(f"{command} needs a local memory folder; {root} is an object-store URL")
    return local


def require_codex_home(config: RuntimeConfig) -> None:
    """For the commands that read the sessions (`run`, `phase1`, `backfill`, `serve`) or write
    into the Codex home (`install`, `uninstall`): a Codex home that is not one (a mistyped `CODEX_HOME`) is a
    bad setting, one line and exit 2, before anything is written. Otherwise a run would find no
    session, report success and leave an empty memory folder and a state DB in the wrong place,
    and `install` would write hooks Codex never runs."""
    from codex_memories.codex.doctor import CODEX_HOME_HINT, codex_home_problem

    problem = codex_home_problem(config.settings.codex_home_path)
    if problem is not None:
        raise SettingsError(f"{problem} ({CODEX_HOME_HINT})")


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
