"""Prefect's run loggers print a traceback with every failed task and flow run. For a full disk
it says nothing the one-line reason does not (`codex_memories.disk_full`): such records keep
their line and lose the traceback, on the console and in the Prefect API alike. Every other
failure keeps its traceback. Installed once, when the flows package is imported.
"""

from __future__ import annotations

import logging

from codex_memories.disk_full import disk_full_cause

# The loggers Prefect's task and flow engines write their failures to.
RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class DiskFullWithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and disk_full_cause(error) is not None:
            record.exc_info = None
            record.exc_text = None
        return True


def install_disk_full_filter() -> None:
    """Idempotent. Survives Prefect's own logging set-up, which leaves a logger's filters alone."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, DiskFullWithoutTraceback) for existing in logger.filters):
            logger.addFilter(DiskFullWithoutTraceback())
