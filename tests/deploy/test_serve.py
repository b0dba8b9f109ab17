"""`codex-memories serve`: the deployments of prefect.yaml, served from one process.

What it proves: serve reads its deployments from prefect.yaml (names, schedules, tags,
parameters, phase 2's limit: a changed copy of the file changes what it registers), refuses a
file it cannot follow with one line and exit 2, and against a real `prefect server start` the command
registers all four, with the CLI's options as the default `overrides`, and runs a flow run it
is asked for, without a work pool or a worker.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from codex_memories.settings import SettingsOverrides
from codex_memories_flows.serve import (
    PREFECT_YAML,
    SERVED_FLOWS,
    PrefectYamlError,
    read_served_deployments,
    served_deployments,
)
from tests.deploy.prefect_stack import REPO_ROOT, PrefectStack, stop_process_group, wait_for

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "CRASHED"}


def test_serve_reads_the_repositorys_prefect_yaml() -> None:
    # In a checkout the package's file is a link to the one `prefect deploy --all` reads; the
    # wheel ships a copy of it (pyproject.toml's package data).
    assert PREFECT_YAML.resolve() == (REPO_ROOT / "prefect.yaml").resolve()
    document = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    declared = {item["name"]: item for item in document["deployments"]}
    served = {spec.name: spec for spec in read_served_deployments()}
    assert served.keys() == declared.keys() == SERVED_FLOWS.keys()
    for name, spec in served.items():
        assert [schedule.cron for schedule in spec.schedules] == [entry["cron"] for entry in declared[name].get("schedules") or []]
        assert spec.tags == declared[name]["tags"]


def test_serve_follows_a_changed_prefect_yaml(tmp_path: Path) -> None:
    """The drift test: what serve registers moves with the file, not with a copy in the code."""
    text = (REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8")
    changed = (
        text.replace('- cron: "0 * * * *" # hourly\n        timezone: UTC', '- cron: "15 3 * * 1"\n        timezone: Europe/Berlin')
        .replace('"deployment:memories-phase1"]', '"deployment:memories-phase1", "nightly"]')
        .replace("limit: 1\n      collision_strategy: CANCEL_NEW", "limit: 2\n      collision_strategy: ENQUEUE")
        .replace("      force: false\n", "      force: true\n")
    )
    # The backfill gains an interval schedule (seconds, as `prefect deploy` reads it).
    backfill_tags = 'tags: ["codex-memories", "backfill", "deployment:memories-backfill"]\n'
    changed = changed.replace(backfill_tags, backfill_tags + "    schedules:\n      - interval: 5400\n        timezone: UTC\n")
    assert changed.count("15 3 * * 1") == 1 and "interval: 5400" in changed and "force: true" in changed
    copy = tmp_path / "prefect.yaml"
    copy.write_text(changed, encoding="utf-8")

    deployments = {
        deployment.name: deployment
        for deployment in served_deployments(read_served_deployments(copy), SettingsOverrides(provider="heuristic"))
    }
    phase1 = deployments["memories-phase1"]
    assert [(entry.schedule.cron, entry.schedule.timezone) for entry in phase1.schedules] == [("15 3 * * 1", "Europe/Berlin")]
    assert phase1.tags[-1] == "nightly"
    phase2 = deployments["memories-phase2"]
    assert phase2.concurrency_limit == 2 and phase2.concurrency_options.collision_strategy.value == "ENQUEUE"
    # The file's parameters stay; the CLI's options become the default `overrides` beside them.
    assert phase2.parameters == {"force": True, "overrides": {"provider": "heuristic"}}
    assert [entry.schedule.interval for entry in deployments["memories-backfill"].schedules] == [timedelta(seconds=5400)]
    assert deployments["memories-forget"].schedules == []


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda text: text.replace("name: memories-forget", "name: memories-forgot"), "declares no deployment memories-forget"),
        (lambda text: text.replace("flows/phase2.py:phase2", "flows/phase1.py:phase1"), "but `serve` runs flows/phase2.py:phase2"),
        (lambda text: text.replace("    work_pool: *work_pool\n", "    work_pool: *work_pool\n    paused: true\n", 1), "does not read paused"),
        (lambda text: text.replace('- cron: "0 * * * *" # hourly', '- cron: "every hour"'), "memories-phase1"),
    ],
    ids=["deployment-missing", "other-entrypoint", "unknown-key", "bad-cron"],
)
def test_a_prefect_yaml_serve_cannot_follow_is_refused(tmp_path: Path, edit: Callable[[str], str], said: str) -> None:
    text = (REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8")
    copy = tmp_path / "prefect.yaml"
    copy.write_text(edit(text), encoding="utf-8")
    assert edit(text) != text
    with pytest.raises(PrefectYamlError, match=re.escape(said)):
        read_served_deployments(copy)


@pytest.mark.parametrize("case", ["missing", "deployment-missing"])
def test_serve_without_its_deployments_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    """Before any Prefect server starts: the command points `serve` at another prefect.yaml."""
    prefect_yaml = tmp_path / "prefect.yaml"
    if case == "deployment-missing":
        text = (REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8")
        prefect_yaml.write_text(text.replace("name: memories-phase2", "name: memories-phase-2"), encoding="utf-8")
    codex_home = tmp_path / "codex_home"
    (codex_home / "sessions").mkdir(parents=True)
    program = (
        "import sys; from pathlib import Path; import codex_memories_flows.serve as served; "
        f"served.PREFECT_YAML = Path({str(prefect_yaml)!r}); "
        "from codex_memories_cli.main import main; sys.argv[0] = 'codex-memories'; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", program, "serve", "--codex-home", str(codex_home),
         "--db", f"sqlite:///{tmp_path / 'state.sqlite'}", "--memory-root", str(tmp_path / "memories")],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
        # A server that refuses connections: were the file not read first, the command would
        # fail on it at once instead of starting a server of its own.
        env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"},
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codex-memories: "), result.stderr
    assert str(prefect_yaml) in lines[0]
    assert ("No such file" in lines[0]) if case == "missing" else ("declares no deployment memories-phase2" in lines[0])
    assert "Prefect API" not in result.stdout  # refused before serve got to its server


def test_the_cli_options_become_each_deployments_default_overrides() -> None:
    deployments = served_deployments(read_served_deployments(), SettingsOverrides(provider="heuristic", concurrency=3))
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
    wanted = set(SERVED_FLOWS)
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
