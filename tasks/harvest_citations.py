"""Task: harvest memory citations from new rollout lines (`codex_memories.read.harvest`).

Input: the rollout files discovery read, and its scans of them (so no file is read twice in a
run). Output: a `HarvestReport`. Side effect: usage counts and
per-file offsets in one transaction each, so a citation is counted once (idempotent with the
Stop hook, which harvests the same way).
"""

from prefect import get_run_logger, task

from codex_memories.ingest.rollout_scan import RolloutScan
from codex_memories.read.harvest import HarvestReport
from codex_memories.read.harvest import harvest_citations as harvest
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="harvest-citations", cache_policy=None)
def harvest_citations(
    config: RuntimeConfig, rollout_paths: list[str], scans: dict[str, RolloutScan] | None = None
) -> HarvestReport:
    """Memory citations in new rollout lines become usage counts (phase-2 ranking)."""
    report = harvest(open_store(config.settings.resolved_db_url), rollout_paths, scans=scans)
    logger = get_run_logger()
    logger.info(
        "citations: %d block(s) in %d rollout(s), %d use(s) recorded",
        report.citation_blocks, report.rollouts_scanned, report.usage_recorded,
    )
    for path, problem in report.problems:
        logger.warning("malformed citation in %s: %s", path, problem)
    for path, reason in report.unreadable:
        logger.warning("could not harvest %s: %s", path, reason)
    return report
