"""Ingest: throughput of discover + transcript building, and peak memory on one huge rollout.

(a) Throughput. A generated CODEX_HOME of about `--total-mb` MB (default 200) of realistic
    rollouts: many small interactive sessions (a few turns, shell calls with small outputs, the
    odd planted fake secret), medium sessions of a few MB and a few large ones dominated by tool
    output (`write_large_rollout`), as real homes are. Per repetition, in this process:
    - product: `discover_rollouts` into a fresh SQLite store (streaming parse, scan, upserts),
      then `build_memory_transcript` (parse, sanitize, redact, token budget) for every file,
      given discovery's `KeptLines` of the long ones as phase 1 gives them (the redaction
      screen is built before the first repetition, as phase 1's worker builds it before a claim);
    - baseline: open each file and `json.loads` every line, nothing else;
    - floor: only the work the issue itself asks of ingest, each part done once with the fastest
      code we have: `orjson.loads` of every line (a line must be parsed to know whether it is
      kept), `redact_secrets` of exactly the text the transcripts send, and one `count_tokens`
      of each transcript text that is counted at all (one longer in bytes than the budget). No
      discovery store, no sanitising, no serialising, no head/tail bookkeeping: what no
      implementation of the product can go below with this redactor and this tokenizer. The
      texts come from one product pass before the timed repetitions.
    All three read the same files from the page cache (a warm-up pass reads everything first;
    the order of the passes is reversed every other repetition). Reported in MB/s of rollout
    bytes (each pass counts the data once, although discovery and the transcript each read
    every file), and as the ratio product / baseline, by wall time and by this process's CPU
    time (`time.process_time`: on a shared machine other processes inflate wall time, and
    the short baseline most, so the CPU-time ratio is the steadier one).
(b) Peak RSS of `build_memory_transcript` on one generated `--big-mb` MB (default 500) rollout,
    in a fresh child process, read with `/usr/bin/time -f %M` and the child's own VmHWM (not
    `RUSAGE_CHILDREN`, which inherits this big parent's high-water mark through fork). The same child
    shape with only the imports gives the interpreter + import floor, and a child doing the plain
    `json.loads` line loop gives the baseline. Goal: under 300 MB.

All data lives in a temp dir under benchmarks/.work and is deleted at the end.

    .venv/bin/python -m benchmarks.ingest [--total-mb 200] [--big-mb 500] [--repeats 3] [--save-report]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.support import (
    REPO_ROOT,
    machine_description,
    markdown_table,
    median,
    save_report,
    scratch_dir,
    spread,
)

SECTION = "ingest"
TOKEN_BUDGET = 150_000  # the default `rollout_token_budget`
MB = 1_000_000


# ---- data ------------------------------------------------------------------------------------


def _place_large(codex_home: Path, target_bytes: int, seed: int, secret: str | None) -> int:
    """A `write_large_rollout` file renamed the way Codex names it (id taken from its session_meta)."""
    from tests.support.rollout_factory import rollout_path_for, write_large_rollout

    staging = codex_home / f"staging-{seed}.jsonl"
    written = write_large_rollout(staging, target_bytes, seed=seed, secret=secret)
    with staging.open("rb") as handle:
        meta = json.loads(handle.readline())["payload"]
    created_at = datetime.fromisoformat(meta["timestamp"].replace("Z", "+00:00")) + timedelta(minutes=seed)
    final = rollout_path_for(codex_home, created_at, meta["id"])
    final.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(final)
    return written


def generate_codex_home(codex_home: Path, total_mb: int) -> dict[str, Any]:
    """~15% of the bytes in small sessions, ~30% in medium (~2 MB), the rest in large (~20 MB)."""
    from tests.support.rollout_factory import write_rollout
    from tests.support.secrets import PLANTED_SECRETS

    rng = random.Random(20261103)
    codex_home.mkdir(parents=True, exist_ok=True)
    secrets = list(PLANTED_SECRETS.values())
    total_target = total_mb * MB
    written = 0
    counts = {"small": 0, "medium": 0, "large": 0}
    start = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)

    small_target = int(total_target * 0.15)
    projects = ["api", "web", "infra", "billing", "cli", "docs"]
    while written < small_target:
        project = rng.choice(projects)
        calls = []
        for _ in range(rng.randint(3, 8)):
            body = " ".join(rng.choice(["PASS", "FAIL", "ok", "src/app.py:12", "error:", "warning:", "✓", "漢字"])
                            for _ in range(rng.randint(50, 2500)))
            if rng.random() < 0.05:
                body += "\n" + rng.choice(secrets) + "\n"
            calls.append((f"pytest -q tests/{project}", body, rng.choice((0, 0, 1))))
        path = write_rollout(
            codex_home,
            created_at=start + timedelta(minutes=7 * counts["small"]),
            cwd=f"/home/dana/src/{project}",
            user_messages=[f"Fix the {project} tests, use pnpm not npm.", "Now run the linter too."],
            tool_calls=calls,
            assistant_messages=["Fixed.", "Linted."],
        )
        written += path.stat().st_size
        counts["small"] += 1

    medium_end = written + int(total_target * 0.30)
    seed = 100
    while written < medium_end:
        written += _place_large(codex_home, 2 * MB, seed, secrets[seed % len(secrets)])
        counts["medium"] += 1
        seed += 1
    while written < total_target:
        size = min(20 * MB, max(MB, total_target - written))
        written += _place_large(codex_home, size, seed, secrets[seed % len(secrets)])
        counts["large"] += 1
        seed += 1
    return {"bytes": written, **counts}


# ---- (a) throughput ----------------------------------------------------------------------------


def rollout_files(codex_home: Path) -> list[Path]:
    return sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))


def plain_parse(files: list[Path]) -> int:
    lines = 0
    for path in files:
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)
                lines += 1
    return lines


def parse_every_line_once(files: list[Path]) -> int:
    """The floor's parse: every line through orjson, the fastest parser here, read in 1 MiB."""
    import orjson

    lines = 0
    for path in files:
        with path.open("rb", buffering=1 << 20) as handle:
            for line in handle:
                orjson.loads(line)
                lines += 1
    return lines


