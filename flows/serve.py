"""The deployments of `prefect.yaml`, served from one process: `codex-memories serve`.

For one machine: Prefect's own `serve` registers the four flows with the schedules and limits
`prefect.yaml` gives them (a test keeps the two in step) and runs each flow run in a subprocess
of the serving process; no work pool, no worker, and no temporary API server per run. With a
work pool and workers (a team, several machines), use `prefect deploy --all` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefect import serve
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron

from codex_memories.settings import SettingsOverrides
from codex_memories_flows.backfill import backfill
from codex_memories_flows.forget import forget
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2


@dataclass(frozen=True)
class ServedDeployment:
    flow: Any
    name: str
    cron: str | None = None
    concurrency_limit: int | None = None


# Names, schedules and limits as in prefect.yaml (tests/deploy/test_serve.py compares them).
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
            # By module, not by file: the flows are found wherever the package is installed.
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
        for served in SERVED
    ]


def serve_deployments(overrides: SettingsOverrides) -> None:
    """Serve until interrupted (Ctrl-C); scheduled runs pause while nothing serves them."""
    serve(*served_deployments(overrides), print_starting_message=True)
