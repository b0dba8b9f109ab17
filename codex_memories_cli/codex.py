"""`codex-memories install | uninstall | doctor | hook`: connect the memory folder to Codex through hooks and MCP.

`install [--trust] [--dry-run]` / `uninstall [--dry-run]` write the hook launcher, edit
`$CODEX_HOME/hooks.json` (merged, backed up), register the MCP server with `codex mcp add` and,
with `--trust`, record Codex's trust for our hooks in `config.toml` (`codex_memories.codex`);
`doctor` prints one line per check and exits 1 when one fails; `hook <Event>` reads Codex's hook
JSON on stdin and prints the hook's answer, exit 0 always (the installed hooks run the launcher,
which runs `codex_memories.read.hooks` without typer).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories_cli.errors import EXIT_USER_ERROR
from codex_memories_cli.errors import fail as _fail
from codex_memories_cli.options import local_memory_root, require_codex_home, with_common_options

codex_app = typer.Typer()

DryRun = Annotated[bool, typer.Option("--dry-run", help="Say what would change; write nothing.")]
Trust = Annotated[
    bool,
    typer.Option(
        "--trust",
        help="Also record Codex's trust for our hooks in config.toml, so `codex exec` runs them (it skips untrusted hooks).",
    ),
]
CodexBinary = Annotated[
    Optional[Path], typer.Option("--codex-binary", help="The Codex CLI to use for `codex mcp` (default: `codex` on PATH).", show_default=False)
]


def _codex_memory_root(config: RuntimeConfig) -> Path:
    """Codex reads the folder by an absolute path (the hooks and the MCP server run elsewhere)."""
    return local_memory_root(config, "Codex").absolute()


def _our_command() -> Path:
    """The `codex-memories` executable of this installation (the MCP server's command)."""
    beside = Path(sys.executable).with_name("codex-memories")
    if beside.exists():
        return beside
    found = shutil.which("codex-memories")
    if found:
        return Path(found).absolute()
    _fail("cannot find the `codex-memories` executable (install the package with pip first)")


def _pinned_settings(overrides: SettingsOverrides, config: RuntimeConfig) -> dict[str, Any]:
    """Every setting the hooks read, as this command resolved it (flags, environment, our TOML
    file, defaults), for the hooks to read whatever environment Codex runs them in."""
    from codex_memories.settings_sources import (
        PINNED_FIELDS,
        HookSettings,
        absolute_db_url,
        own_config_file,
        pinned_settings_document,
        read_own_config_file,
        setting_source,
    )

    settings = config.settings
    toml_path = own_config_file(settings.config_file, settings.codex_home_path)
    file_values = read_own_config_file(toml_path) if toml_path is not None else {}
    resolved = HookSettings(
        codex_home=settings.codex_home_path.absolute(),
        memory_root=_codex_memory_root(config),
        db_url=absolute_db_url(settings.resolved_db_url),
        session_start_budget_tokens=settings.session_start_budget_tokens,
        prompt_recall_budget_tokens=settings.prompt_recall_budget_tokens,
    )
    flags = overrides.model_dump(exclude_none=True)
    sources = {name: setting_source(name, flags, os.environ, file_values) for name in PINNED_FIELDS}
    return pinned_settings_document(resolved, toml_path, sources)



@codex_app.command()
@with_common_options
def install(
    overrides: SettingsOverrides,
    trust: Trust = False,
    dry_run: DryRun = False,
    codex_binary: CodexBinary = None,
) -> None:
    """Add our SessionStart, UserPromptSubmit and Stop hooks and register the MCP server."""
    from codex_memories.codex.changes import CodexHomeError
    from codex_memories.codex.install import install as install_into

    config = overrides.load()
    require_codex_home(config)  # hooks written to a mistyped home are hooks Codex never runs
    try:
        report = install_into(
            config.settings.codex_home_path.absolute(),
            _codex_memory_root(config),
            _our_command(),
            dry_run,
            trust=trust,
            codex_binary=codex_binary,
            session_start_budget_tokens=config.settings.session_start_budget_tokens,
            pinned_settings=_pinned_settings(overrides, config),
        )
    except CodexHomeError as error:
        _fail(str(error))
    for line in report.lines():
        typer.echo(line)


@codex_app.command()
@with_common_options
def uninstall(
    overrides: SettingsOverrides,
    dry_run: DryRun = False,
    codex_binary: CodexBinary = None,
) -> None:
    """Remove our hooks from hooks.json and unregister the MCP server (the memory folder stays)."""
    from codex_memories.codex.changes import CodexHomeError
    from codex_memories.codex.uninstall import uninstall as uninstall_from

    config = overrides.load()
    require_codex_home(config)  # a mistyped home holds nothing of ours to remove
    try:
        report = uninstall_from(config.settings.codex_home_path.absolute(), dry_run, codex_binary=codex_binary)
    except CodexHomeError as error:
        _fail(str(error))
    for line in report.lines():
        typer.echo(line)


@codex_app.command()
@with_common_options
def doctor(
    overrides: SettingsOverrides,
    codex_binary: CodexBinary = None,
) -> None:
    """One line per check; exit 1 when any fails."""
    from codex_memories.codex.doctor import doctor as run_doctor

    config = overrides.load()
    report = run_doctor(
        config.settings.codex_home_path.absolute(),
        _codex_memory_root(config),
        config.settings.resolved_db_url,
        (config.provider_name, config.provider_reason),
        codex_binary=codex_binary,
        session_start_budget_tokens=config.settings.session_start_budget_tokens,
    )
    for line in report.lines():
        typer.echo(line)
    if not report.ok:
        raise typer.Exit(EXIT_USER_ERROR)


@codex_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def hook(ctx: typer.Context, event: Annotated[str, typer.Argument(help="SessionStart, UserPromptSubmit or Stop.")]) -> None:
    """Answer one Codex hook call: stdin is Codex's JSON, stdout the hook's JSON; exit 0 always.

    Takes the hook script's options after the event (`--codex-home`, `--memory-root`,
    `--config-file`, `--db-url`, `--budget`, `--prompt-budget`); settings it is not given resolve
    as every command's do."""
    from codex_memories.read.hooks import main as hook_main

    hook_main([event, *ctx.args])
