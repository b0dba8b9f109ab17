"""The `codex` binary: where it is, running it against one Codex home, and our MCP server in its
registry.

Contract:
- `find_codex(codex_binary)`: the binary given (when it exists), else `codex` on PATH, else None.
- `run_codex(codex, codex_home, *args)`: one `codex` command with `CODEX_HOME` set, no stdin, at
  most `CODEX_TIMEOUT_SECONDS`; a binary that does not start or hangs is a `CodexHomeError`.
- `registered_mcp_server(codex, codex_home)`: `codex mcp get codex-memories --json`'s transport,
  None when Codex has no server of that name; `mcp_server_args` / `mcp_server_toml` are what
  `install` registers (or shows, when no `codex` is found).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from codex_memories.codex.changes import CodexHomeError

MCP_SERVER_NAME = "codex-memories"
CODEX_TIMEOUT_SECONDS = 30


def mcp_server_args(memory_root: Path) -> list[str]:
    return ["mcp", "--memory-root", str(memory_root)]


def mcp_server_toml(command: Path, memory_root: Path) -> str:
    return (
        f"[mcp_servers.{MCP_SERVER_NAME}]\n"
        f"command = {json.dumps(str(command))}\n"
        f"args = {json.dumps(mcp_server_args(memory_root))}\n"
    )


def find_codex(codex_binary: Path | None = None) -> Path | None:
    if codex_binary is not None:
        return Path(codex_binary) if Path(codex_binary).exists() else None
    found = shutil.which("codex")
    return Path(found) if found else None


def run_codex(codex: Path, codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    try:
        return subprocess.run(
            [str(codex), *args], env=env, capture_output=True, text=True, timeout=CODEX_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CodexHomeError(f"`codex {' '.join(args[:2])}` did not run: {error}") from error


def registered_mcp_server(codex: Path, codex_home: Path) -> dict[str, Any] | None:
    """`codex mcp get codex-memories --json`'s transport, or None when not registered."""
    result = run_codex(codex, codex_home, "mcp", "get", MCP_SERVER_NAME, "--json")
    if result.returncode != 0:
        if "No MCP server named" in result.stderr + result.stdout:
            return None
        raise CodexHomeError(f"`codex mcp get` failed: {first_error_line(result)}")
    try:
        described = json.loads(result.stdout)
    except ValueError as error:
        raise CodexHomeError(f"`codex mcp get --json` printed no JSON ({error})") from error
    transport = described.get("transport") if isinstance(described, dict) else None
    return transport if isinstance(transport, dict) else {}


def first_error_line(result: subprocess.CompletedProcess[str]) -> str:
    for line in (result.stderr + "\n" + result.stdout).splitlines():
        if line.strip() and not line.startswith("WARNING: proceeding"):
            return line.strip()
    return f"exit code {result.returncode}"
