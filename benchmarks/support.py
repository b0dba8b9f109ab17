"""Shared plumbing for the benchmarks: environment, statistics, tables, the saved report.

They run as `python -m benchmarks.<name>` from the repo root, which puts the root on `sys.path`:
so `benchmarks.*` and the test helpers (`tests.support.*`) import without editing it.

Every benchmark measures a ratio against a baseline taken in the same run, repeats it, and
reports the median with the range (the machine is shared and noisy). Nothing here asserts a
time. `prepare_prefect_environment` must run before anything imports Prefect.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_DIR = REPO_ROOT / "benchmarks"
WORK_DIR = BENCHMARKS_DIR / ".work"  # git-ignored scratch space
REPORTS_DIR = WORK_DIR / "reports"


def prepare_prefect_environment(prefect_home: Path) -> None:
    """Point Prefect at a throw-away home, quietly, before it is imported."""
    os.environ["PREFECT_HOME"] = str(prefect_home)
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
    # The temporary server's default start-up timeout is too short on a loaded 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def scratch_dir(prefix: str) -> Path:
    """A fresh directory under benchmarks/.work (kept on the same disk as the repo)."""
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=WORK_DIR))


# ---- statistics ----------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], digits: int = 2, unit: str = "") -> str:
    """`median (min–max)`, or the single value when there is one."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}{unit}"
    return f"{median(values):.{digits}f}{unit} ({min(values):.{digits}f}–{max(values):.{digits}f})"


# ---- output --------------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_description() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        f"{os.cpu_count()} cores (nproc), {cpu}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"HEAD {commit or 'unknown'} (plus uncommitted work of other engineers in the tree), "
        f"load average at the end {os.getloadavg()[0]:.1f} (shared machine: other test runs were active)"
    )


def save_report(name: str, body: str) -> Path:
    """Write a run's full report to `benchmarks/.work/reports/<name>.md` (git-ignored) and say where.

    The README holds only the current figure of each benchmark, copied by hand from a report
    worth keeping; git keeps the README's history, so no run appends to it."""
    path = REPORTS_DIR / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body.rstrip() + "\n", encoding="utf-8")
    print(f"report written to {path}")
    return path
