"""Task: phase 1 step 3, rollout files become `threads` rows (`codex_memories.ingest.discovery`).

Output: the `DiscoveryReport` (counts, damaged lines by reason, polluted and missing threads, the
files read). Side effect: `threads` upserts. Incremental: unchanged files are not read again.
"""

import time

from prefect import get_run_logger, task

from codex_memories.ingest.discovery import DiscoveryReport, discover_rollouts
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="discover-rollouts", cache_policy=None)
def discover(config: RuntimeConfig) -> DiscoveryReport:
    report = discover_rollouts(
        open_store(config.settings.resolved_db_url),
        config.settings.codex_home_path,
        generate_memories=config.memories.generate_memories,
        disable_on_external_context=config.memories.disable_on_external_context,
        now_ms=int(time.time() * 1000),
    )
    logger = get_run_logger()
    logger.info(
        "discovery: %d files (%d read, %d unchanged), %d damaged lines skipped, %d missing",
        report.files_seen, report.files_read, report.files_unchanged,
        report.lines_skipped, len(report.missing_thread_ids),
    )
    for path, reason in report.unreadable:
        logger.warning("unreadable rollout %s: %s", path, reason)
    return report
