"""Task: backfill step 4, discover a source's rollouts (`codex_memories.ingest.discovery.discover_folder`).

Output: the `DiscoveryReport` with the source's thread ids. Side effect: `threads` upserts
(archived sources recorded as archived; threads already known at their Codex-home path kept).
"""

import time

from prefect import get_run_logger, task

from codex_memories.ingest.backfill import BackfillSource
from codex_memories.ingest.discovery import DiscoveryReport, discover_folder
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="discover-backfill-source", cache_policy=None)
def discover_backfill_source(config: RuntimeConfig, source: BackfillSource) -> DiscoveryReport:
    report = discover_folder(
        open_store(config.settings.resolved_db_url),
        source.local_dir,
        archived=source.archived,
        generate_memories=config.memories.generate_memories,
        disable_on_external_context=config.memories.disable_on_external_context,
        now_ms=int(time.time() * 1000),
    )
    logger = get_run_logger()
    logger.info(
        "backfill discovery in %s: %d files (%d read, %d unchanged), %d threads",
        source.local_dir, report.files_seen, report.files_read, report.files_unchanged, len(report.thread_ids),
    )
    for path, reason in report.unreadable:
        logger.warning("unreadable rollout %s: %s", path, reason)
    return report
