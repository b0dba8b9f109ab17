"""Task: phase 1 step 7, one claimed rollout becomes a stage-1 result (`codex_memories.extract.extraction`).

Input: one claim, the configuration, its transcript when the flow built it ahead, and an earlier
run's unfinalized answer for the thread if there is one. Output: an `ExtractionResult` (not yet
finalized), persisted under a key per claim, so a retried flow run reuses an extraction that
already came back. Retries: transient model errors only (connection, timeout, 429, 5xx), with
backoff; everything else is a named outcome in the result. One DB write: a model answer is
stored (`stage1_arrived_results`) the moment it arrives, so a run killed before finalize, or a
claim taken over after its lease expired, reuses it instead of paying for it again.
"""

from typing import Any

from prefect import Task, get_run_logger, task
from prefect.client.schemas.objects import State, TaskRun
from prefect.context import TaskRunContext

from codex_memories import progress
from codex_memories.extract.extraction import ExtractionResult, arrived_result_json, extract_memory
from codex_memories.ingest.transcript import MemoryTranscript
from codex_memories.llm.base import TransientModelError
from codex_memories.reports.phase1 import describe_extraction
from codex_memories.runtime import extraction_provider, open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import Stage1ArrivedResult, Stage1Claim


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
def extract_rollout(
    claim: Stage1Claim,
    config: RuntimeConfig,
    transcript: MemoryTranscript | None = None,
    arrived: Stage1ArrivedResult | None = None,
) -> ExtractionResult:
    store = open_store(config.settings.resolved_db_url)

    def keep_arrived(result: ExtractionResult) -> None:
        store.record_arrived_stage1_result(
            thread_id=result.thread_id,
            source_updated_at=result.source_updated_at,
            provider=result.provider or "",
            model=result.model or "",
            prompt_sha256=result.prompt_sha256 or "",
            result_json=arrived_result_json(result),
        )

    result = extract_memory(
        claim,
        extraction_provider(config),
        model=config.extract_model,
        token_budget=config.settings.rollout_token_budget,
        transcript=transcript,
        arrived=arrived,
        on_arrival=keep_arrived,
    )
    progress.advance("extract")
    # The task run's own line (its state alone says only "Completed"): what came of the rollout.
    get_run_logger().info("%s", describe_extraction(result, token_budget=config.settings.rollout_token_budget))
    return result


@task(name="find-arrived-extractions", cache_policy=None)
def find_arrived_extractions(config: RuntimeConfig, claims: list[Stage1Claim]) -> dict[str, Stage1ArrivedResult]:
    """Answers earlier runs received for these threads but never finalized (killed, or their
    lease expired), by thread id; the extraction reuses one that answered the same request."""
    return open_store(config.settings.resolved_db_url).get_arrived_stage1_results([claim.thread_id for claim in claims])
