"""Task: phase 1 step 9, write each extraction's outcome (`codex_memories.extract.extraction.finalize_extraction`).

Inputs: the batch's results and the quality verdict. Output: one `ExtractionLine` per claim.
Side effects: `stage1_outputs` and `jobs` rows (ownership-checked), phase 2 enqueued. Never read
back from a cache: what changed since an earlier attempt (an extraction that failed then and
succeeded now) is finalized now, and what an earlier attempt of the run already wrote is
reported as written, not written twice (the finalizer is idempotent per claim token).
"""

from prefect import get_run_logger, task

from codex_memories.extract.extraction import ExtractionResult, finalize_extraction
from codex_memories.reports.phase1 import ExtractionLine
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="finalize-extractions", cache_policy=None)
def finalize_extractions(
    results: list[ExtractionResult],
    failed_expectations: dict[str, list[str]],
    config: RuntimeConfig,
) -> list[ExtractionLine]:
    store = open_store(config.settings.resolved_db_url)
    logger = get_run_logger()
    lines = []
    for result in results:
        outcome, reason = finalize_extraction(
            store,
            result,
            failed_expectations=failed_expectations.get(result.thread_id, []),
            retry_delay_seconds=config.settings.stage1_retry_delay_seconds,
        )
        logger.info("%s %s%s", result.thread_id, outcome.value, f": {reason}" if reason else "")
        lines.append(
            ExtractionLine(
                thread_id=result.thread_id,
                outcome=outcome,
                reason=reason,
                transcript_tokens=result.transcript_tokens,
                truncated_tokens=result.truncated_tokens,
                withheld_lines=result.withheld_lines,
            )
        )
    return lines