def floor_parts(files: list[Path], sent: list[str], counted: list[str]) -> dict[str, float]:
    """CPU seconds of each part of the floor (see the docstring)."""
    from codex_memories.redact import redact_secrets
    from codex_memories.tokens import count_tokens

    parts: dict[str, float] = {}
    started = time.process_time()
    parse_every_line_once(files)
    parts["parse"] = time.process_time() - started
    started = time.process_time()
    for text in sent:
        redact_secrets(text)
    parts["redact"] = time.process_time() - started
    started = time.process_time()
    for text in counted:
        count_tokens(text)
    parts["count"] = time.process_time() - started
    return parts


def sent_texts(files: list[Path]) -> tuple[list[str], list[str]]:
    """(every transcript's text, the texts of those whose tokens were counted), as the product
    builds them."""
    from codex_memories.ingest.transcript import build_memory_transcript

    transcripts = [build_memory_transcript(path, token_budget=TOKEN_BUDGET) for path in files]
    return [t.text for t in transcripts], [t.text for t in transcripts if t.tokens_counted]


def product_pass(codex_home: Path, files: list[Path], work: Path) -> tuple[float, float, float, int]:
    """(discover seconds, transcript seconds, CPU seconds of both, threads discovered) with a
    fresh store."""
    from codex_memories.ingest.discovery import discover_rollouts
    from codex_memories.ingest.transcript import build_memory_transcript
    from codex_memories.state.store import MemoryStore

    db = work / f"state-{time.monotonic_ns()}.sqlite"
    store = MemoryStore.open(f"sqlite:///{db}")
    try:
        cpu_started = time.process_time()
        started = time.perf_counter()
        report = discover_rollouts(
            store, codex_home, generate_memories=True, disable_on_external_context=False,
            now_ms=int(time.time() * 1000),
        )
        discovered = time.perf_counter()
        # As phase 1 does: a long rollout's transcript reads what discovery's index says it keeps.
        kept_lines = report.kept_lines()
        for path in files:
            build_memory_transcript(path, token_budget=TOKEN_BUDGET, kept_lines=kept_lines.get(str(path)))
        finished = time.perf_counter()
        cpu_seconds = time.process_time() - cpu_started
    finally:
        store.close()
        db.unlink(missing_ok=True)
    if report.files_read != len(files):
        raise RuntimeError(f"discovery read {report.files_read} of {len(files)} files")
    return discovered - started, finished - discovered, cpu_seconds, report.threads_upserted


