"""Memories reach real Codex sessions through our hooks, with Codex's own memory feature off.

On both pinned versions (0.147.0 from PyPI, 0.171.0 from npm): a real interactive session says
something worth remembering; our phase 1 (against the test server) and phase 2 (heuristic)
write the memory folder; `codex-memories install` adds our hooks and MCP server; then one
`codex exec --dangerously-bypass-hook-trust` session and one TUI session (trusting the hooks on
the "Hooks need review" screen, as a user does once, which records the same trust `doctor`
computes) get the summary as a developer message at
the start and the remembered fact right after the user's message, with exactly one model request
per turn, and our memory folder is byte-identical afterwards. A last test turns Codex's memory
feature on, watches it rewrite our folder, and checks that `doctor` names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codex_memories.read.hook_log import hook_log_path
from codex_memories.read.injection import build_session_context
from codex_memories.runtime import close_stores, open_store
from codex_memories.settings_sources import SESSION_START_BUDGET
from tests.support.codex_cli import (
    CODEX_NPM_VERSION,
    CODEX_VERSIONS,
    CodexHome,
    citation_reply,
    request_kind,
    run_codex_exec,
    run_codex_tui,
    session_meta,
    text_reply,
    thread_source,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.openai_server import OpenAITestServer, RecordedRequest

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

USER_PREFERENCE = "PREF: build with make -j8 and keep tabs in Makefiles (PELICAN-7731)"
FACT = "PELICAN-7731"
QUESTION = "How do I build with make here?"
HOOK_BYPASS = ["--dangerously-bypass-hook-trust"]


@pytest.fixture
def pipeline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("CODEX_MEMORIES_")]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODEX_MEMORIES_MIN_ROLLOUT_IDLE_HOURS", "0")


def default_db_url(home: CodexHome) -> str:
    """Our default state DB for this home: the Stop hook finds it without any setting (Codex
    passes no CODEX_MEMORIES_* variables to hooks in this harness)."""
    return f"sqlite:///{home.path / 'codex-memories' / 'state.sqlite'}"


def run_our_pipeline(home: CodexHome, server: OpenAITestServer) -> None:
    from codex_memories.settings import SettingsOverrides
    from codex_memories_flows.phase1 import phase1
    from codex_memories_flows.phase2 import phase2
    from tests.codex.test_real_codex_pipeline import echo_preferences_stage1

    server.set_handler(with_pipeline_requests(text_reply("Noted."), echo_preferences_stage1))
    report = phase1(
        overrides=SettingsOverrides(
            codex_home=str(home.path), db_url=default_db_url(home), provider="openai", base_url=server.base_url,
            ignore_age_windows=True, max_rollouts_per_startup=16,
        )
    )
    assert report.claimed == 1, report
    result = phase2(
        overrides=SettingsOverrides(codex_home=str(home.path), db_url=default_db_url(home), provider="heuristic"), force=True
    )
    assert result.outcome is not None and not result.outcome.is_failure, result
    close_stores()


def codex_memories(home: CodexHome, *args: str) -> subprocess.CompletedProcess[str]:
    """Our CLI as a user runs it, with this Codex home and this Codex binary."""
    command = Path(sys.executable).with_name("codex-memories")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
    env["CODEX_HOME"] = str(home.path)
    return subprocess.run(
        [str(command), *args, "--codex-binary", str(home.codex)], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def input_messages(request: RecordedRequest) -> list[tuple[str, str]]:
    return [
        (item["role"], "".join(part.get("text", "") for part in item.get("content") or []))
        for item in request.body.get("input") or []
        if item.get("type") == "message"
    ]


def assert_memory_reached_the_turn(request: RecordedRequest, home: CodexHome, cwd: Path, prompt: str) -> None:
    messages = input_messages(request)
    expected_summary = build_session_context(home.memories_dir, budget_tokens=SESSION_START_BUDGET.default, cwd=str(cwd)).text
    assert expected_summary and FACT in expected_summary
    developer = [text for role, text in messages if role == "developer"]
    assert expected_summary in developer, "SessionStart: the read-path instructions are one developer message"
    [at] = [index for index, (role, text) in enumerate(messages) if role == "user" and text == prompt]
    assert messages.index(("developer", expected_summary)) < at, "the summary comes before the user's message"
    role, after = messages[at + 1]
    assert role == "developer" and after.startswith("<recalled_memories>"), messages[at + 1]
    assert FACT in after and "MEMORY.md:" in after


def wait_for_log(home: CodexHome, text: str, timeout: float = 60) -> None:
    log = hook_log_path(home.path)
    deadline = time.monotonic() + timeout
    while not (log.exists() and text in log.read_text(encoding="utf-8")):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} not in {log} after {timeout}s:\n{log.read_text(encoding='utf-8') if log.exists() else '(no log)'}")
        time.sleep(0.1)


def other_requests(server: OpenAITestServer) -> list[str | None]:
    return [thread_source(r) for r in server.requests if r not in user_turn_requests(server)]


@versions
def test_memories_reach_exec_and_tui_sessions_through_our_hooks_and_the_folder_stays_untouched(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    first = run_codex_tui(codex_home, USER_PREFERENCE, cwd=codex_workdir, server=codex_server)
    assert first.returncode == 0, first.pane
    remembered_thread = session_meta(first.rollout)["id"]
    run_our_pipeline(codex_home, codex_server)
    assert FACT in (codex_home.memories_dir / "memory_summary.md").read_text(encoding="utf-8")
    assert FACT in (codex_home.memories_dir / "MEMORY.md").read_text(encoding="utf-8")

    installed = codex_memories(codex_home, "install")
    assert installed.returncode == 0, installed.stderr
    assert "codex-memories install --trust" in installed.stdout  # how to trust them
    assert "codex mcp add codex-memories" in installed.stdout
    doctor = codex_memories(codex_home, "doctor")
    failing = [line for line in doctor.stdout.splitlines() if line.startswith("[FAIL]")]
    assert failing and all(line.startswith("[FAIL] hook trust: SessionStart: not trusted") for line in failing), doctor.stdout
    before = folder_bytes(codex_home.memories_dir)

    # 1. codex exec (hooks trusted for this one run), replying with a citation of the memory.
    codex_server.set_handler(with_pipeline_requests(citation_reply("Use make -j8, as before.", remembered_thread)))
    codex_server.clear_requests()
    result = run_codex_exec(codex_home, QUESTION, cwd=codex_workdir, server=codex_server, extra_args=HOOK_BYPASS)
    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    assert other_requests(codex_server) == []  # no memory request of Codex's own: one request for the turn
    assert_memory_reached_the_turn(request, codex_home, codex_workdir, QUESTION)

    # The Stop hook counted the citation (in a detached process, so the turn did not wait for
    # it); the next phase-1 harvest does not count it again.
    wait_for_log(codex_home, "Stop harvested_citations")
    store = open_store(default_db_url(codex_home))
    output = store.get_stage1_output(remembered_thread)
    assert output is not None and output.usage_count == 1
    close_stores()

    # 2. The TUI: the user trusts the new hooks once, on Codex's own screen.
    codex_server.set_handler(with_pipeline_requests(text_reply("Use make -j8.")))
    codex_server.clear_requests()
    tui = run_codex_tui(codex_home, QUESTION, cwd=codex_workdir, server=codex_server, trust_hooks=True)
    assert tui.returncode == 0, tui.pane
    [request] = user_turn_requests(codex_server)
    assert_memory_reached_the_turn(request, codex_home, codex_workdir, QUESTION)
    # 0.171's TUI also asks the model for a thread title (not a turn, not memory).
    assert other_requests(codex_server) == (["thread_title"] if codex_version == CODEX_NPM_VERSION else [])

    # What the TUI recorded for "Trust all" is what doctor (and `install --trust`) compute.
    doctor = codex_memories(codex_home, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    assert folder_bytes(codex_home.memories_dir) == before
    log = hook_log_path(codex_home.path).read_text(encoding="utf-8")
    for outcome in (
        "SessionStart injected_memory_summary",
        "UserPromptSubmit injected_relevant_memory",
        "Stop started_background_harvest",
        "Stop harvested_citations",
    ):
        assert outcome in log
    assert "failed_" not in log

    from codex_memories.settings import SettingsOverrides
    from codex_memories_flows.phase1 import phase1

    report = phase1(
        overrides=SettingsOverrides(
            codex_home=str(codex_home.path), db_url=default_db_url(codex_home), provider="heuristic", ignore_age_windows=True
        )
    )
    assert report.discovery["citation uses recorded"] == 0
    store = open_store(default_db_url(codex_home))
    assert store.get_stage1_output(remembered_thread).usage_count == 1
    close_stores()


@versions
def test_codex_memory_feature_on_rewrites_our_folder_and_doctor_names_it(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    first = run_codex_tui(codex_home, USER_PREFERENCE, cwd=codex_workdir, server=codex_server)
    assert first.returncode == 0, first.pane
    run_our_pipeline(codex_home, codex_server)
    ours_raw = (codex_home.memories_dir / "raw_memories.md").read_text(encoding="utf-8")
    ours_summaries = sorted(p.name for p in (codex_home.memories_dir / "rollout_summaries").iterdir())
    assert FACT in ours_raw and ours_summaries
    assert codex_memories(codex_home, "install").returncode == 0

    codex_home.write_config(features={"memories": True}, memories={"generate_memories": False, "use_memories": True})
    doctor = codex_memories(codex_home, "doctor")
    assert doctor.returncode == 1
    [line] = [line for line in doctor.stdout.splitlines() if line.startswith("[FAIL] codex memory feature")]
    assert "ON for the folder we write" in line and "set `memories = false` under `[features]`" in line

    codex_server.set_handler(with_pipeline_requests(text_reply("ok", delay_seconds=1.0)))
    codex_server.clear_requests()
    result = run_codex_exec(codex_home, "hello", cwd=codex_workdir, server=codex_server, extra_args=HOOK_BYPASS)
    assert result.returncode == 0, result.stderr[-3000:]

    raw_after = (codex_home.memories_dir / "raw_memories.md").read_text(encoding="utf-8")
    summaries_after = sorted(p.name for p in (codex_home.memories_dir / "rollout_summaries").glob("*")) if (codex_home.memories_dir / "rollout_summaries").exists() else []
    sources = sorted({str(thread_source(r)) for r in codex_server.requests})
    # What Codex's own startup task did to our folder (issue 10).
    assert FACT not in raw_after, raw_after
    # Both versions: Codex's raw_memories.md ("# Raw Memories", none of ours), none of our
    # rollout summaries left, and a consolidation request on the user's quota.
    assert raw_after.startswith("# Raw Memories") and summaries_after == []
    if codex_version != CODEX_NPM_VERSION:
        assert not any(request_kind(r) == "memory" for r in codex_server.requests)  # 0.147 has no phase 1 of its own here
    assert "memory_consolidation" in sources, sources
