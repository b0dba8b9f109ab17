"""A full disk is one clear line and a non-zero exit, never a traceback, and the live memory
folder stays as it was (issue 29). The disk is made full for the memory folder's parent by a
`sitecustomize` in the CLI's subprocess (`tests/support/full_disk`), as no test may mount one."""

from __future__ import annotations

import errno
import logging
import re
from pathlib import Path

import pytest
import sqlalchemy.exc

from codex_memories.disk_full import DISK_FULL_ERRNOS, disk_full_cause
from codex_memories.memory_folder.workspace import GitCommandError
from tests.support.memory_home import MemoryHome

FULL_DISK_SITE = Path(__file__).resolve().parents[1] / "support" / "full_disk"


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.timeout(600)
def test_a_full_disk_under_phase_2_is_one_line_a_failed_exit_and_an_untouched_memory_folder(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    home.rollout("From now on run make lint before committing.")
    first = home.cli("run", "--provider", "heuristic", "--local", "--ignore-age-windows")
    assert first.returncode == 0, first.stderr[-2000:]
    before = folder_bytes(home.memory_root)
    assert "MEMORY.md" in before
    home.rollout("Use httpx, not requests, in this project.")

    full = home.cli(
        "run", "--provider", "heuristic", "--local", "--ignore-age-windows", "--force",  # past the cooldown
        environment={"PYTHONPATH": str(FULL_DISK_SITE), "CODEX_MEMORIES_TEST_FULL_DISK": str(tmp_path)},
    )

    assert full.returncode != 0
    [line] = [line for line in full.stdout.splitlines() if line.startswith("phase 2:")]
    # The first write of the run's copy fails (which stage that is depends on what is to copy).
    assert re.fullmatch(
        r"phase 2: failed_\w+ \(the disk is full \(No space left on device\); the live memory folder is untouched .*"
        r"Free some space and run it again\)",
        line,
    ), line
    assert "Traceback" not in full.stderr and "Traceback" not in full.stdout
    assert folder_bytes(home.memory_root) == before
    assert sorted(path.name for path in tmp_path.iterdir() if "staging" in path.name) == []


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        sqlalchemy.exc.OperationalError("INSERT", {}, Exception("database or disk is full")),
        GitCommandError(["commit-tree"], 128, "error: unable to write file: No space left on device"),
    ],
)
def test_a_full_disk_is_recognised_whichever_layer_reports_it(error: Exception) -> None:
    try:
        try:
            raise error
        except Exception as inner:
            raise RuntimeError("the task failed") from inner  # as Prefect or a step wraps it
    except RuntimeError as wrapped:
        assert disk_full_cause(wrapped) in ("No space left on device", "Disk quota exceeded", "database or disk is full")


def test_other_errors_are_not_a_full_disk_and_a_cycle_ends() -> None:
    assert disk_full_cause(OSError(errno.EACCES, "Permission denied")) is None
    assert disk_full_cause(ValueError("bad")) is None
    looped = RuntimeError("a")
    looped.__cause__ = RuntimeError("b")
    looped.__cause__.__cause__ = looped
    assert disk_full_cause(looped) is None
    assert errno.ENOSPC in DISK_FULL_ERRNOS


def test_the_flows_log_a_full_disk_without_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    import codex_memories_flows  # noqa: F401 - installs the filter

    logger = logging.getLogger("prefect.task_runs")
    with caplog.at_level(logging.ERROR, logger="prefect.task_runs"):
        for error in (OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EACCES, "Permission denied")):
            try:
                raise error
            except OSError:
                logger.exception("Task run failed with exception: %r", error)
    full, other = caplog.records
    assert full.exc_info is None and "No space left" in full.getMessage()
    assert other.exc_info is not None  # every other failure keeps its traceback
