"""Task: phase 1 step 8, the batch data-quality gate (`codex_memories.extract.quality`, great-expectations).

Input: the batch's results. Output: a `QualityVerdict` (failed checks per thread, the summary for
the artifact). No writes: failures become named outcomes at finalize.
"""

from dataclasses import dataclass, field
from typing import Any

from prefect import get_run_logger, task

from codex_memories.extract.extraction import ExtractionResult
from codex_memories.extract.prefetch import run_quality_check
from codex_memories.extract.quality import QualityRow
from codex_memories.outcomes import Outcome


@dataclass
class QualityVerdict:
    failed_expectations: dict[str, list[str]] = field(default_factory=dict)
    summary: list[dict[str, Any]] = field(default_factory=list)


@task(name="check-extraction-quality", cache_policy=None)
def check_extraction_quality(results: list[ExtractionResult]) -> QualityVerdict:
    """great-expectations over the batch of outputs about to be written (failures stay rows)."""
    rows = [
        QualityRow(
            thread_id=result.thread_id,
            raw_memory=result.raw_memory,
            rollout_summary=result.rollout_summary,
            rollout_slug=result.rollout_slug,
        )
        for result in results
        if result.outcome is Outcome.succeeded
    ]
    if not rows:
        return QualityVerdict()
    # In the transcript worker process when there is one: off the flow process's GIL.
    report = run_quality_check(rows)
    failed = {row.thread_id: row.failed_expectations for row in report.rows if not row.passed}
    if failed:
        get_run_logger().warning("%d extraction(s) failed the quality check", len(failed))
    return QualityVerdict(failed_expectations=failed, summary=report.summary())
