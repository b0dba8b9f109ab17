"""Task: phase 2, record a failed pass on the global job (`consolidate.steps.mark_failed`).

Input: the failure (its outcome code and reason, redacted before they are stored) and the token
usage so far. Side effects: `jobs.last_error` (ending with the settings the pass ran with, so a run
with other settings is not held back by its backoff), the retry backoff and the usage on the
global row.
"""

from prefect import task

from codex_memories.consolidate.steps import Phase2Failure
from codex_memories.consolidate.steps import mark_failed as mark
from codex_memories.runtime import Phase2Context
from codex_memories.state.phase2 import tag_failure_with_settings
from codex_memories_tasks.claim_lock import settings_fingerprint


@task(name="mark-failed", cache_policy=None)
def mark_failed(context: Phase2Context, failure: Phase2Failure, usage: dict[str, int] | None) -> bool:
    tagged = Phase2Failure(
        failure.outcome,
        tag_failure_with_settings(failure.reason, settings_fingerprint(context.config)),
        retry_delay_seconds=failure.retry_delay_seconds,
    )
    return mark(
        context.store,
        lease=context.lease,
        failure=tagged,
        default_retry_delay_seconds=context.config.settings.phase2_retry_delay_seconds,
        usage=usage,
    )
