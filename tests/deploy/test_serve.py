"""`codex-memories serve`: the deployments of prefect.yaml, served from one process.

What it proves: the served deployments carry prefect.yaml's names, schedules and phase 2's limit
(kept in step by a table comparison), and against a real `prefect server start` the command
registers all four, with the CLI's options as the default `overrides`, and runs a flow run it
is asked for, without a work pool or a worker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from codex_memories.settings import SettingsOverrides
from codex_memories_flows.serve import SERVED, served_deployments
from tests.deploy.prefect_stack import REPO_ROOT, PrefectStack, stop_process_group, wait_for

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "CRASHED"}


def test_served_deployments_match_prefect_yaml() -> None:
    document = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    declared = {}
    for item in document["deployments"]:
        schedules = item.get("schedules") or []
        limit = item.get("concurrency_limit")
        declared[item["name"]] = (
            schedules[0]["cron"] if schedules else None,
            limit["limit"] if limit else None,
            item["entrypoint"].split(":")[1],
            item.get("tags"),
        )
    served = {spec.name: (spec.cron, spec.concurrency_limit, spec.flow.fn.__name__, spec.tags) for spec in SERVED}
    assert served == declared


def test_the_cli_options_become_each_deployments_default_overrides() -> None:
    deployments = served_deployments(SettingsOverrides(provider="heuristic", concurrency=3))
    assert {deployment.parameters["overrides"]["concurrency"] for deployment in deployments} == {3}
    assert [deployment.entrypoint for deployment in deployments][0] == "codex_memories_flows.phase1.phase1"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectStack]:
    stack = PrefectStack(tmp_path_factory.mktemp("prefect-serve"))
    try:
        stack.start_server()
        yield stack
    finally:
        stack.stop()


@pytest.mark.prefect_server
@pytest.mark.postgres
@pytest.mark.timeout(240)
def test_serve_registers_the_four_deployments_and_runs_what_it_is_asked(stack: PrefectStack, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex_home"
    (codex_home / "sessions").mkdir(parents=True)
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [
            sys.executable, "-m", "codex_memories_cli.main", "serve", "--codex-home", str(codex_home),
            "--db", f"sqlite:///{tmp_path / 'state.sqlite'}", "--memory-root", str(tmp_path / "memories"),
            "--provider", "heuristic",
        ],
        cwd=REPO_ROOT, env=stack.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        with stack.client() as client:
            deployments = wait_for(lambda: _served(client), timeout=120, what="the four served deployments")
            phase2 = deployments["memories-phase2"]
            assert phase2.global_concurrency_limit is not None and phase2.global_concurrency_limit.limit == 1
            assert phase2.concurrency_options.collision_strategy.value == "CANCEL_NEW"
            assert [schedule.schedule.cron for schedule in phase2.schedules] == ["30 */6 * * *"]
            assert deployments["memories-phase1"].parameters["overrides"]["provider"] == "heuristic"

            run = client.create_flow_run_from_deployment(
                deployments["memories-forget"].id, parameters={"route": "manual_reset"}
            )
            finished = wait_for(lambda: _terminal_or_none(client, run.id), timeout=150, what="the served forget run")
            assert finished.state.type.value == "COMPLETED", finished.state
    finally:
        stop_process_group(serve, signal.SIGINT, timeout=30)
        log.close()


def _served(client: Any) -> dict[str, Any] | None:
    found = {deployment.name: deployment for deployment in client.read_deployments()}
    wanted = {spec.name for spec in SERVED}
    return found if wanted <= set(found) else None


def _terminal_or_none(client: Any, flow_run_id: Any) -> Any:
    time.sleep(0.2)
    run = client.read_flow_run(flow_run_id)
    return run if run.state and run.state.type.value in TERMINAL else None


def test_every_override_field_is_documented_in_the_readme_table_and_prefect_yaml() -> None:
    # The table moved from the README to docs/deployments.md (the README links it); the test's
    # name is kept so a run selecting it by name still finds it.
    page = (REPO_ROOT / "docs" / "deployments.md").read_text(encoding="utf-8")
    table = page[page.index("| `overrides` field |") :].split("\n\n", 1)[0]
    comments = (REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8")
    for field in SettingsOverrides.model_fields:
        assert f"`{field}`" in table, f"{field} is missing from the overrides table of docs/deployments.md"
        assert f"#   {field}: " in comments, f"{field} is missing from prefect.yaml's overrides comments"
