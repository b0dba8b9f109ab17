"""Phase 2: bring the recall index of a local memory root up to date (ARCHITECTURE.md data flow).

Input: the workspace of a consolidation, before publishing (the copy) and after (the live
folder). Output: one line for the run report. An index that matches the files is kept as it is
(`open_index` rebuilds only a missing, stale or damaged one), so the call after publishing costs
one check when the copy's index went live with it. The
index is derived data (readers rebuild it lazily when the files changed), so a failure here is
reported and logged, never a failed consolidation. Object-store roots are skipped: their
readers (hooks, `recall`, MCP) need a local folder, and the mirror is thrown away after the run.
Idempotent: an unchanged folder re-embeds nothing.
"""

import sqlite3

from prefect import get_run_logger, task

from codex_memories.read.index import open_index
from codex_memories.runtime import Phase2Context


@task(name="refresh-recall-index", cache_policy=None)
def refresh_recall_index(context: Phase2Context) -> str:
    workspace = context.workspace
    if workspace.is_mirror:
        return "skipped: object-store root"
    try:
        index = open_index(workspace.path)
    except (OSError, ValueError, RuntimeError, sqlite3.Error) as error:
        get_run_logger().warning("recall index not rebuilt (readers rebuild it lazily): %s: %s", type(error).__name__, error)
        return f"not rebuilt: {type(error).__name__}: {error}"
    if index is None:
        return "skipped: no memory folder"
    index.close()
    return f"{index.chunk_count} chunks"
