"""Task: phase 1 step 7, one claimed rollout becomes a stage-1 result (`codex_memories.extract.extraction`).

Input: one claim and the configuration. Output: an `ExtractionResult` (not yet written), persisted
under a key per claim, so a retried flow run reuses an extraction that already came back.
Retries: transient model errors only (connection, timeout, 429, 5xx), with backoff; everything
else is a named outcome in the result. No DB writes (finalize does them).
"""

from typing import Any

from prefect import Task, task
from prefect.client.schemas.objects import State, TaskRun
from prefect.context import TaskRunContext

from codex_memories import progress
from codex_memories.extract.extraction import ExtractionResult, extract_memory
from codex_memories.llm.base import TransientModelError
from codex_memories.runtime import extraction_provider
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import Stage1Claim


def _retry_only_transient(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry connection errors, timeouts, 429 and 5xx; anything else is a named outcome."""
    try:
        state.result()
    except TransientModelError:
        return True
    except Exception:  # noqa: BLE001 - any other error is final, the flow records it
        return False
    return False


def _extraction_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    claim: Stage1Claim = parameters["claim"]
    config: RuntimeConfig = parameters["config"]
    return (
        f"extract-{claim.thread_id}-{claim.source_updated_at}-{claim.ownership_token}"
        f"-{config.provider_name}-{config.extract_model}"
    )


# Persisted: retrying a flow run from the UI reruns only the extractions that did not finish,
# never a model call whose answer is already stored.
@task(
    name="extract-memory",
    task_run_name="extract-{claim.thread_id}",
    cache_key_fn=_extraction_key,
    persist_result=True,
    retry_condition_fn=_retry_only_transient,
)
def extract_rollout(claim: Stage1Claim, config: RuntimeConfig) -> ExtractionResult:
    result = extract_memory(
        claim,
        extraction_provider(config),
        model=config.extract_model,
        token_budget=config.settings.rollout_token_budget,
    )
    progress.advance("extract")
    return result
