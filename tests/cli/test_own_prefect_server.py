"""The Prefect server `serve` starts (`own_server_environment`): its UI calls the API on the port
it was given, and it records task runs in batches, unless the user chose the recorder's batching
themselves (environment or Prefect settings)."""

from __future__ import annotations

import pytest
from prefect.settings import PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL, temporary_settings

from codex_memories_cli.prefect_server import TASK_RUN_RECORDER_BATCHING, own_server_environment

BATCH_SIZE = "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE"
FLUSH_INTERVAL = "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL"


@pytest.fixture(autouse=True)
def no_recorder_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BATCH_SIZE, raising=False)
    monkeypatch.delenv(FLUSH_INTERVAL, raising=False)


def test_the_started_server_batches_the_task_run_recorder() -> None:
    environment = own_server_environment(4321)
    assert environment[BATCH_SIZE] == str(TASK_RUN_RECORDER_BATCHING["batch_size"])
    assert environment[FLUSH_INTERVAL] == str(TASK_RUN_RECORDER_BATCHING["flush_interval"])
    assert int(environment[BATCH_SIZE]) > 1  # Prefect's default, one SQLite write per task-run event


def test_the_rest_of_the_environment_is_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_MEMORIES_TEST_MARKER", "kept")
    assert own_server_environment(4321)["CODEX_MEMORIES_TEST_MARKER"] == "kept"


def test_a_value_in_the_environment_stays_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BATCH_SIZE, "7")
    environment = own_server_environment(4321)
    assert environment[BATCH_SIZE] == "7"
    assert environment[FLUSH_INTERVAL] == str(TASK_RUN_RECORDER_BATCHING["flush_interval"])


def test_a_value_in_prefects_settings_stays_the_users() -> None:
    # As a profile's value: in the settings, not in the environment; the server reads it itself.
    with temporary_settings(updates={PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL: 3}):
        environment = own_server_environment(4321)
    assert FLUSH_INTERVAL not in environment
    assert environment[BATCH_SIZE] == str(TASK_RUN_RECORDER_BATCHING["batch_size"])


def test_the_started_server_listens_and_points_its_ui_at_the_port_it_was_given() -> None:
    environment = own_server_environment(4321)
    assert (environment["PREFECT_SERVER_API_HOST"], environment["PREFECT_SERVER_API_PORT"]) == ("127.0.0.1", "4321")
