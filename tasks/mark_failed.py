"""Task: phase 2, record a failed pass on the global job (`consolidate.steps.mark_failed`).

Input: the failure (its outcome code and reason, redacted before they are stored) and the token
usage so far. Side effects: `jobs.last_error`, the retry backoff and the usage on the global row.
"""

from prefect import task

from codex_memories.consolidate.steps import Phase2Failure
from codex_memories.consolidate.steps import mark_failed as mark
from codex_memories.runtime import Phase2Context


@task(name="mark-failed", cache_policy=None)
def mark_failed(context: Phase2Context, failure: Phase2Failure, usage: dict[str, int] | None) -> bool:
    return mark(
        context.store,
        lease=context.lease,
        failure=failure,
        default_retry_delay_seconds=context.config.settings.phase2_retry_delay_seconds,
        usage=usage,
    )
