"""Task retries for object-store hiccups, shared by every task that reads or writes S3.

A connection refused, a timeout or a 5xx is retried with backoff; a missing object, a refused
permission or an unsafe path is final at once (`codex_memories.storage.is_transient_storage_error`).
"""

from typing import Any

from prefect import Task
from prefect.client.schemas.objects import State, TaskRun

from codex_memories.storage import is_transient_storage_error

STORAGE_RETRIES = 3
STORAGE_RETRY_DELAYS_SECONDS = [1.0, 3.0, 9.0]


def retry_transient_storage_errors(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    try:
        state.result()
    except Exception as error:  # noqa: BLE001 - classified, never swallowed: a final error fails the task
        return is_transient_storage_error(error)
    return False
