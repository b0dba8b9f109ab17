"""The deployments of `prefect.yaml`, served from one process: `codex-memories serve`.

For one machine: Prefect's own `serve` registers the four flows with the schedules and limits
`prefect.yaml` gives them (a test keeps the two in step) and runs each flow run in a subprocess
of the serving process; no work pool, no worker, and no temporary API server per run. With a
work pool and workers (a team, several machines), use `prefect deploy --all` instead.

The same process also runs the phase-1 and phase-2 runs the CLI hands it
(`codex_memories_cli.handoff`), in a thread of its own, where Prefect, the flow modules, openai
and great-expectations are already imported (`warm_up_hand_off_runs`): `run_handed_off`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect import serve
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from codex_memories.reports.phase1 import Phase1Report
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.backfill import backfill
from codex_memories_flows.flow_runs import deployment_tags, report_of
from codex_memories_flows.forget import forget
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2


@dataclass(frozen=True)
class ServedDeployment:
    flow: Any
    name: str
    cron: str | None = None
    concurrency_limit: int | None = None

    @property
    def tags(self) -> list[str]:
        """What its runs are filtered by in the UI (they inherit a deployment's tags): the
        product, the phase, the deployment. The provider is added by each run (`tag_this_run`)."""
        return deployment_tags(self.name)


# Names, schedules, limits and tags as in prefect.yaml (tests/deploy/test_serve.py compares them).
SERVED = (
    ServedDeployment(phase1, "memories-phase1", cron="0 * * * *"),
    # One phase 2 at a time; a run that finds the slot taken is Cancelled, as in prefect.yaml.
    ServedDeployment(phase2, "memories-phase2", cron="30 */6 * * *", concurrency_limit=1),
    ServedDeployment(backfill, "memories-backfill"),
    ServedDeployment(forget, "memories-forget"),
)


def served_deployments(overrides: SettingsOverrides) -> list[RunnerDeployment]:
    """The runner deployments, each with these overrides as its default `overrides` parameter."""
    given = overrides.model_dump(exclude_none=True)
    parameters = {"overrides": given} if given else {}
    return [
        served.flow.to_deployment(
            name=served.name,
            schedule=Cron(served.cron, timezone="UTC") if served.cron else None,
            concurrency_limit=(
                ConcurrencyLimitConfig(limit=served.concurrency_limit, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)
                if served.concurrency_limit
                else None
            ),
            parameters=parameters,
            tags=served.tags,
            # By module, not by file: the flows are found wherever the package is installed.
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
        for served in SERVED
    ]


def serve_deployments(overrides: SettingsOverrides) -> None:
    """Serve until interrupted (Ctrl-C); scheduled runs pause while nothing serves them."""
    serve(*served_deployments(overrides), print_starting_message=True)


def run_handed_off(
    flow_name: str,
    overrides: SettingsOverrides,
    *,
    force: bool,
    api_url: str,
    on_flow_run: Callable[[str, str], None],
) -> Phase1Report | Phase2Report:
    """One run the CLI handed over, in the calling thread, reporting to `api_url`: the flow
    called exactly as the CLI calls it; `on_flow_run(id, name)` once the flow run exists."""

    def tell(_flow: Any, flow_run: Any, _state: Any) -> None:
        on_flow_run(str(flow_run.id), flow_run.name)

    # A thread starts without the serving thread's Prefect settings context; without one,
    # Prefect would also rebuild its settings from the environment on every lookup. No flow-run
    # heartbeats: Prefect's heartbeat thread sleeps in 1 s steps and the run waits for it at its
    # end (measured: 0.95 s of a 1.2 s empty phase-1 run); no Prefect service reads them (only an
    # automation a user writes would), and the CLI learns of serve's end over the socket.
    with temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        if flow_name == "phase1":
            told = phase1.with_options(on_running=[*phase1.on_running_hooks, tell])
            return report_of(told(overrides=overrides, return_state=True))
        if flow_name == "phase2":
            told = phase2.with_options(on_running=[*phase2.on_running_hooks, tell])
            return report_of(told(overrides=overrides, force=force, return_state=True))
    raise ValueError(f"no hand-off for the flow {flow_name!r}")


def warm_up_hand_off_runs() -> None:
    """Import (and start) now what the first hand-off run would otherwise pay for: the openai
    client, great-expectations for the quality check (here, and in the transcript worker
    process when this machine has a core to spare for one)."""
    import openai  # noqa: F401 - the import is the point

    from codex_memories.extract.prefetch import prepare_quality_check, transcript_pool
    from codex_memories.extract.quality import import_validation_modules
    from codex_memories.llm import openai_provider  # noqa: F401 - likewise

    transcript_pool()
    prepare_quality_check()
    import_validation_modules()