def measure_throughput(codex_home: Path, work: Path, repeats: int) -> dict[str, Any]:
    files = rollout_files(codex_home)
    data_bytes = sum(path.stat().st_size for path in files)
    plain_parse(files)  # warm the page cache for both sides
    from codex_memories.redact import prepare_screen

    prepare_screen()  # as phase 1's transcript worker does before its first claim
    sent, counted = sent_texts(files)
    discover_s, transcript_s, plain_s, product_cpu_s, plain_cpu_s = [], [], [], [], []
    floor: dict[str, list[float]] = {"parse": [], "redact": [], "count": []}
    for repetition in range(repeats):
        order = ("product", "plain", "floor") if repetition % 2 == 0 else ("floor", "plain", "product")
        for side in order:
            if side == "floor":
                for part, seconds in floor_parts(files, sent, counted).items():
                    floor[part].append(seconds)
            elif side == "plain":
                cpu_started = time.process_time()
                started = time.perf_counter()
                plain_parse(files)
                plain_s.append(time.perf_counter() - started)
                plain_cpu_s.append(time.process_time() - cpu_started)
            else:
                seconds_discover, seconds_transcript, cpu_seconds, _threads = product_pass(codex_home, files, work)
                discover_s.append(seconds_discover)
                transcript_s.append(seconds_transcript)
                product_cpu_s.append(cpu_seconds)
        print(f"  throughput repetition {repetition + 1}/{repeats} done", file=sys.stderr, flush=True)
    return {
        "files": len(files),
        "bytes": data_bytes,
        "discover_seconds": discover_s,
        "transcript_seconds": transcript_s,
        "plain_seconds": plain_s,
        "product_cpu_seconds": product_cpu_s,
        "plain_cpu_seconds": plain_cpu_s,
        "floor_cpu_seconds": floor,
        "sent_chars": sum(map(len, sent)),
        "counted_chars": sum(map(len, counted)),
    }


# ---- (b) peak RSS ------------------------------------------------------------------------------

_CHILD_CODE = {
    "imports only": (
        "import json, sys\n"
        "from codex_memories.ingest.transcript import build_memory_transcript\n"
        "print(json.dumps({'vm_hwm_mb': high_water_mb()}))\n"
    ),
    "plain json.loads per line": (
        "import json, sys\n"
        "from codex_memories.ingest.transcript import build_memory_transcript\n"
        "lines = 0\n"
        "with open(sys.argv[1], 'rb') as handle:\n"
        "    for line in handle:\n"
        "        json.loads(line); lines += 1\n"
        "print(json.dumps({'lines': lines, 'vm_hwm_mb': high_water_mb()}))\n"
    ),
    "build_memory_transcript": (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from codex_memories.ingest.transcript import build_memory_transcript\n"
        "t = build_memory_transcript(Path(sys.argv[1]), token_budget=int(sys.argv[2]))\n"
        "print(json.dumps({'tokens': t.tokens, 'truncated_tokens': t.truncated_tokens, 'items': len(t.items),\n"
        "                  'redacted': t.text.count('[REDACTED'), 'vm_hwm_mb': high_water_mb()}))\n"
    ),
}


_HIGH_WATER = (
    "import re\n"
    "def high_water_mb():\n"
    "    status = open('/proc/self/status').read()\n"
    "    return int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1)) / 1024\n"
)
TIME_BINARY = Path("/usr/bin/time")


def child_peak(code: str, big_file: Path) -> tuple[float, float, float, dict[str, Any]]:
    """(peak RSS MB by /usr/bin/time, the child's own VmHWM MB, wall seconds, its JSON).

    Not `os.wait4`/`RUSAGE_CHILDREN` from this process: Linux carries the parent's high-water
    mark into a forked child's `ru_maxrss`, and this parent is big after generating the data.
    `/usr/bin/time` is a tiny parent; VmHWM (per address space, reset by exec) cross-checks it.
    """
    command = [sys.executable, "-c", _HIGH_WATER + code, str(big_file), str(TOKEN_BUDGET)]
    if TIME_BINARY.exists():
        command = [str(TIME_BINARY), "-f", "maxrss_kb=%M", *command]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"child failed with exit code {completed.returncode}: {completed.stderr[-2000:]}")
    details = json.loads(completed.stdout.strip().splitlines()[-1])
    peak = float("nan")
    for line in completed.stderr.splitlines():
        if line.startswith("maxrss_kb="):
            peak = int(line.split("=", 1)[1]) / 1024
    return peak, details.pop("vm_hwm_mb"), elapsed, details


