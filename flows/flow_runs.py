"""What a flow run knows about itself, for every flow: its settings, whether it is a retry, and
the final state that says whether it did its job.

Orchestration only (flows layer):

- `run_overrides`: a deployment's run gets its parameters from Prefect, which replaces a default
  parameter object as a whole (`-p overrides='{"review": "ask"}'` would drop the deployment's
  `db_url` and `memory_root`); here the fields the run gave replace those fields only, on top of
  the deployment's default `overrides`. A run without a deployment uses what it was given.
- `retried_flow_run`: the flow run's id when it runs again after an earlier attempt (the UI's
  Retry, or `set_state` to AwaitingRetry), else None. The claims take back what the earlier
  attempt left (`MemoryStore.resume_stage1_claims`, `try_claim_global_phase2_job`).
- `tag_this_run`: the tags a Prefect user filters runs by: the product and the phase (also on
  the deployment, which its runs inherit: prefect.yaml's `tags`), and the provider (added by each
  run once its settings are resolved, since a run's overrides may change it).
- `final_state` / `report_of`: the library's `RunVerdict` as the Prefect state the flow returns,
  carrying the run's report, and the report back from that state (`docs/prefect.md`). A state
  that is not Completed carries it inside a `RunNotDone`: Prefect raises that state's data when
  a deployment's run ends, and only an exception can be raised with a one-line message.
"""

from __future__ import annotations

from typing import Any

from prefect import get_client
from prefect.context import FlowRunContext
from prefect.states import Cancelled, Completed, Failed, State

from codex_memories.reports.verdicts import RunNotDone, RunVerdict
from codex_memories.settings import SettingsOverrides

OVERRIDES_PARAMETER = "overrides"


def run_overrides(overrides: SettingsOverrides | None) -> SettingsOverrides:
    """The overrides this run uses: its deployment's default `overrides`, with each field the run
    gave replacing that field only."""
    given = overrides or SettingsOverrides()
    context = FlowRunContext.get()
    deployment_id = context.flow_run.deployment_id if context is not None and context.flow_run is not None else None
    if deployment_id is None:
        return given
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment(deployment_id)
    defaults = (deployment.parameters or {}).get(OVERRIDES_PARAMETER) or {}
    if not isinstance(defaults, dict):
        return given
    return SettingsOverrides.model_validate({**defaults, **given.model_dump(mode="json", exclude_unset=True)})


def retried_flow_run() -> str | None:
    """This flow run's id when an earlier attempt of it ran (Prefect counts the attempts), else
    None."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow_run.run_count <= 1:
        return None
    return str(context.flow_run.id)


PRODUCT_TAG = "codex-memories"


def tag_this_run(phase: str, *, provider: str | None = None) -> None:
    """Add the product, the phase and the provider to this flow run's tags (kept: those it has,
    a deployment's included). Nothing outside a flow run."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    wanted = [PRODUCT_TAG, phase, *([f"provider:{provider}"] if provider else [])]
    tags = list(dict.fromkeys([*(context.flow_run.tags or []), *wanted]))
    if tags == list(context.flow_run.tags or []):
        return
    with get_client(sync_client=True) as client:
        client.update_flow_run(context.flow_run.id, tags=tags)
    context.flow_run.tags = tags


_STATES = {"completed": Completed, "failed": Failed, "cancelled": Cancelled}


def final_state(verdict: RunVerdict, report: Any) -> State[Any]:
    """The state a flow returns: the verdict's type, name and message, with the report as data
    (inside a `RunNotDone` when the run did not do its job)."""
    data = report if verdict.state == "completed" else RunNotDone(verdict, report)
    return _STATES[verdict.state](name=verdict.name, message=verdict.message, data=data)


def report_of(state: State[Any]) -> Any:
    """The report a flow run's final state carries (failed and cancelled runs included); an
    error the flow raised is raised here."""
    result = state.result(raise_on_failure=False)
    if isinstance(result, RunNotDone):
        return result.report
    if isinstance(result, BaseException):
        raise result
    return result
