"""Tasks: phase 2 step 2, finish early when nothing changed (`consolidate.steps.check_settled`),
and, after a success, keep what the run settled on for the next one (`record_settled`).

`check_settled` output: a `SettledCheck`; read-only. Any error there only means the full run
(logged): the early finish is an optimisation, never a precondition. `record_settled` writes
`.codex-memories/phase2-settled.json` in a local memory root; a failure is logged, never a failed
consolidation (the next run then does the full work).
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.steps import SettledCheck
from codex_memories.consolidate.steps import check_settled as check
from codex_memories.consolidate.steps import record_settled as record
from codex_memories.redact import redact_secrets
from codex_memories.runtime import Phase2Context


@task(name="check-settled", cache_policy=None)
def check_settled(context: Phase2Context) -> SettledCheck:
    memories = context.config.memories
    try:
        result = check(
            context.root.local_path,
            context.store,
            lease=context.lease,
            max_outputs=memories.max_raw_memories_for_consolidation,
            max_unused_days=memories.max_unused_days,
            now=int(context.now().timestamp()),
        )
    except Exception as error:  # noqa: BLE001 - an optimisation that fails falls back to the full run
        get_run_logger().warning("settled check failed, doing the full run: %s", redact_secrets(f"{type(error).__name__}: {error}"))
        return SettledCheck(fingerprint=None, next_ageing_at=None, reason="the check failed")
    if result.settled:
        get_run_logger().info("nothing changed since the last success: finishing before any workspace work")
    else:
        get_run_logger().info("full run: %s", result.reason)
    return result


@task(name="record-settled", cache_policy=None)
def record_settled(context: Phase2Context, settled: SettledCheck, storage_bytes: int) -> bool:
    root = context.root.local_path
    if root is None:
        return False
    try:
        return record(root, context.store, settled, storage_bytes=storage_bytes)
    except Exception as error:  # noqa: BLE001 - bookkeeping for the next run; this run has succeeded
        get_run_logger().warning("could not record the settled folder: %s", redact_secrets(f"{type(error).__name__}: {error}"))
        return False