def measure_peak_rss(work: Path, big_mb: int, repeats: int) -> dict[str, Any]:
    from tests.support.secrets import PLANTED_SECRETS

    big_file = work / "big" / "rollout-big.jsonl"
    started = time.perf_counter()
    size = _write_big(big_file, big_mb, next(iter(PLANTED_SECRETS.values())))
    print(f"  wrote the {size / MB:.0f} MB rollout in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    try:
        results: dict[str, Any] = {"bytes": size}
        for name, code in _CHILD_CODE.items():
            peaks, high_waters, walls, details = [], [], [], {}
            for _ in range(repeats if name != "imports only" else 1):
                peak, high_water, wall, details = child_peak(code, big_file)
                peaks.append(peak)
                high_waters.append(high_water)
                walls.append(wall)
            results[name] = {"peak_mb": peaks, "vm_hwm_mb": high_waters, "seconds": walls, "details": details}
            print(f"  peak RSS, {name}: {median(peaks):.0f} MB", file=sys.stderr, flush=True)
        return results
    finally:
        shutil.rmtree(big_file.parent, ignore_errors=True)


def _write_big(path: Path, big_mb: int, secret: str) -> int:
    from tests.support.rollout_factory import write_large_rollout

    return write_large_rollout(path, big_mb * MB, seed=500, secret=secret)


# ---- report ------------------------------------------------------------------------------------


def summarize(home: dict[str, Any], throughput: dict[str, Any], rss: dict[str, Any] | None) -> str:
    megabytes = throughput["bytes"] / MB
    discover = throughput["discover_seconds"]
    transcript = throughput["transcript_seconds"]
    combined = [a + b for a, b in zip(discover, transcript, strict=True)]
    plain = throughput["plain_seconds"]

    def rate(values: list[float]) -> list[float]:
        return [megabytes / value for value in values]

    ratio = [median(rate(combined)) / median(rate(plain))]
    per_run_ratio = [p / c for p, c in zip(plain, combined, strict=True)]
    product_cpu, plain_cpu = throughput["product_cpu_seconds"], throughput["plain_cpu_seconds"]
    cpu_ratio = median(plain_cpu) / median(product_cpu)
    per_run_cpu_ratio = [p / c for p, c in zip(plain_cpu, product_cpu, strict=True)]
    rows = [
        ["`discover_rollouts` (fresh SQLite store)", spread(discover, unit=" s"), spread(rate(discover), 1)],
        ["`build_memory_transcript` for every file", spread(transcript, unit=" s"), spread(rate(transcript), 1)],
        ["**product: discover + transcripts**", spread(combined, unit=" s"), spread(rate(combined), 1)],
        ["**baseline: `json.loads` per line**", spread(plain, unit=" s"), spread(rate(plain), 1)],
        ["product, CPU time of this process", spread(product_cpu, unit=" s"), spread(rate(product_cpu), 1)],
        ["baseline, CPU time of this process", spread(plain_cpu, unit=" s"), spread(rate(plain_cpu), 1)],
    ]
    lines = [
        f"(a) {throughput['files']} rollouts, {megabytes:.1f} MB ({home['small']} small sessions, {home['medium']} "
        f"of ~2 MB, {home['large']} of ~20 MB), token budget {TOKEN_BUDGET:,}, {len(plain)} repetitions.",
        "",
        markdown_table(["pass", "seconds, median (range)", "MB/s, median (range)"], rows),
        "",
        f"Throughput ratio product / baseline: **{ratio[0]:.2f}** (per repetition: "
        f"{', '.join(f'{value:.2f}' for value in per_run_ratio)}); the baseline is "
        f"{1 / ratio[0]:.1f}× faster. By CPU time: **{cpu_ratio:.2f}** (per repetition: "
        f"{', '.join(f'{value:.2f}' for value in per_run_cpu_ratio)}). Goal ≥ 0.5: "
        f"{'met' if min(ratio[0], cpu_ratio) >= 0.5 else 'missed'}.",
    ]
    floor_cpu = throughput["floor_cpu_seconds"]
    floor_total = [sum(parts) for parts in zip(floor_cpu["parse"], floor_cpu["redact"], floor_cpu["count"], strict=True)]
    floor_ratio = median(plain_cpu) / median(floor_total)
    per_run_floor_ratio = [p / f for p, f in zip(plain_cpu, floor_total, strict=True)]
    floor_rows = [
        ["`orjson.loads` of every line", spread(floor_cpu["parse"], unit=" s")],
        [f"`redact_secrets` of the text sent ({throughput['sent_chars'] / 1e6:.1f} M characters)", spread(floor_cpu["redact"], unit=" s")],
        [f"`count_tokens` of the texts counted ({throughput['counted_chars'] / 1e6:.1f} M characters)", spread(floor_cpu["count"], unit=" s")],
        ["**floor: the three together**", spread(floor_total, unit=" s")],
        ["baseline (as above)", spread(plain_cpu, unit=" s")],
    ]
    lines += [
        "",
        "Floor: the work ingest cannot skip, each part once with the fastest code here (CPU time, same "
        "repetitions; see the docstring).",
        "",
        markdown_table(["part", "CPU seconds, median (range)"], floor_rows),
        "",
        f"Ratio baseline / floor: **{floor_ratio:.2f}** (per repetition: "
        f"{', '.join(f'{value:.2f}' for value in per_run_floor_ratio)}). Even a product that did "
        f"nothing but these three parts would {'reach' if floor_ratio >= 0.5 else 'miss'} the goal of 0.5.",
    ]
    if rss is not None:
        floor = median(rss["imports only"]["peak_mb"])
        rss_rows = []
        for name in ("imports only", "plain json.loads per line", "build_memory_transcript"):
            entry = rss[name]
            rss_rows.append([name, spread(entry["peak_mb"], 0, " MB"), spread(entry["vm_hwm_mb"], 0, " MB"),
                             f"{median(entry['peak_mb']) - floor:.0f} MB", spread(entry["seconds"], 1, " s")])
        transcript_entry = rss["build_memory_transcript"]
        peak = median(transcript_entry["peak_mb"])
        details = transcript_entry["details"]
        lines += [
            "",
            f"(b) One {rss['bytes'] / MB:.0f} MB rollout (`write_large_rollout`, a fake key planted near the end), "
            f"peak RSS of a fresh child process, read by `/usr/bin/time` and cross-checked with the child's own "
            "VmHWM (not `RUSAGE_CHILDREN`: Linux carries the parent's high-water mark into a forked child).",
            "",
            markdown_table(
                ["child process", "peak RSS (`/usr/bin/time -f %M`)", "VmHWM reported by the child", "above the import floor", "wall time"],
                rss_rows,
            ),
            "",
            f"Transcript kept {details.get('items')} items, {details.get('tokens'):,} tokens, "
            f"{details.get('truncated_tokens'):,} tokens truncated, {details.get('redacted')} redaction marker(s). "
            f"Goal peak RSS < 300 MB: {'met' if peak < 300 else f'missed by {peak - 300:.0f} MB'} "
            f"({peak:.0f} MB).",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-mb", type=int, default=200, help="size of the generated CODEX_HOME (MB)")
    parser.add_argument("--big-mb", type=int, default=500, help="size of the single rollout for peak RSS (MB); 0 skips (b)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of each measurement")
    parser.add_argument("--save-report", action="store_true", help="also write the report to benchmarks/.work/reports/")
    args = parser.parse_args()

    work = scratch_dir("ingest-")
    try:
        started = time.perf_counter()
        home = generate_codex_home(work / "codex_home", args.total_mb)
        print(f"generated {home['bytes'] / MB:.0f} MB in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        throughput = measure_throughput(work / "codex_home", work, args.repeats)
        shutil.rmtree(work / "codex_home", ignore_errors=True)
        rss = measure_peak_rss(work, args.big_mb, args.repeats) if args.big_mb > 0 else None
    finally:
        shutil.rmtree(work, ignore_errors=True)

    body = summarize(home, throughput, rss)
    print(body)
    if args.save_report:
        command = (
            f".venv/bin/python -m benchmarks.ingest --total-mb {args.total_mb} --big-mb {args.big_mb} "
            f"--repeats {args.repeats} --save-report"
        )
        header = (
            "## Ingest (`ingest.py`)\n\n"
            "(a) Throughput of discovery + transcript building (parse, sanitize, redact, token budget) over a "
            "generated Codex home, against a plain `json.loads`-per-line parse of the same files in the same run. "
            "(b) Peak RSS of `build_memory_transcript` on one huge rollout. See the script's docstring for the "
            "method.\n\n"
            f"Command: `{command}`\n\n"
            f"Machine: {machine_description()}\n\n"
        )
        save_report(SECTION, header + body)


if __name__ == "__main__":
    main()
