"""The deployments of `prefect.yaml`, served from one process: `codex-memories serve`.

For one machine: Prefect's own `serve` registers the four flows as `prefect.yaml` declares them
(read from it at start: schedules, parameters, tags, description, concurrency limit) and runs
each flow run in a subprocess of the serving process; no work pool, no worker, and no temporary
API server per run. With a work pool and workers (a team, several machines), use `prefect deploy
--all` instead.

The same process also runs the phase-1 and phase-2 runs the CLI hands it
(`codex_memories_cli.handoff`), in a thread of its own, where Prefect, the flow modules, openai
and great-expectations are already imported (`warm_up_hand_off_runs`): `run_handed_off`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from prefect import serve
from prefect.client.schemas.objects import ConcurrencyLimitConfig
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Schedule
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from codex_memories.reports.phase1 import Phase1Report
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.backfill import backfill
from codex_memories_flows.flow_runs import report_of
from codex_memories_flows.forget import forget
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2

# The repository's `prefect.yaml`, the one `prefect deploy --all` reads. In a checkout (and an
# editable install) `flows/prefect.yaml` is a link to it; a wheel ships the file itself in this
# package (pyproject.toml's package data), so an installed `serve` reads the same declarations.
PREFECT_YAML = Path(__file__).with_name("prefect.yaml")

# The flows serve runs, by deployment name; all else about a deployment is prefect.yaml's.
SERVED_FLOWS = {
    "memories-phase1": phase1,
    "memories-phase2": phase2,
    "memories-backfill": backfill,
    "memories-forget": forget,
}

# A deployment's keys that serve turns into its own deployment; those that only a work pool's
# deployment uses (serve runs its flows itself); any other key is refused, not silently dropped.
_READ_KEYS = {"name", "entrypoint", "description", "tags", "schedules", "parameters", "concurrency_limit"}
_WORK_POOL_KEYS = {"work_pool", "build", "pull", "push"}
_SCHEDULE_KEYS = {"cron", "interval", "rrule", "timezone", "anchor_date", "day_or", "active", "parameters", "slug"}


class PrefectYamlError(Exception):
    """prefect.yaml is missing, unreadable, or says what serve cannot follow (one line)."""


@dataclass(frozen=True)
class ServedDeployment:
    flow: Any
    name: str
    description: str | None
    tags: list[str]
    schedules: list[Schedule]
    parameters: dict[str, Any]
    concurrency_limit: int | ConcurrencyLimitConfig | None


def read_served_deployments(path: Path | None = None) -> list[ServedDeployment]:
    """The deployments of `SERVED_FLOWS` as `path` (default `PREFECT_YAML`) declares them;
    `PrefectYamlError` when the file is missing, a deployment is not in it (or it has one serve
    does not run), its entrypoint is another flow, or it uses a key serve does not read."""
    path = PREFECT_YAML if path is None else path
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PrefectYamlError(f"cannot read the deployments of `serve` from {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise PrefectYamlError(f"{path} is not valid YAML: {' '.join(str(error).split())}") from None
    declared = {item.get("name"): item for item in (document or {}).get("deployments") or [] if isinstance(item, dict)}
    missing = [name for name in SERVED_FLOWS if name not in declared]
    if missing:
        raise PrefectYamlError(f"{path} declares no deployment {', '.join(missing)} (serve runs {', '.join(SERVED_FLOWS)})")
    unknown = [str(name) for name in declared if name not in SERVED_FLOWS]
    if unknown:
        raise PrefectYamlError(f"{path} declares {', '.join(unknown)}, which `serve` has no flow for (it runs {', '.join(SERVED_FLOWS)})")
    return [_served(name, declared[name], path) for name in SERVED_FLOWS]


def _served(name: str, item: dict[str, Any], path: Path) -> ServedDeployment:
    flow = SERVED_FLOWS[name]
    where = f"{path}, deployment {name}"
    unread = sorted(set(item) - _READ_KEYS - _WORK_POOL_KEYS)
    if unread:
        raise PrefectYamlError(f"{where}: `serve` does not read {', '.join(unread)}")
    # The file's entrypoints are paths in the checkout (`flows/phase1.py:phase1`); the package
    # installs `flows/` as `codex_memories_flows`.
    module = flow.fn.__module__.removeprefix("codex_memories_flows.")
    expected = f"flows/{module}.py:{flow.fn.__name__}"
    if item.get("entrypoint") != expected:
        raise PrefectYamlError(f"{where}: entrypoint {item.get('entrypoint')!r}, but `serve` runs {expected}")
    try:
        return ServedDeployment(
            flow=flow,
            name=name,
            description=item.get("description"),
            tags=list(item.get("tags") or []),
            schedules=[_schedule(config) for config in item.get("schedules") or []],
            parameters=dict(item.get("parameters") or {}),
            concurrency_limit=_concurrency_limit(item.get("concurrency_limit")),
        )
    except (TypeError, ValueError) as error:  # a schedule or limit Prefect's own types refuse
        raise PrefectYamlError(f"{where}: {' '.join(str(error).split())}") from None


def _schedule(config: dict[str, Any]) -> Schedule:
    """One entry of `schedules:` as `prefect deploy` reads it: cron, interval (seconds) or rrule,
    with timezone, anchor date, day_or, active, parameters and slug."""
    unread = sorted(set(config) - _SCHEDULE_KEYS)
    if unread:
        raise ValueError(f"a schedule with {', '.join(unread)}, which `serve` does not read")
    given = dict(config)
    if "interval" in given:
        given["interval"] = timedelta(seconds=float(given["interval"]))
    if isinstance(given.get("anchor_date"), str):
        given["anchor_date"] = datetime.fromisoformat(given["anchor_date"])
    return Schedule(**given)


def _concurrency_limit(value: Any) -> int | ConcurrencyLimitConfig | None:
    """`concurrency_limit: 1`, or a mapping with limit, collision_strategy, grace_period_seconds."""
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, dict):
        return ConcurrencyLimitConfig(**value)
    raise ValueError(f"concurrency_limit {value!r} is neither a number nor a mapping")


def served_deployments(served: list[ServedDeployment], overrides: SettingsOverrides) -> list[RunnerDeployment]:
    """The runner deployments, each with the CLI's overrides over prefect.yaml's `overrides`
    parameter (the other parameters as the file gives them)."""
    given = overrides.model_dump(exclude_none=True)
    deployments = []
    for spec in served:
        parameters = dict(spec.parameters)
        if given:
            parameters["overrides"] = {**(parameters.get("overrides") or {}), **given}
        deployments.append(
            spec.flow.to_deployment(
                name=spec.name,
                description=spec.description,
                schedules=spec.schedules,
                concurrency_limit=spec.concurrency_limit,
                parameters=parameters,
                tags=spec.tags,
                # By module, not by file: the flows are found wherever the package is installed.
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
        )
    return deployments


def serve_deployments(served: list[ServedDeployment], overrides: SettingsOverrides) -> None:
    """Serve until interrupted (Ctrl-C); scheduled runs pause while nothing serves them."""
    serve(*served_deployments(served, overrides), print_starting_message=True)


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
