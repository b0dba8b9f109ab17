"""The `codex-memories` console script: `recall` by a short way, everything else by the full CLI.

Contract:
- `main()` answers `codex-memories recall ...` without importing typer, rich, pydantic or our
  settings tree (about 0.3 s of imports, more than the search itself) when the command line holds
  only `recall`'s own options (`--query`, `--cwd`, `--limit`, `--json`, `--why`,
  `--all-projects`) and the folder's location (`--memory-root`, `--codex-home`), and no setting
  beyond that location can apply: no `--config-file`, no `CODEX_MEMORIES_CONFIG_FILE`, no
  `<codex home>/codex-memories.toml`, no other `CODEX_MEMORIES_*` variable (the settings tree
  validates those, and a bad one must stay exit 2). The memory folder is then resolved by
  `settings_sources.resolve_hook_settings`, the one light resolver the hooks use too, with the
  settings tree's precedence. The command itself is `recall_command.run_recall`,
  the same function the typer command calls, so both ways print the same.
- `main()` answers `codex-memories mcp [--memory-root DIR] [--codex-home DIR] [--no-notes]`
  the same short way, under the same conditions, with `codex_memories.read.mcp_server`.
- Anything else (help, another command, an unknown or repeated option, an object-store root)
  goes to `codex_memories_cli.main.main`, unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from codex_memories.paths import local_memory_folder
from codex_memories.settings_sources import SettingsError, own_config_file, resolve_hook_settings
from codex_memories_cli.recall_command import RecallRequest, run_recall

VALUE_OPTIONS = ("--query", "--cwd", "--limit", "--memory-root", "--codex-home")
FLAG_OPTIONS = ("--json", "--why", "--all-projects")
# The settings tree reads these for recall; any other CODEX_MEMORIES_* variable sends the
# command the full way, where it is validated.
LOCATION_VARIABLES = ("CODEX_MEMORIES_MEMORY_ROOT", "CODEX_MEMORIES_CODEX_HOME", "CODEX_MEMORIES_DEBUG")


def main() -> None:
    mcp_arguments = fast_mcp_arguments(sys.argv[1:], os.environ)
    if mcp_arguments is not None:
        # Codex gives an MCP server 10 s to start: `mcp` skips typer and the settings tree too
        # (codex_memories.read.mcp_server; benchmarks/mcp_start.py).
        from codex_memories.read.mcp_server import main as mcp_main

        mcp_main(mcp_arguments)
        return
    request = fast_recall_request(sys.argv[1:], os.environ)
    if request is None:
        from codex_memories_cli.main import main as full_main

        full_main()
        return
    sys.exit(run_recall(request))


def fast_mcp_arguments(argv: list[str], environment: os._Environ[str] | dict[str, str]) -> list[str] | None:
    """`codex-memories mcp --memory-root DIR [--no-notes]` (what `install` registers) as the MCP
    server's own arguments, when the memory folder resolves as the settings tree would resolve it
    (`memory_root`); None otherwise (the full CLI then serves it)."""
    if not argv or argv[0] != "mcp":
        return None
    parsed = short_options(argv[1:], flags=("--no-notes",), values=("--memory-root", "--codex-home"))
    if parsed is None:
        return None
    values, flags = parsed
    no_notes = "--no-notes" in flags
    root = memory_root(values, environment)
    if root is None:
        return None
    return ["--memory-root", str(root), *(["--no-notes"] if no_notes else [])]


def fast_recall_request(argv: list[str], environment: os._Environ[str] | dict[str, str]) -> RecallRequest | None:
    """The request when the short way applies (module docstring), else None."""
    if not argv or argv[0] != "recall":
        return None
    parsed = short_options(argv[1:], flags=FLAG_OPTIONS, values=VALUE_OPTIONS)
    if parsed is None:
        return None
    values, flags = parsed
    if "--query" not in values or not values.get("--limit", "5").lstrip("-").isdigit():
        return None
    root = memory_root(values, environment)
    if root is None:
        return None
    return RecallRequest(
        root=root, query=values["--query"], cwd=values.get("--cwd", str(Path.cwd())), limit=int(values.get("--limit", "5")),
        as_json="--json" in flags, why="--why" in flags, all_projects="--all-projects" in flags,
    )


def short_options(argv: list[str], *, flags: Iterable[str], values: Iterable[str]) -> tuple[dict[str, str], set[str]] | None:
    """The options of a short way (`--flag`, `--name value`, `--name=value`, each at most once),
    or None for anything else: the full CLI then parses the command and says what is wrong."""
    flag_names, value_names = set(flags), set(values)
    found: dict[str, str] = {}
    seen: set[str] = set()
    position = 0
    while position < len(argv):
        name, equals, inline = argv[position].partition("=")
        if name in flag_names and not equals and name not in seen:
            seen.add(name)
            position += 1
        elif name in value_names and name not in found:
            if equals:
                found[name] = inline
                position += 1
            elif position + 1 < len(argv):
                found[name] = argv[position + 1]
                position += 2
            else:
                return None
        else:
            return None
    return found, seen


def memory_root(values: dict[str, str], environment: os._Environ[str] | dict[str, str]) -> Path | None:
    """The local memory folder by the settings' own resolution (`settings_sources`); None when
    only the settings tree can say (a TOML file, another variable, an object-store root)."""
    if any(name.startswith("CODEX_MEMORIES_") and name not in LOCATION_VARIABLES for name in environment):
        return None
    given_root = values.get("--memory-root") or environment.get("CODEX_MEMORIES_MEMORY_ROOT")
    if given_root and local_memory_folder(given_root) is None:
        return None
    try:
        if own_config_file(None, values.get("--codex-home"), environment) is not None:
            return None
        settings = resolve_hook_settings({"codex_home": values.get("--codex-home"), "memory_root": values.get("--memory-root")}, environment)
    except SettingsError:
        return None
    return settings.memory_root
