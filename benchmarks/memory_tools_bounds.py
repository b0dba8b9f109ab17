"""Peak memory, answer size and time of the MCP memory tools on hostile files.

Method: generate, in a temporary memory root, (1) a 200 MB Markdown file of ordinary lines with a
match every 1,000 lines, (2) a file of the same size where every line matches, (3) a 200 MB file
that is one single line containing the query; then run each tool call (`search` with and without
context, `read` of the whole file, `list`) in a fresh Python process and report that process's
peak RSS (`resource.getrusage(RUSAGE_SELF).ru_maxrss`), the size of the JSON answer the MCP
server would send and the wall time. The baseline is the same process importing the module and
doing nothing, so the figures are "added by the call". Nothing is written to the repository.

Command: `.venv/bin/python -m benchmarks.memory_tools_bounds --megabytes 200`
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

QUERY = "needle"

_PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    from codex_memories.read import memory_tools
    root, call, path = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    calls = {
        "baseline": lambda: None,
        "search": lambda: memory_tools.search(root, "needle", path=path),
        "search_context": lambda: memory_tools.search(root, "needle", path=path, context_lines=20),
        "search_cursor_2000": lambda: memory_tools.search(root, "needle", path=path, cursor="2000"),
        "read": lambda: memory_tools.read_file(root, path),
        "list": lambda: memory_tools.list_entries(root),
    }
    started = time.monotonic()
    try:
        result = calls[call]()
        answer = {} if result is None else result.model_dump(mode="json")
    except memory_tools.MemoryToolError as error:
        answer = {"error": error.kind, "message": str(error)}
    elapsed = time.monotonic() - started
    body = json.dumps(answer, ensure_ascii=False).encode("utf-8")
    print(json.dumps({
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "answer_bytes": len(body),
        "seconds": round(elapsed, 2),
        "matches": len(answer.get("matches", [])),
        "next_cursor": answer.get("next_cursor"),
        "error": answer.get("error"),
    }))
    """
)


def _generate(path: Path, megabytes: int, *, every_line: bool, one_line: bool) -> None:
    target = megabytes * 1024 * 1024
    with path.open("wb") as handle:
        if one_line:
            block = (b"x" * 1023 + b" ") * 1024
            handle.write(b"start needle ")
            written = 13
            while written < target:
                handle.write(block)
                written += len(block)
            handle.write(b"needle end\n")
            return
        number = 0
        written = 0
        lines = []
        while written < target:
            match = every_line or number % 1000 == 0
            line = f"- line {number}: {'needle ' if match else ''}ordinary memory text about builds and tests\n".encode()
            lines.append(line)
            written += len(line)
            number += 1
            if len(lines) == 10_000:
                handle.write(b"".join(lines))
                lines.clear()
        handle.write(b"".join(lines))


def _probe(root: Path, call: str, path: str) -> dict[str, object]:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root), call, path], capture_output=True, text=True, check=True
    )
    return json.loads(completed.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=200)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memory-tools-bounds-") as scratch:
        root = Path(scratch)
        files = {
            "sparse.md": dict(every_line=False, one_line=False),
            "every_line.md": dict(every_line=True, one_line=False),
            "one_line.md": dict(every_line=False, one_line=True),
        }
        for name, shape in files.items():
            _generate(root / name, arguments.megabytes, **shape)
        (root / "small.md").write_text("one needle line\n", encoding="utf-8")
        baseline = _probe(root, "baseline", "")
        small_read = _probe(root, "read", "small.md")
        print(f"baseline (import only): peak RSS {baseline['peak_rss_mib']:.0f} MiB")
        print(f"read of a one-line file (loads the tokenizer): peak RSS {small_read['peak_rss_mib']:.0f} MiB")
        print("| file | call | peak RSS MiB | answer bytes | matches | next_cursor | seconds |")
        print("|---|---|---|---|---|---|---|")
        for name in files:
            size = (root / name).stat().st_size
            for call in ("search", "search_context", "search_cursor_2000", "read"):
                result = _probe(root, call, name)
                print(
                    f"| {name} ({size / 1e6:.0f} MB) | {call} | {result['peak_rss_mib']:.0f} | {result['answer_bytes']} "
                    f"| {result['matches']} | {result['error'] or result['next_cursor']} | {result['seconds']} |"
                )
        result = _probe(root, "search", "")
        print(f"| whole root | search | {result['peak_rss_mib']:.0f} | {result['answer_bytes']} | {result['matches']} | {result['next_cursor']} | {result['seconds']} |")
        result = _probe(root, "list", "")
        print(f"| whole root | list | {result['peak_rss_mib']:.0f} | {result['answer_bytes']} | - | - | {result['seconds']} |")


if __name__ == "__main__":
    main()
