"""Prefect's scheduler turns a deployment's schedule into flow runs with the libraries we install.

The other deployment tests run their Prefect server without the scheduler service (no run may
start during a test), so they would not see it fail. With SQLAlchemy 2.1, Prefect 3.9's scheduler
failed on every deployment ("Can't evaluate bulk DML statement" when it inserts the runs) and
nothing deployed or served ever ran on its schedule; pyproject.toml keeps SQLAlchemy below 2.1.
This runs the scheduler's own code (`models.deployments.schedule_runs`, which inserts runs as the
service does) against a fresh Prefect database, in a child process so that no Prefect server
state of this one is touched, with prefect.yaml's phase-1 schedule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]

_SCHEDULE_RUNS = r"""
import asyncio, json, sys
from prefect.server import models, schemas
from prefect.server.database import provide_database_interface

async def main(cron):
    db = provide_database_interface()
    await db.create_db()
    async with db.session_context(begin_transaction=True) as session:
        flow = await models.flows.create_flow(session, schemas.core.Flow(name="memories-phase1"))
        deployment = await models.deployments.create_deployment(session, schemas.core.Deployment(
            name="memories-phase1", flow_id=flow.id,
            schedules=[schemas.core.DeploymentSchedule(schedule=schemas.schedules.CronSchedule(cron=cron), active=True)],
        ))
    async with db.session_context(begin_transaction=True) as session:
        run_ids = await models.deployments.schedule_runs(session, deployment_id=deployment.id)
    async with db.session_context() as session:
        runs = await models.flow_runs.read_flow_runs(session)
    print(json.dumps({"scheduled": len(run_ids), "states": sorted({run.state_type.value for run in runs})}))

asyncio.run(main(sys.argv[1]))
"""


def test_the_scheduler_turns_the_phase1_schedule_into_scheduled_flow_runs(tmp_path: Path) -> None:
    deployments = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text())["deployments"]
    phase1 = next(item for item in deployments if item["name"] == "memories-phase1")
    cron = phase1["schedules"][0]["cron"]
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp_path / 'prefect.db'}",
    }
    env.pop("PREFECT_API_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", _SCHEDULE_RUNS, cron], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["scheduled"] >= 3  # Prefect schedules at least its minimum number of runs ahead
    assert outcome["states"] == ["SCHEDULED"]
