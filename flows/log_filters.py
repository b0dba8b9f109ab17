"""What Prefect's run loggers print, made to say what happened in one line where Prefect's own
line says nothing more. Installed once, when the flows package is imported; idempotent; survives
Prefect's own logging set-up, which leaves a logger's filters alone.

- A full disk (`codex_memories.disk_full`): the record keeps its line and loses the traceback,
  which says nothing the one-line reason does not.
- A run that did not do its job (`codex_memories.reports.verdicts.RunNotDone`, the data of its Failed,
  Partial or Rejected state): when a deployment's run ends, Prefect raises that data and logs
  "Engine execution exited with unexpected exception" with a traceback. The record becomes one
  line with the verdict (the counts) and where the report is, at ERROR for a failed run and
  WARNING for a cancelled (rejected) one.
- A task run that finished Completed: Prefect logs "Finished in state Completed()" for each,
  about half of a run's log. Those INFO records are dropped; every other task line stays (a
  failed or crashed task, and the line each task logs about what it did).

Every other record, every other failure's traceback included, is left as it is.
"""

from __future__ import annotations

import logging

from codex_memories.disk_full import disk_full_cause
from codex_memories.reports.verdicts import RunNotDone

# The loggers Prefect's task and flow engines write their failures to (and the engine's own, which
# logs an attempt's end when the flow-run logger did not).
RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs", "prefect.engine")
TASK_RUN_LOGGER = "prefect.task_runs"
COMPLETED_TASK_LINE = "Finished in state Completed("


class DiskFullWithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and disk_full_cause(error) is not None:
            record.exc_info = None
            record.exc_text = None
        return True


class RunVerdictInOneLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RunNotDone):
            level = logging.WARNING if error.verdict.state == "cancelled" else logging.ERROR
            record.msg = "Run ended %s: %s (its report is this flow run's artifact)"
            record.args = (error.verdict.name, error.verdict.message)
            record.levelno, record.levelname = level, logging.getLevelName(level)
            record.exc_info = None
            record.exc_text = None
        return True


class WithoutCompletedTaskRuns(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.levelno == logging.INFO and isinstance(record.msg, str) and record.msg.startswith(COMPLETED_TASK_LINE)
        )


def _install(logger_name: str, kind: type[logging.Filter]) -> None:
    logger = logging.getLogger(logger_name)
    if not any(isinstance(existing, kind) for existing in logger.filters):
        logger.addFilter(kind())


def install_run_log_filters() -> None:
    """Idempotent: each filter once on each logger it belongs to."""
    for name in RUN_LOGGERS:
        _install(name, DiskFullWithoutTraceback)
        _install(name, RunVerdictInOneLine)
    _install(TASK_RUN_LOGGER, WithoutCompletedTaskRuns)
