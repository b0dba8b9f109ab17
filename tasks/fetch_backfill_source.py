"""Task: backfill step 3, copy an `s3://` source's rollouts into the backfill cache.

Output: a `FetchReport` (copied, unchanged). Side effect: files under the backfill cache, kept
(the threads point at them). Retried on transient object-store errors.
"""

from prefect import get_run_logger, task

from codex_memories.ingest.backfill import BackfillSource, FetchReport, fetch_object_store_source
from codex_memories.settings import RuntimeConfig
from codex_memories_tasks.storage_retries import (
    STORAGE_RETRIES,
    STORAGE_RETRY_DELAYS_SECONDS,
    retry_transient_storage_errors,
)


@task(
    name="fetch-backfill-source",
    cache_policy=None,
    retries=STORAGE_RETRIES,
    retry_delay_seconds=STORAGE_RETRY_DELAYS_SECONDS,
    retry_condition_fn=retry_transient_storage_errors,
)
def fetch_backfill_source(source: BackfillSource, config: RuntimeConfig) -> FetchReport:
    """Copy an s3:// source's rollouts into the backfill cache (kept: extraction reads them)."""
    report = fetch_object_store_source(source, s3_endpoint_url=config.settings.s3_endpoint_url)
    get_run_logger().info(
        "backfill source %s: %d rollout object(s), %d downloaded to %s, %d already cached",
        source.description, report.objects_seen, len(report.downloaded), source.local_dir, report.unchanged,
    )
    return report
