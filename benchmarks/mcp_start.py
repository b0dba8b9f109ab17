"""Start-up of the memories MCP server: spawn to the `initialize` answer, against `python -c pass`.

Codex gives an MCP server 10 s to start (issue 35.7: 8.8 s at load 14 before). Each sample is a
fresh process, exactly as Codex spawns it (stdin and stdout pipes, one `initialize` line sent at
once), timed from `Popen` to the first answer line, for:

* the baseline, `<venv python> -c pass` (spawn to exit);
* `codex-memories mcp --memory-root DIR`, the command `install` registers (the launcher's short
  way: no typer, no settings tree);
* `python -m codex_memories.read.mcp_server --memory-root DIR`, the server alone;
* the same server's `tools/list` answer (the SDK and the tools loaded in the background), sent
  right after `initialize`: what a client that lists tools at once waits for;
* `sdk import`: `python -c "import mcp.server.mcpserver"`, what the handshake no longer waits for.

Figures are medians with their spread and the ratio to the baseline of the same run; the load
average is printed with them (on 2 shared cores it moves every figure).

    .venv/bin/python -m benchmarks.mcp_start --repeats 7 --save-report
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.support import machine_description, markdown_table, median, save_report, scratch_dir, spread

VENV_BIN = Path(sys.executable).parent
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "benchmark", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def time_exit(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def time_answers(argv: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """(seconds to the initialize answer, seconds to the tools/list answer) of one fresh server."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment, text=True)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        first = json.loads(process.stdout.readline())
        initialized = time.perf_counter() - started
        if first.get("id") != 1 or "result" not in first:
            raise RuntimeError(f"unexpected initialize answer: {first}")
        process.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(LIST_TOOLS) + "\n")
        process.stdin.flush()
        listed = json.loads(process.stdout.readline())
        tools_listed = time.perf_counter() - started
        if listed.get("id") != 2 or not listed.get("result", {}).get("tools"):
            raise RuntimeError(f"unexpected tools/list answer: {listed}")
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=120)
    return initialized, tools_listed


def run(repeats: int) -> str:
    root = scratch_dir("mcp-start") / "memories"
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Task Group: atlas\n- build with make -j8\n", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("CODEX_MEMORIES_", "CODEX_HOME"))}
    python = str(VENV_BIN / "python")
    commands = {
        "codex-memories mcp": [str(VENV_BIN / "codex-memories"), "mcp", "--memory-root", str(root)],
        "python -m codex_memories.read.mcp_server": [python, "-m", "codex_memories.read.mcp_server", "--memory-root", str(root)],
    }
    samples: dict[str, list[float]] = {"baseline": [], "sdk import": []}
    for name in commands:
        samples[f"{name}: initialize"] = []
        samples[f"{name}: tools/list"] = []
    for _ in range(repeats):  # interleaved, so load drifts hit every variant alike
        samples["baseline"].append(time_exit([python, "-c", "pass"]))
        samples["sdk import"].append(time_exit([python, "-c", "import mcp.server.mcpserver"]))
        for name, argv in commands.items():
            initialized, listed = time_answers(argv, environment)
            samples[f"{name}: initialize"].append(initialized)
            samples[f"{name}: tools/list"].append(listed)
    baseline = median(samples["baseline"])
    rows = [
        [name, spread(values, 3, " s"), f"{median(values) / baseline:.1f}×"]
        for name, values in samples.items()
    ]
    load = os.getloadavg()[0]
    return "\n".join([
        f"# MCP server start-up ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{machine_description()}; load average {load:.1f}; {repeats} repeats, interleaved.",
        "",
        markdown_table(["process", "median (min–max)", "× python -c pass"], rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--save-report", action="store_true")
    arguments = parser.parse_args()
    report = run(arguments.repeats)
    print(report)
    if arguments.save_report:
        print(f"saved {save_report('mcp_start', report)}")


if __name__ == "__main__":
    main()
