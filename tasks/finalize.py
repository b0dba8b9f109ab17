"""Task: phase 1 step 9, write each extraction's outcome (`codex_memories.extract.extraction.finalize_extraction`).

Inputs: the batch's results and the quality verdict. Output: one `ExtractionLine` per claim.
Side effects: `stage1_outputs` and `jobs` rows (ownership-checked), phase 2 enqueued. Persisted
per batch, so a retried flow run does not finalize twice.
"""

import hashlib
from typing import Any

from prefect import get_run_logger, task
from prefect.context import TaskRunContext

from codex_memories.extract.extraction import ExtractionResult, finalize_extraction
from codex_memories.reports import ExtractionLine
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


def _finalize_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    tokens = ",".join(sorted(result.ownership_token for result in parameters["results"]))
    return "finalize-" + hashlib.sha256(tokens.encode()).hexdigest()


# Persisted by claim tokens: a retried flow run reports the outcomes it already wrote instead
# of finding its own jobs finished and calling that a lost lease.
@task(name="finalize-extractions", cache_key_fn=_finalize_key, persist_result=True)
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
