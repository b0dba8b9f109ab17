"""CLI options reach the flows: they load their settings from their own parameters, so an option
the CLI does not forward would be silently ignored (it was, for --api-mode and --config-file)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.openai_server import running_openai_server
from tests.support.rollout_factory import write_rollout


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex_home"
    home.mkdir()
    (home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    write_rollout(home, created_at=datetime.now(UTC) - timedelta(hours=30), user_messages=["Always use pnpm here."])
    return home


def run_cli(tmp_path: Path, codex_home: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_MEMORIES_", "OPENAI_"))}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    return subprocess.run(
        [sys.executable, "-m", "codex_memories_cli.main", "phase1", "--codex-home", str(codex_home),
         "--db", f"sqlite:///{tmp_path / 'state.sqlite'}", "--ignore-age-windows", *options],
        capture_output=True, text=True, env=env, timeout=240,
    )


def test_api_mode_given_on_the_command_line_reaches_the_flow(tmp_path: Path, codex_home: Path) -> None:
    with running_openai_server() as server:
        result = run_cli(tmp_path, codex_home, "--provider", "openai", "--base-url", server.base_url, "--api-mode", "chat")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [request.path for request in server.requests] == ["/v1/chat/completions"]


def test_settings_from_a_config_file_given_on_the_command_line_reach_the_flow(tmp_path: Path, codex_home: Path) -> None:
    settings = tmp_path / "elsewhere.toml"
    settings.write_text('api_mode = "chat"\nprovider = "openai"\n', encoding="utf-8")
    with running_openai_server() as server:
        result = run_cli(tmp_path, codex_home, "--config-file", str(settings), "--base-url", server.base_url)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [request.path for request in server.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize(
    ("call", "shown"),
    [("prepare_prefect(False)", logging.CRITICAL), ("prepare_prefect(False, quiet_level='WARNING')", logging.WARNING)],
    ids=["a run command shows none of Prefect's", "serve shows Prefect's warnings"],
)
def test_the_quiet_cli_keeps_flow_run_logs_at_info_for_the_prefect_api_and_quiets_the_terminal(call: str, shown: int) -> None:
    script = (
        f"from codex_memories_cli.options import prepare_prefect; {call}\n"
        "from prefect.logging.configuration import setup_logging; setup_logging()\n"
        "import logging, json\n"
        "console = [h.level for h in logging.getLogger('prefect').handlers + logging.getLogger().handlers"
        " if type(h).__name__ == 'PrefectConsoleHandler']\n"
        "print(json.dumps([logging.getLogger('prefect.flow_runs').getEffectiveLevel(), console]))\n"
    )
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_LOGGING")}
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True)
    flow_run_level, console_levels = json.loads(completed.stdout.strip().splitlines()[-1])
    assert flow_run_level == logging.INFO
    assert console_levels and all(level == shown for level in console_levels)
