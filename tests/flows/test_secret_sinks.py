"""Planted secrets reach none of the sinks: the state DB, the memory folder (its git history
included) and what a session is shown of it, the logs, Prefect's results and artifacts, and the
model's requests (issue 29 deliverable 2).

The secrets are of the shapes no provider list names (passwords as command-line flags, config
files, key material cut over lines, names that say secret), drawn from
`tests/support/secret_formats.py`. They sit in succeeded commands, which the offline provider
quotes verbatim into the memory, in tool output and in what the user typed; the model of the
second test copies every one of them into its answer. Every sink is read whole and searched
with `leaked` (any 12 characters of a secret, raw or JSON-escaped).
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from codex_memories.read.hook_log import HookOptions
from codex_memories.read.hooks import handle_hook
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.flow_runs import report_of
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2
from tests.flows.test_phase1_flow import isolated_settings  # noqa: F401 - autouse: no stray settings
from tests.support.openai_server import RecordedRequest, ScriptedReply, running_openai_server, stage1_extraction_for
from tests.support.rollout_factory import write_rollout
from tests.support.secret_formats import leaked, secret_cases

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

NOW = datetime.now(UTC)
CWD = "/home/dana/src/billing-api"
_CASES = {case.name: case for case in secret_cases(29)}
# Commands that succeed (exit 0): the offline provider quotes them verbatim as verified commands.
COMMANDS = (
    "sqlcmd_flag",
    "ldapsearch_flag",
    "smbclient_user_percent",
    "zip_flag",
    "keytool_storepass",
    "openssl_passin",
    "sqlplus_user_slash",
    "echo_into_sudo",
    "long_flag_with_prefix",
    "bearer_after_continuation",
)
# Files the agent printed: tool output.
OUTPUTS = ("pgpass_line", "netrc_multiline", "wireguard_private_key", "kubeconfig_client_key_data", "pem_body_without_header")
# What the user typed.
TYPED = ("password_in_prose", "token_value_json", "url_password_with_hash")
SECRETS = {name: _CASES[name].secret for name in (*COMMANDS, *OUTPUTS, *TYPED)}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """Every log record of the run, ours and Prefect's, at every level."""
    handler = _Records()
    loggers = [logging.getLogger(name) for name in ("", "codex_memories", "prefect", "prefect.flow_runs", "prefect.task_runs")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        # setLevel, not an attribute patch: it clears the loggers' cached `isEnabledFor` answers,
        # which an earlier test (a CLI run at WARNING) leaves behind and which would drop INFO.
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    yield handler.lines
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def write_sessions(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
    tool_calls = [(_CASES[name].snippet, "ok", 0) for name in COMMANDS]
    tool_calls += [(f"cat config-{index}.txt", _CASES[name].snippet, 0) for index, name in enumerate(OUTPUTS)]
    write_rollout(
        home,
        created_at=NOW - timedelta(hours=30),
        cwd=CWD,
        user_messages=[
            "Always run the migrations with the deploy script. " + " ".join(_CASES[name].snippet for name in TYPED),
            "Now set up the database credentials and the VPN.",
        ],
        tool_calls=tool_calls,
    )


def settings(home: Path, tmp_path: Path, **overrides) -> SettingsOverrides:
    return SettingsOverrides(
        codex_home=str(home),
        db_url=f"sqlite:///{tmp_path / 'state.sqlite'}",
        memory_root=str(tmp_path / "memories"),
        max_rollouts_per_startup=8,
        **overrides,
    )


def db_text(tmp_path: Path) -> str:
    """Every row of every table of the state DB, as text."""
    engine = create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        with engine.connect() as connection:
            # Each value whole: a row's repr cuts long strings short.
            return "\n".join(
                str(value)
                for table in inspect(engine).get_table_names()
                for row in connection.execute(text(f'SELECT * FROM "{table}"'))
                for value in row
            )
    finally:
        engine.dispose()


def folder_text(root: Path) -> str:
    """Every file of the memory folder, and every object of its git history, decompressed."""
    parts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    for git_dir in [root / ".git", *root.glob(".codex-memories/**/*.git")]:
        if git_dir.is_dir():
            objects = subprocess.run(
                ["git", f"--git-dir={git_dir}", "cat-file", "--batch-all-objects", "--batch"],
                capture_output=True, check=True,
            ).stdout
            parts.append(objects.decode("utf-8", "replace"))
    assert parts
    return "\n".join(parts)


def prefect_text(since: datetime) -> str:
    """Prefect's persisted results (its local result storage) and the run artifacts."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_LOCAL_STORAGE_PATH

    storage = Path(PREFECT_LOCAL_STORAGE_PATH.value())
    parts = []
    for path in storage.rglob("*"):
        if path.is_file() and datetime.fromtimestamp(path.stat().st_mtime, UTC) >= since - timedelta(seconds=2):
            stored = path.read_text(encoding="utf-8", errors="replace")
            parts.append(stored)
            # A persisted result is JSON around a base64 pickle; a pickle holds its strings as
            # UTF-8 bytes.
            payload = json.loads(stored).get("result") if stored.startswith("{") else None
            if isinstance(payload, str):
                parts.append(base64.b64decode(payload).decode("utf-8", "replace"))
    with get_client(sync_client=True) as client:
        parts += [json.dumps(artifact.data) + str(artifact.description) for artifact in client.read_artifacts()]
    return "\n".join(parts)


def session_start_text(home: Path, tmp_path: Path) -> str:
    """What the SessionStart hook gives a session in the project."""
    payload = json.dumps({"session_id": "s", "hook_event_name": "SessionStart", "cwd": CWD, "source": "startup"})
    result = handle_hook("SessionStart", payload, HookOptions(codex_home=home, memory_root=tmp_path / "memories"))
    assert result.stdout != "{}", result.detail  # not vacuous: the memory was read
    return result.stdout


def assert_no_sink_holds_a_secret(sinks: dict[str, str]) -> None:
    found = {sink: [name for name, secret in SECRETS.items() if leaked(secret, content)] for sink, content in sinks.items()}
    assert found == {sink: [] for sink in sinks}


def test_secrets_in_commands_output_and_typed_text_reach_no_sink_with_the_offline_provider(
    tmp_path: Path, log_lines: list[str]
) -> None:
    home = tmp_path / "codex_home"
    write_sessions(home)
    started = datetime.now(UTC)
    report = phase1(overrides=settings(home, tmp_path, provider="heuristic"))
    assert report.outcome_counts() == {"succeeded": 1}
    phase2(overrides=settings(home, tmp_path, provider="heuristic"), force=True)

    memory = folder_text(tmp_path / "memories")
    # Not vacuous: the commands are quoted in the memory, with their secrets redacted.
    assert "sqlcmd -S" in memory and "[REDACTED_SECRET]" in memory
    assert_no_sink_holds_a_secret(
        {
            "state DB": db_text(tmp_path),
            "memory folder": memory,
            "SessionStart": session_start_text(home, tmp_path),
            "logs": "\n".join(log_lines),
            "Prefect results and artifacts": prefect_text(started),
        }
    )


def test_secrets_a_model_copies_into_its_answer_reach_no_sink(tmp_path: Path, log_lines: list[str]) -> None:
    home = tmp_path / "codex_home"
    write_sessions(home)
    copied = "\n".join(f"- {_CASES[name].snippet}" for name in SECRETS)

    def copying(request: RecordedRequest) -> ScriptedReply:
        extraction = stage1_extraction_for(request)
        extraction["raw_memory"] += f"\nReusable knowledge:\n{copied}\n"
        extraction["rollout_summary"] += f"\n{copied}\n"
        return ScriptedReply.output_text(json.dumps(extraction))

    started = datetime.now(UTC)
    with running_openai_server(copying) as server:
        report = report_of(phase1(overrides=settings(home, tmp_path, provider="openai", base_url=server.base_url), return_state=True))
    assert report.outcome_counts() == {"succeeded": 1}
    phase2(overrides=settings(home, tmp_path, provider="heuristic"), force=True)

    requests = "\n".join(json.dumps(request.body, ensure_ascii=False) for request in server.requests)
    assert "[REDACTED_SECRET]" in requests
    assert_no_sink_holds_a_secret(
        {
            "model requests": requests,
            "state DB": db_text(tmp_path),
            "memory folder": folder_text(tmp_path / "memories"),
            "SessionStart": session_start_text(home, tmp_path),
            "logs": "\n".join(log_lines),
            "Prefect results and artifacts": prefect_text(started),
        }
    )


def test_secrets_in_a_model_answer_that_fails_the_schema_reach_no_sink(tmp_path: Path, log_lines: list[str]) -> None:
    # The schema error names the offending field, here a secret the model used as a key: the
    # failure reason is kept in Prefect's persisted result, the DB, the logs and the artifact.
    home = tmp_path / "codex_home"
    write_sessions(home)
    secret_key = _CASES["long_flag_with_prefix"].snippet

    def malformed(request: RecordedRequest) -> ScriptedReply:
        return ScriptedReply.output_text(json.dumps({**stage1_extraction_for(request), secret_key: "x"}))

    started = datetime.now(UTC)
    with running_openai_server(malformed) as server:
        report = report_of(phase1(overrides=settings(home, tmp_path, provider="openai", base_url=server.base_url), return_state=True))
    assert report.outcome_counts() == {"failed_invalid_output": 1}
    sinks = {"state DB": db_text(tmp_path), "logs": "\n".join(log_lines), "Prefect results and artifacts": prefect_text(started)}
    # Not vacuous: the reason, with the key it names, did reach each sink.
    assert all("deploy.sh --env prod --db-password" in content for content in sinks.values()), {k: len(v) for k, v in sinks.items()}
    assert_no_sink_holds_a_secret(sinks)
