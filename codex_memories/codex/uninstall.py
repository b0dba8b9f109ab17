"""Take codex-memories out of a Codex home.

Contract:
- `uninstall(codex_home, dry_run=False, *, codex_binary=None) -> ChangeReport` removes exactly
  what `install` wrote: our hooks (a command that runs `codex-memories-hook` or `codex-memories
  hook`; a hooks.json left with none goes), the trust records of those handlers, the launcher,
  the pinned settings, and our MCP server (`codex mcp remove codex-memories`), with the same
  backups and atomic writes as `install`. Without a `codex` binary the report names the
  `[mcp_servers.codex-memories]` table to remove by hand.
"""

from __future__ import annotations

from pathlib import Path

from codex_memories import paths
from codex_memories.codex.binary import MCP_SERVER_NAME, find_codex, first_error_line, registered_mcp_server, run_codex
from codex_memories.codex.changes import ChangeReport, CodexHomeError
from codex_memories.codex.hooks_file import apply_hooks, hooks_path, read_hooks_file, without_our_hooks
from codex_memories.codex.launcher import launcher_path, read_launcher
from codex_memories.codex.trust import edit_trust
from codex_memories.settings_sources import pinned_settings_path


def uninstall(codex_home: Path, dry_run: bool = False, *, codex_binary: Path | None = None) -> ChangeReport:
    codex_home = Path(codex_home).absolute()
    report = ChangeReport(dry_run=dry_run)
    path = hooks_path(codex_home)
    before = read_hooks_file(path)
    if before is not None:
        apply_hooks(path, before, without_our_hooks(before), report, f"remove our hooks from {path}")
        edit_trust(
            codex_home, report, f"remove Codex's trust records of our hooks from {codex_home / paths.CODEX_CONFIG_FILE}",
            add=[], remove_ours_of=[before],
        )
    launcher = launcher_path(codex_home)
    if read_launcher(launcher) is not None:
        report.changes.append(f"remove the hook launcher {launcher}")
        if not dry_run:
            launcher.unlink()
    pinned_file = pinned_settings_path(codex_home)
    if pinned_file.is_file():
        report.changes.append(f"remove the pinned hook settings {pinned_file}")
        if not dry_run:
            pinned_file.unlink()
    codex = find_codex(codex_binary)
    if codex is None:
        report.notes.append(f"`codex` is not on PATH: remove [mcp_servers.{MCP_SERVER_NAME}] from {codex_home / paths.CODEX_CONFIG_FILE} yourself")
        return report
    if registered_mcp_server(codex, codex_home) is None:
        return report
    report.changes.append(f"unregister the MCP server with `codex mcp remove {MCP_SERVER_NAME}`")
    if not dry_run:
        result = run_codex(codex, codex_home, "mcp", "remove", MCP_SERVER_NAME)
        if result.returncode != 0:
            raise CodexHomeError(f"`codex mcp remove` failed: {first_error_line(result)}")
    return report
