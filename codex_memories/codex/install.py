"""Put codex-memories into a Codex home.

Contract:
- `install(codex_home, memory_root, command, dry_run=False, *, trust=False, ...) -> ChangeReport`:
  0. pins the settings the hooks read (`pinned_settings`: memory root, state DB, TOML file,
     budgets, as the CLI resolved them) in `$CODEX_HOME/codex-memories/pinned-settings.json`
     (mode 0600), which the launcher points the hooks at, so a Codex started in any environment
     reads the memory `run` writes (settings_sources: a variable in Codex's environment still wins);
  1. writes the hook launcher `$CODEX_HOME/codex-memories/codex-memories-hook` (`launcher`:
     it runs this installation's interpreter, falls back to `codex-memories-hook` on PATH, and
     prints `{}` with a log line when neither is there);
  2. merges our five hooks into `$CODEX_HOME/hooks.json` (`hooks_file`: each `<launcher> <Event>`,
     every hook the user already has kept where it is). The SessionStart handler carries
     `additionalContextLimit` when the `session_start_budget_tokens` setting needs more than Codex
     admits by default (`tokens.session_start_context_limit`);
  3. registers our MCP server with Codex's own `codex mcp add codex-memories -- <command> mcp
     --memory-root <root>` when a `codex` binary is found; otherwise the report carries the TOML;
  4. with `trust`, records Codex's trust for exactly our handlers in `config.toml` (`trust`:
     a tomlkit round-trip that keeps the user's comments, order and formatting; records of our
     handlers that moved or changed are replaced, nobody else's are touched). Without it,
     `config.toml` is left alone and the report says that `codex exec` skips the hooks until they
     are trusted, and the one command that trusts them.
  * Idempotent: a second run changes nothing and writes nothing.
  * Every file is written atomically (temp file + rename in the same folder); an existing
    `hooks.json` or `config.toml` is first copied to `<name>.bak-<UTC timestamp>`. `dry_run`
    writes nothing and shows the `config.toml` change as a diff.
  * A `hooks.json` that is not the documented JSON, or a `config.toml` that is not TOML, is a
    `CodexHomeError`: nothing is written.
  * The report ends with the warning every run prints when Codex's own memory feature is on
    (`doctor.codex_rewrite_warning`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.codex.binary import (
    MCP_SERVER_NAME,
    find_codex,
    first_error_line,
    mcp_server_args,
    mcp_server_toml,
    registered_mcp_server,
    run_codex,
)
from codex_memories.codex.changes import ChangeReport, CodexHomeError, current_text
from codex_memories.codex.doctor import codex_rewrite_warning
from codex_memories.codex.hooks_file import apply_hooks, hooks_path, our_hook_groups, read_hooks_file, with_our_hooks
from codex_memories.codex.launcher import LauncherTarget, current_target, launcher_path, launcher_script
from codex_memories.codex.trust import TRUST_HINT, TrustState, edit_trust, handler_trust_states, our_trust_entries
from codex_memories.local_files import write_text_atomically
from codex_memories.read.hooks import HOOK_EVENTS
from codex_memories.settings_sources import (
    SESSION_START_BUDGET,
    pinned_settings_document,
    pinned_settings_path,
    render_pinned_settings,
    resolve_hook_settings,
)
from codex_memories.tokens import session_start_context_limit


def install(
    codex_home: Path,
    memory_root: Path,
    command: Path,
    dry_run: bool = False,
    *,
    trust: bool = False,
    hook_options: list[str] | None = None,
    launcher_target: LauncherTarget | None = None,
    codex_binary: Path | None = None,
    session_start_budget_tokens: int = SESSION_START_BUDGET.default,
    pinned_settings: Mapping[str, Any] | None = None,
) -> ChangeReport:
    """`hook_options`: flags the hooks get on top of their own settings (none from the CLI since
    settings are pinned); `launcher_target`: the environment the launcher runs (default: this
    process's); `pinned_settings`: what the hooks read whatever environment Codex runs them in
    (`settings_sources.pinned_settings_document`; default: this Codex home and memory root, the
    rest resolved as a hook in this environment would)."""
    codex_home, memory_root, command = Path(codex_home).absolute(), Path(memory_root).absolute(), Path(command).absolute()
    report = ChangeReport(dry_run=dry_run)
    launcher = launcher_path(codex_home)
    pinned_file = pinned_settings_path(codex_home)
    target = replace(launcher_target or current_target(codex_home, hook_options or []), pinned_settings=str(pinned_file))
    if pinned_settings is None:
        resolved = resolve_hook_settings({"codex_home": codex_home, "memory_root": memory_root})
        pinned_settings = pinned_settings_document(resolved, None, {})
    _write_pinned_settings(pinned_file, pinned_settings, report)
    _write_launcher(launcher, target, report)
    path = hooks_path(codex_home)
    before = read_hooks_file(path)
    after = with_our_hooks(before, our_hook_groups(launcher, session_start_context_limit(session_start_budget_tokens)))
    apply_hooks(path, before, after, report, f"write our {', '.join(HOOK_EVENTS)} hooks to {path}")
    _install_mcp_server(codex_home, memory_root, command, codex_binary, report)
    wanted = our_trust_entries(path, after)
    if trust:
        edit_trust(
            codex_home, report, f"record Codex's trust for our hooks in {codex_home / paths.CODEX_CONFIG_FILE}",
            add=wanted, remove_ours_of=[before, after],
        )
    elif set(handler_trust_states(codex_home, wanted).values()) != {TrustState.trusted}:
        report.notes.append(TRUST_HINT)
    _note_memory_feature(codex_home, memory_root, report)
    return report


def _write_pinned_settings(path: Path, document: Mapping[str, Any], report: ChangeReport) -> None:
    """Mode 0600: the state DB URL may carry a password."""
    text = render_pinned_settings(document)
    current = current_text(path)
    if current == text:
        return
    report.changes.append(
        f"pin the settings the hooks read in {path} (memory root {document.get('memory_root')}, "
        f"config file {document.get('config_file') or 'none'}, the state DB, the budgets)"
    )
    if not report.dry_run:
        write_text_atomically(path, text, mode=0o600)


def _write_launcher(launcher: Path, target: LauncherTarget, report: ChangeReport) -> None:
    text = launcher_script(target)
    current = current_text(launcher)
    if current == text and os.access(launcher, os.X_OK):
        return
    report.changes.append(f"write the hook launcher {launcher} (it runs {target.python}, else codex-memories-hook on PATH)")
    if not report.dry_run:
        write_text_atomically(launcher, text, mode=0o755)


def _install_mcp_server(codex_home: Path, memory_root: Path, command: Path, codex_binary: Path | None, report: ChangeReport) -> None:
    codex = find_codex(codex_binary)
    if codex is None:
        report.notes.append(
            f"`codex` is not on PATH, so the MCP server is not registered; add this to {codex_home / paths.CODEX_CONFIG_FILE}:\n"
            + mcp_server_toml(command, memory_root)
        )
        return
    wanted = {"command": str(command), "args": mcp_server_args(memory_root)}
    current = registered_mcp_server(codex, codex_home)
    if current is not None and current.get("command") == wanted["command"] and current.get("args") == wanted["args"]:
        return
    verb = "re-register" if current is not None else "register"
    report.changes.append(f"{verb} the MCP server with `codex mcp add {MCP_SERVER_NAME} -- {shlex.join([str(command), *wanted['args']])}`")
    if report.dry_run:
        return
    result = run_codex(codex, codex_home, "mcp", "add", MCP_SERVER_NAME, "--", str(command), *wanted["args"])
    if result.returncode != 0:
        raise CodexHomeError(f"`codex mcp add` failed: {first_error_line(result)}")


def _note_memory_feature(codex_home: Path, memory_root: Path, report: ChangeReport) -> None:
    warning = codex_rewrite_warning(codex_home, str(memory_root))
    if warning:
        report.notes.append(warning)
