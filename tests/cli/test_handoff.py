"""The hand-off of a CLI run to `codex-memories serve` (`codex_memories_cli.handoff`), without
Prefect: the real socket server with a stand-in flow runner, or a scripted peer.

What it proves: a run is handed over only when serve resolves the same settings (fingerprint),
else the CLI runs it itself; a stale socket is replaced and a live one is not; serve gone mid-run
is an error naming the flow run, never a local re-run; Ctrl-C says the run goes on; one hand-off
at a time; the report comes back equal; the client module loads neither Prefect nor the flows.
"""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codex_memories import progress
from codex_memories.consolidate.conflicts import Conflict, DatedEntry
from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import ExtractionLine, Phase1Report, render_phase1_text
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.settings import SettingsOverrides, config_fingerprint
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute
from codex_memories_cli import handoff
from codex_memories_cli.handoff import (
    EXIT_INTERRUPTED,
    HandoffFailed,
    HandoffServer,
    HandoffUnavailable,
    decode_report,
    encode_report,
    hand_off,
)

API_URL = "http://127.0.0.1:4999/api"


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Codex home of our own and nothing from the caller's environment that settings read."""
    for name in ("CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "PREFECT_API_URL", "CODEX_MEMORIES_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    codex_home = tmp_path / "codex_home"
    (codex_home / "sessions").mkdir(parents=True)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    (tmp_path / "prefect").mkdir()
    return codex_home


def _overrides(codex_home: Path, **values: Any) -> SettingsOverrides:
    return SettingsOverrides(codex_home=str(codex_home), provider="heuristic", **values)


def _report() -> Phase1Report:
    return Phase1Report(
        provider="heuristic",
        model="m",
        provider_reason="requested explicitly",
        discovery={"files seen": 3},
        claimed=2,
        extractions=[
            ExtractionLine("t1", Outcome.succeeded, transcript_tokens=10),
            ExtractionLine("t2", Outcome.failed_model_request, reason="boom", truncated_tokens=4),
        ],
        quality=[{"expectation": "x", "success": True}],
        usage=Counter(input_tokens=5),
        forget_audit=[ForgetAuditRecord(id=1, route=ForgetRoute.manual_reset, target="t", reason="r", removed={"a": [1]}, created_at=7)],
        usage_reused=Counter(input_tokens=1),
    )


class StandInRunner:
    """The flow runner serve gets, minus Prefect: records the call, says a flow run exists,
    emits progress, returns the report (or raises)."""

    def __init__(self, report: Any = None, error: Exception | None = None, hold: threading.Event | None = None) -> None:
        self.calls: list[tuple[str, SettingsOverrides, bool, str]] = []
        self.report = report if report is not None else _report()
        self.error = error
        self.hold = hold
        self.running = threading.Event()

    def __call__(self, flow: str, overrides: SettingsOverrides, *, force: bool, on_flow_run: Callable[[str, str], None]) -> Any:
        self.calls.append((flow, overrides, force, threading.current_thread().name))
        on_flow_run("1234", "brave-otter")
        self.running.set()
        if self.hold is not None:
            self.hold.wait(timeout=30)
        progress.start("extract", 2)
        progress.advance("extract")
        progress.advance("extract")
        if self.error is not None:
            raise self.error
        return self.report[flow] if isinstance(self.report, dict) else self.report


@contextmanager
def serving(runner: StandInRunner, path: Path, api_url: str = API_URL) -> Iterator[list[str]]:
    """Serve's listener on `path`; yields the lines it says on serve's console."""
    said: list[str] = []
    with HandoffServer(path, runner, prefect_api_url=api_url, say=said.append):
        yield said


def _socket(tmp_path: Path) -> Path:
    return tmp_path / "prefect" / handoff.SOCKET_FILE


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []

    def start(self, stage: str, total: int) -> None:
        self.events.append(("start", stage, total))

    def advance(self, stage: str, amount: int = 1) -> None:
        self.events.append(("advance", stage, amount))


def test_serve_runs_the_flow_in_its_own_thread_when_the_fingerprints_match(environment: Path, tmp_path: Path) -> None:
    runner = StandInRunner()
    overrides = _overrides(environment, concurrency=3)
    recorder = Recorder()
    with serving(runner, _socket(tmp_path)):
        outcome = hand_off("phase1", overrides, config_fingerprint(overrides.load()), listener=recorder)
    assert outcome.report == runner.report
    assert render_phase1_text(outcome.report) == render_phase1_text(runner.report)
    assert outcome.flow_run is not None and outcome.flow_run.name == "brave-otter"
    assert outcome.flow_run.url == "http://127.0.0.1:4999/runs/flow-run/1234"
    [(flow, received, force, thread)] = runner.calls
    assert (flow, received, force) == ("phase1", overrides, False)
    assert thread == "hand-off" and thread != threading.current_thread().name
    # The bar here saw serve's progress events.
    assert recorder.events == [("start", "extract", 2), ("advance", "extract", 1), ("advance", "extract", 1)]


def test_a_fingerprint_mismatch_is_declined_and_nothing_runs_in_serve(environment: Path, tmp_path: Path) -> None:
    runner = StandInRunner()
    with serving(runner, _socket(tmp_path)):
        outcome = hand_off("phase1", _overrides(environment), "0" * 64)
    assert outcome.report is None
    assert "settings differ" in outcome.reason
    assert runner.calls == []


def test_settings_serve_resolves_from_its_own_environment_count(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's fingerprint is taken in its environment; serve's environment differs (another
    API key): declined, though the overrides are the same."""
    overrides = _overrides(environment)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-cli-has-this-one")
    cli_fingerprint = config_fingerprint(overrides.load())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-serve-has-another")
    runner = StandInRunner()
    with serving(runner, _socket(tmp_path)):
        outcome = hand_off("phase1", overrides, cli_fingerprint)
    assert outcome.report is None and "settings differ" in outcome.reason
    assert runner.calls == []


def test_the_fingerprint_covers_secrets_the_environment_and_relative_paths(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides = _overrides(environment)
    first = config_fingerprint(overrides.load())
    assert first == config_fingerprint(overrides.load())
    assert len(first) == 64 and "sk-" not in first
    monkeypatch.setenv("OPENAI_API_KEY", "sk-one")
    with_key = config_fingerprint(overrides.load())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-two")
    assert config_fingerprint(overrides.load()) != with_key != first
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3-secret")
    assert config_fingerprint(overrides.load()) != with_key
    # A relative state DB means another file from another working directory.
    relative = _overrides(environment, db_url="sqlite:///state.sqlite")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    from_a = config_fingerprint(relative.load())
    absolute_from_a = config_fingerprint(overrides.load())
    monkeypatch.chdir(tmp_path / "b")
    assert config_fingerprint(relative.load()) != from_a
    assert config_fingerprint(overrides.load()) == absolute_from_a


def test_no_serve_and_a_stale_socket_mean_run_here(environment: Path, tmp_path: Path) -> None:
    path = _socket(tmp_path)
    overrides = _overrides(environment)
    fingerprint = config_fingerprint(overrides.load())
    nobody = hand_off("phase1", overrides, fingerprint)
    assert nobody.report is None and "no codex-memories serve" in nobody.reason
    _leave_stale_socket(path)
    stale = hand_off("phase1", overrides, fingerprint)
    assert stale.report is None and "no codex-memories serve" in stale.reason


def test_serve_replaces_a_stale_socket_and_removes_its_own_at_the_end(environment: Path, tmp_path: Path) -> None:
    path = _socket(tmp_path)
    _leave_stale_socket(path)
    runner = StandInRunner()
    overrides = _overrides(environment)
    with serving(runner, path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert hand_off("phase1", overrides, config_fingerprint(overrides.load())).report == runner.report
    assert not path.exists()


def test_a_second_serve_leaves_a_live_socket_alone(environment: Path, tmp_path: Path) -> None:
    path = _socket(tmp_path)
    with serving(StandInRunner(), path):
        with pytest.raises(HandoffUnavailable, match="another codex-memories serve listens"):
            HandoffServer(path, StandInRunner(), prefect_api_url=API_URL).start()
        assert path.is_socket()


def test_one_hand_off_at_a_time_the_second_is_declined(environment: Path, tmp_path: Path) -> None:
    hold = threading.Event()
    runner = StandInRunner(hold=hold)
    overrides = _overrides(environment)
    fingerprint = config_fingerprint(overrides.load())
    with serving(runner, _socket(tmp_path)):
        results: list[Any] = []
        first = threading.Thread(target=lambda: results.append(hand_off("phase1", overrides, fingerprint)))
        first.start()
        assert runner.running.wait(timeout=30)
        second = hand_off("phase1", overrides, fingerprint)
        hold.set()
        first.join(timeout=30)
    assert second.report is None and "busy" in second.reason
    assert results[0].report == runner.report
    assert len(runner.calls) == 1


def test_a_cli_that_leaves_before_start_starts_nothing(environment: Path, tmp_path: Path) -> None:
    runner = StandInRunner()
    overrides = _overrides(environment)
    fingerprint = config_fingerprint(overrides.load())
    path = _socket(tmp_path)
    with serving(runner, path):
        with socket.socket(socket.AF_UNIX) as connection, connection.makefile("rb") as reader:
            connection.connect(str(path))
            connection.sendall(json.dumps(_request(overrides, fingerprint)).encode() + b"\n")
            assert json.loads(reader.readline()) == {"event": "ready"}
        # The slot is free again (once serve has seen the connection end), and the run that was
        # not started never ran.
        outcome = hand_off("phase1", overrides, fingerprint)
        for _ in range(100):
            if "busy" not in outcome.reason:
                break
            time.sleep(0.05)
            outcome = hand_off("phase1", overrides, fingerprint)
        assert outcome.report == runner.report
    assert len(runner.calls) == 1


def test_an_error_of_the_flow_in_serve_is_one_error_here(environment: Path, tmp_path: Path) -> None:
    runner = StandInRunner(error=RuntimeError("the state DB is locked; key sk-abcdefghijklmnopqrstuvwxyz012345"))
    overrides = _overrides(environment)
    with serving(runner, _socket(tmp_path)) as said, pytest.raises(HandoffFailed) as failed:
        hand_off("phase1", overrides, config_fingerprint(overrides.load()))
    assert failed.value.exit_code == 1
    assert "RuntimeError: the state DB is locked" in str(failed.value)
    assert "brave-otter" in str(failed.value)
    # Serve's console has the traceback; neither side shows the secret.
    assert any("Traceback" in line and "the state DB is locked" in line for line in said)
    assert "sk-abcdefghijklmnopqrstuvwxyz012345" not in str(failed.value) + "".join(said)


def test_serve_gone_mid_run_is_an_error_naming_the_flow_run_not_a_local_run(environment: Path, tmp_path: Path) -> None:
    path = _socket(tmp_path)

    def dies_after_the_flow_run_starts(connection: socket.socket, reader: Any) -> None:
        _send(connection, {"event": "flow_run", "id": "42", "name": "lucky-heron", "url": "http://x/runs/flow-run/42"})
        _send(connection, {"event": "progress", "action": "start", "stage": "extract", "count": 3})

    overrides = _overrides(environment)
    with scripted_serve(path, dies_after_the_flow_run_starts), pytest.raises(HandoffFailed) as failed:
        hand_off("phase1", overrides, config_fingerprint(overrides.load()))
    assert failed.value.exit_code == 1
    message = str(failed.value)
    assert "codex-memories serve stopped before flow run 'lucky-heron'" in message
    assert "http://x/runs/flow-run/42" in message and "not run here" in message


def test_ctrl_c_while_serve_runs_it_says_the_run_goes_on(environment: Path, tmp_path: Path) -> None:
    path = _socket(tmp_path)

    def runs_on(connection: socket.socket, reader: Any) -> None:
        _send(connection, {"event": "flow_run", "id": "42", "name": "lucky-heron"})
        _send(connection, {"event": "progress", "action": "advance", "stage": "extract", "count": 1})

    class CtrlC(Recorder):
        def advance(self, stage: str, amount: int = 1) -> None:
            raise KeyboardInterrupt

    overrides = _overrides(environment)
    with scripted_serve(path, runs_on), pytest.raises(HandoffFailed) as failed:
        hand_off("phase1", overrides, config_fingerprint(overrides.load()), listener=CtrlC())
    assert failed.value.exit_code == EXIT_INTERRUPTED
    assert "flow run 'lucky-heron'" in str(failed.value) and "goes on in codex-memories serve" in str(failed.value)


def test_another_prefect_server_in_the_cli_environment_is_declined(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = StandInRunner()
    overrides = _overrides(environment)
    with serving(runner, _socket(tmp_path)):
        monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
        outcome = hand_off("phase1", overrides, config_fingerprint(overrides.load()))
        monkeypatch.setenv("PREFECT_API_URL", API_URL + "/")
        same = hand_off("phase1", overrides, config_fingerprint(overrides.load()))
    assert outcome.report is None and "another Prefect server" in outcome.reason
    assert same.report == runner.report


def test_the_reports_come_back_equal() -> None:
    report = _report()
    assert decode_report("phase1", json.loads(json.dumps(encode_report("phase1", report)))) == report
    entry = DatedEntry(text="use uv", group="/repo", source="t1", updated_at="2026-01-01", position=0)
    phase2 = Phase2Report(
        outcome=Outcome.succeeded, selected=3, diff_status=["A x"], forgotten=[(ForgetRoute.manual_reset, "p")],
        usage={"input_tokens": 3}, conflicts=[Conflict(subject="tool", winner=entry, loser=entry)], folder_restored=False,
    )
    assert decode_report("phase2", json.loads(json.dumps(encode_report("phase2", phase2)))) == phase2


def test_the_cli_prints_serves_report_and_runs_nothing_itself(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codex_memories_cli.main import app

    runner = StandInRunner()
    monkeypatch.setattr("codex_memories_cli.prefect_server.reporting_to_prefect", _must_not_run_here)
    with serving(runner, _socket(tmp_path)):
        result = CliRunner().invoke(app, ["phase1", "--codex-home", str(environment), "--provider", "heuristic", "-v"])
    assert result.exit_code == 0, result.output
    assert render_phase1_text(runner.report) in result.stdout
    assert "ran in codex-memories serve as flow run 'brave-otter'" in result.stderr
    assert len(runner.calls) == 1


def test_run_hands_off_both_phases_and_a_failed_phase_2_exits_1_as_it_would_here(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codex_memories.reports.phase2 import render_phase2_text
    from codex_memories_cli.main import app

    failed = Phase2Report(outcome=Outcome.failed_sync_workspace_inputs, reason="the disk is full")
    runner = StandInRunner(report={"phase1": _report(), "phase2": failed})
    monkeypatch.setattr("codex_memories_cli.prefect_server.reporting_to_prefect", _must_not_run_here)
    with serving(runner, _socket(tmp_path)):
        result = CliRunner().invoke(app, ["run", "--codex-home", str(environment), "--provider", "heuristic", "--force"])
    assert result.exit_code == 1, result.output
    assert render_phase1_text(_report()) in result.stdout and render_phase2_text(failed) in result.stdout
    assert [(flow, force) for flow, _overrides, force, _thread in runner.calls] == [("phase1", False), ("phase2", True)]


def test_the_cli_runs_the_flow_itself_when_serve_declines_and_with_local(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.states import Completed, State

    import codex_memories_flows.phase1 as phase1_module
    from codex_memories_cli.main import app

    local_runs: list[SettingsOverrides] = []

    def local_phase1(overrides: SettingsOverrides, return_state: bool) -> State[Phase1Report]:
        local_runs.append(overrides)
        return Completed(data=Phase1Report(provider="heuristic", provider_reason="ran here"))

    monkeypatch.setattr(phase1_module, "phase1", local_phase1)
    monkeypatch.setattr("codex_memories_cli.prefect_server.reporting_to_prefect", lambda *_args: nullcontext())
    runner = StandInRunner()
    arguments = ["phase1", "--codex-home", str(environment), "--provider", "heuristic", "-v"]
    with serving(runner, _socket(tmp_path)):
        forced = CliRunner().invoke(app, [*arguments, "--local"])
        # Serve's environment is another one than the CLI's from here on: settings differ.
        monkeypatch.setattr(handoff, "config_fingerprint", lambda config: "f" * 64)
        declined = CliRunner().invoke(app, arguments)
    assert forced.exit_code == 0 and declined.exit_code == 0, declined.output
    assert "ran here" in forced.stdout and "ran here" in declined.stdout
    assert "settings differ" in declined.stderr and "running it here" in declined.stderr
    assert len(local_runs) == 2 and runner.calls == []


def test_the_hand_off_client_loads_neither_prefect_nor_the_flows() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, codex_memories_cli.handoff, codex_memories_cli.main; "
         "print(sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'codex_memories_flows', 'codex_memories_tasks'}))"],
        capture_output=True, text=True, check=True,
    )
    assert loaded.stdout.strip() == "[]"


# ---- helpers ------------------------------------------------------------------------------------


def _must_not_run_here(*_args: Any) -> Any:
    raise AssertionError("the flow ran in the CLI's process")


def _request(overrides: SettingsOverrides, fingerprint: str) -> dict[str, Any]:
    return {
        "protocol": handoff.PROTOCOL_VERSION, "flow": "phase1", "overrides": overrides.model_dump(mode="json", exclude_none=True),
        "force": False, "fingerprint": fingerprint, "prefect_api_url": None,
    }


def _send(connection: socket.socket, message: dict[str, Any]) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


def _leave_stale_socket(path: Path) -> None:
    """What a killed serve leaves: the socket file, nobody listening."""
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()
    assert path.is_socket()


@contextmanager
def scripted_serve(path: Path, after_start: Callable[[socket.socket, Any], None]) -> Iterator[None]:
    """A peer that accepts one hand-off ("ready"), reads "start", runs `after_start` and closes."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)

    def serve_once() -> None:
        connection, _ = listener.accept()
        with connection, connection.makefile("rb") as reader:
            json.loads(reader.readline())
            _send(connection, {"event": "ready"})
            assert json.loads(reader.readline()) == {"start": True}
            after_start(connection, reader)

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(timeout=10)
        listener.close()
