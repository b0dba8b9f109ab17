"""The real phase-1 flow against our OpenAI-compatible test server (real HTTP, real openai client).

Assertions are on what the model was sent (no secrets, no harness text) and on the rows left.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import render_phase1_text
from codex_memories.runtime import close_stores
from codex_memories.settings import SettingsOverrides
from codex_memories.state.store import MemoryStore
from codex_memories_flows.flow_runs import report_of
from codex_memories_flows.phase1 import phase1
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    default_handler,
    running_openai_server,
    stage1_extraction_for,
)
from tests.support.rollout_factory import write_rollout
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

NOW = datetime.now(UTC)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "codex_home"

CANARIES = {
    "developer": "CANARY-DEVELOPER-7f3a",
    "agents_md": "CANARY-AGENTS-MD-91be",
    "skill": "CANARY-SKILL-44c0",
    "reasoning": "CANARY-REASONING-d2e9",
    "event_only": "CANARY-EVENT-ONLY-5a17",
}


@pytest.fixture(autouse=True)
def isolated_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("CODEX_MEMORIES_") or name in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"}:
            monkeypatch.delenv(name)
    monkeypatch.setenv("CODEX_MEMORIES_MODEL_RETRY_DELAY_SECONDS", "0")
    yield
    close_stores()


def enable_memories(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")


def canary_lines(cwd: str) -> list[dict]:
    def item(payload: dict) -> dict:
        return {"type": "response_item", "payload": payload}

    return [
        item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": CANARIES["developer"]}]}),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{CANARIES['agents_md']}\n</INSTRUCTIONS>"},
                ],
            }
        ),
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<skill>\n{CANARIES['skill']}\n</skill>"}]}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": CANARIES["reasoning"]}], "encrypted_content": None}),
        {"type": "event_msg", "payload": {"type": "agent_message", "message": CANARIES["event_only"]}},
    ]


def write_corpus(home: Path) -> dict[str, Path]:
    """Three interactive sessions (one full of secrets and canaries), one exec, one sub-agent."""
    enable_memories(home)
    secrets_text = "\n".join(PLANTED_SECRETS.values())
    return {
        "secrets": write_rollout(
            home,
            created_at=NOW - timedelta(hours=30),
            cwd="/home/dana/src/billing-api",
            user_messages=["Always use pnpm here. Set up the deploy credentials.", "Thanks, now run the tests."],
            tool_calls=[("cat .env", secrets_text, 0), ("make test", "all 42 tests passed", 0)],
            extra_lines=canary_lines("/home/dana/src/billing-api"),
        ),
        "plain": write_rollout(
            home,
            created_at=NOW - timedelta(hours=26),
            cwd="/home/dana/src/storefront",
            user_messages=["From now on run make lint before committing."],
            tool_calls=[("make lint", "ok", 0)],
        ),
        "vscode": write_rollout(
            home,
            created_at=NOW - timedelta(hours=40),
            cwd="/home/dana/src/weather",
            source="vscode",
            user_messages=["Don't use requests, use httpx in this project."],
        ),
        "exec": write_rollout(
            home, created_at=NOW - timedelta(hours=28), source="exec", user_messages=["CANARY-EXEC-SESSION summarize"]
        ),
        "subagent": write_rollout(
            home,
            created_at=NOW - timedelta(hours=29),
            source={"subagent": "review"},
            user_messages=["CANARY-SUBAGENT-SESSION review this"],
        ),
    }


def run_phase1(home: Path, tmp_path: Path, server: OpenAITestServer | None = None, **overrides):
    options = {
        "codex_home": str(home),
        "db_url": f"sqlite:///{tmp_path / 'state.sqlite'}",
        "memory_root": str(tmp_path / "memories"),
        "provider": "openai" if server else "heuristic",
        "base_url": server.base_url if server else None,
        "max_rollouts_per_startup": 64,
        **overrides,
    }
    return report_of(phase1(overrides=SettingsOverrides(**options), return_state=True))


def open_store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")


def thread_id_of(path: Path) -> str:
    return path.stem.split("-", 6)[-1]


def request_bodies(server: OpenAITestServer) -> list[str]:
    return [json.dumps(request.body, ensure_ascii=False) for request in server.requests]


def test_interactive_sessions_are_extracted_and_only_model_visible_redacted_text_is_sent(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    corpus = write_corpus(home)
    with running_openai_server() as server:
        report = run_phase1(home, tmp_path, server)

    assert report.outcome_counts() == {"succeeded": 3}
    bodies = request_bodies(server)
    assert len(bodies) == 3
    sent = "\n".join(bodies)
    for name, value in SECRET_VALUES.items():
        assert value not in sent, f"secret {name} reached the model"
    for name, canary in CANARIES.items():
        assert canary not in sent, f"{name} text reached the model"
    assert "CANARY-EXEC-SESSION" not in sent and "CANARY-SUBAGENT-SESSION" not in sent
    assert "[REDACTED_SECRET]" in sent
    assert "Always use pnpm here" in sent  # what the user said does reach the model
    assert all(request.json_schema_name for request in server.requests)

    store = open_store(tmp_path)
    try:
        for name in ("secrets", "plain", "vscode"):
            output = store.get_stage1_output(thread_id_of(corpus[name]))
            assert output is not None and output.raw_memory.startswith("---")
        for name in ("exec", "subagent"):
            assert store.get_stage1_output(thread_id_of(corpus[name])) is None
        with store.engine.connect() as connection:
            dumped = "\n".join(
                str(row) for row in connection.execute(text("SELECT * FROM stage1_outputs UNION ALL SELECT * FROM stage1_outputs"))
            )
            jobs = connection.execute(text("SELECT status, COUNT(*) FROM jobs WHERE kind='memory_stage1' GROUP BY status")).all()
            usage = connection.execute(text("SELECT SUM(total_tokens) FROM jobs WHERE kind='memory_stage1'")).scalar()
        assert all(value not in dumped for value in SECRET_VALUES.values())
        assert dict(jobs) == {"done": 3}
        assert usage and usage > 0  # token usage stored per job
        assert store.get_job("memory_consolidate_global", "global").status == "pending"
    finally:
        store.close()


def test_a_second_run_makes_no_model_call(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    write_corpus(home)
    with running_openai_server() as server:
        run_phase1(home, tmp_path, server)
        calls = len(server.requests)
        again = run_phase1(home, tmp_path, server)
    assert len(server.requests) == calls
    assert again.outcome_counts() == {"skipped_no_candidates": 1}


def test_one_bad_rollout_never_fails_the_flow_and_each_failure_has_a_reason(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    corpus = write_corpus(home)

    def handler(request: RecordedRequest) -> ScriptedReply:
        if "storefront" in request.input_text:
            return ScriptedReply.http_error(400, "bad request")
        if "weather" in request.input_text:
            return ScriptedReply.output_text('{"raw_memory": "x", "unexpected": 1}')
        return default_handler(request)

    with running_openai_server(handler) as server:
        report = run_phase1(home, tmp_path, server)

    assert report.outcome_counts() == {"succeeded": 1, "failed_model_request": 1, "failed_invalid_output": 1}
    store = open_store(tmp_path)
    try:
        failed = store.get_job("memory_stage1", thread_id_of(corpus["plain"]))
        invalid = store.get_job("memory_stage1", thread_id_of(corpus["vscode"]))
        assert failed.status == "error" and failed.last_error.startswith("failed_model_request")
        assert invalid.status == "error" and invalid.last_error.startswith("failed_invalid_output")
        assert failed.retry_remaining == 2 and failed.retry_at is not None
    finally:
        store.close()


def test_transient_model_errors_are_retried_then_succeed(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    enable_memories(home)
    write_rollout(home, created_at=NOW - timedelta(hours=30), user_messages=["Always use pnpm here."])
    attempts: list[int] = []

    def flaky(request: RecordedRequest) -> ScriptedReply:
        attempts.append(1)
        if len(attempts) <= 2:
            return ScriptedReply.http_error(503 if len(attempts) == 1 else 429, "try again")
        return default_handler(request)

    with running_openai_server(flaky) as server:
        report = run_phase1(home, tmp_path, server)
    assert report.outcome_counts() == {"succeeded": 1}
    assert len(server.requests) == 3


def test_a_model_that_stays_down_is_a_named_failure_after_the_retries(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    enable_memories(home)
    path = write_rollout(home, created_at=NOW - timedelta(hours=30), user_messages=["Always use pnpm here."])
    with running_openai_server(lambda request: ScriptedReply.http_error(500, "down")) as server:
        report = run_phase1(home, tmp_path, server)
    assert report.outcome_counts() == {"failed_model_request": 1}
    assert len(server.requests) == 4  # the first call and three retries
    store = open_store(tmp_path)
    try:
        assert store.get_job("memory_stage1", thread_id_of(path)).last_error.startswith("failed_model_request")
    finally:
        store.close()


def test_output_that_fails_the_quality_check_is_not_stored(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    enable_memories(home)
    path = write_rollout(home, created_at=NOW - timedelta(hours=30), user_messages=["Always use pnpm here."])

    def no_front_matter(request: RecordedRequest) -> ScriptedReply:
        extraction = stage1_extraction_for(request)
        extraction["raw_memory"] = "just a sentence without front matter"
        extraction["rollout_slug"] = "Not A Valid Slug!"
        return ScriptedReply.output_text(json.dumps(extraction))

    with running_openai_server(no_front_matter) as server:
        report = run_phase1(home, tmp_path, server)
    assert report.outcome_counts() == {"failed_quality_check": 1}
    assert report.quality and any(not item["success"] for item in report.quality)
    store = open_store(tmp_path)
    try:
        assert store.get_stage1_output(thread_id_of(path)) is None
        error = store.get_job("memory_stage1", thread_id_of(path)).last_error
        assert error.startswith("failed_quality_check") and "slug" in error
    finally:
        store.close()


def test_chat_completions_mode_works_for_servers_without_responses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex_home"
    enable_memories(home)
    write_rollout(home, created_at=NOW - timedelta(hours=30), user_messages=["Always use pnpm here."])
    monkeypatch.setenv("CODEX_MEMORIES_API_MODE", "chat")
    with running_openai_server() as server:
        report = run_phase1(home, tmp_path, server)
    assert report.outcome_counts() == {"succeeded": 1}
    assert [request.path for request in server.requests] == ["/v1/chat/completions"]


def test_heuristic_provider_on_the_bundled_examples(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    shutil.copytree(EXAMPLES, home)
    report = run_phase1(home, tmp_path, ignore_age_windows=True)
    counts = report.outcome_counts()
    assert counts.get("succeeded", 0) >= 4 and not any(key.startswith("failed") for key in counts)
    assert report.discovery["damaged lines skipped"] >= 1
    store = open_store(tmp_path)
    try:
        with store.engine.connect() as connection:
            memories = "\n".join(row[0] for row in connection.execute(text("SELECT raw_memory FROM stage1_outputs")))
    finally:
        store.close()
    assert "pnpm" in memories
    assert "heuristic" in memories  # every heuristic output says where it came from
    assert "loves npm" not in memories  # the prompt injection in a tool output was ignored
    assert "sk-proj-" not in memories


def test_phase1_runs_with_codex_memory_feature_off_and_stops_only_when_generation_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex_home"
    write_corpus(home)
    (home / "config.toml").write_text("[features]\nmemories = false\n", encoding="utf-8")
    report = run_phase1(home, tmp_path)
    assert report.gate is None
    assert Outcome.skipped_feature_disabled.value not in report.outcome_counts()
    (home / "config.toml").write_text("[features]\nmemories = false\n[memories]\ngenerate_memories = false\n", encoding="utf-8")
    report = run_phase1(home, tmp_path)
    assert report.outcome_counts() == {Outcome.skipped_generation_disabled.value: 1}
    monkeypatch.setenv("CODEX_MEMORIES_GENERATE_MEMORIES", "true")  # our setting wins over Codex's key
    report = run_phase1(home, tmp_path)
    assert report.gate is None


def test_openai_provider_on_the_bundled_examples(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    shutil.copytree(EXAMPLES, home)
    with running_openai_server() as server:
        report = run_phase1(home, tmp_path, server, ignore_age_windows=True)
    counts = report.outcome_counts()
    assert counts.get("succeeded", 0) >= 4 and not any(key.startswith("failed") for key in counts)
    assert len(server.requests) == counts["succeeded"]
    sent = "\n".join(request_bodies(server))
    assert "sk-proj-" not in sent  # the planted key in a tool output was redacted before sending
    assert "pnpm" in sent  # what the user said reached the model
    # Harness text in the examples never does: developer messages, AGENTS.md and skill blocks.
    assert "permissions instructions" not in sent
    assert "AGENTS.md instructions for" not in sent
    assert "<skill>" not in sent


def test_secrets_in_the_model_output_reach_neither_the_db_nor_the_memory_folder(tmp_path: Path) -> None:
    from codex_memories_flows.phase2 import phase2

    home = tmp_path / "codex_home"
    enable_memories(home)
    write_rollout(home, created_at=NOW - timedelta(hours=30), cwd="/home/dana/src/app", user_messages=["Always use pnpm here."])
    leaked = "\n".join(f"- {value}" for value in PLANTED_SECRETS.values())

    def leaky(request: RecordedRequest) -> ScriptedReply:
        extraction = stage1_extraction_for(request)
        extraction["raw_memory"] += f"\nReusable knowledge:\n{leaked}\n"
        extraction["rollout_summary"] += f"\n{leaked}\n"
        return ScriptedReply.output_text(json.dumps(extraction))

    with running_openai_server(leaky) as server:
        report = run_phase1(home, tmp_path, server)
    assert report.outcome_counts() == {"succeeded": 1}
    phase2(
        overrides=SettingsOverrides(
            codex_home=str(home),
            db_url=f"sqlite:///{tmp_path / 'state.sqlite'}",
            memory_root=str(tmp_path / "memories"),
            provider="heuristic",
        ),
        force=True,
    )
    store = open_store(tmp_path)
    try:
        with store.engine.connect() as connection:
            stored = "\n".join(str(row) for row in connection.execute(text("SELECT * FROM stage1_outputs")))
    finally:
        store.close()
    written = "\n".join(
        path.read_text(encoding="utf-8") for path in (tmp_path / "memories").rglob("*.md") if ".git" not in path.parts
    )
    assert "[REDACTED_SECRET]" in stored and "[REDACTED_SECRET]" in written
    for name, value in SECRET_VALUES.items():
        assert value not in stored, f"{name} reached the DB"
        assert value not in written, f"{name} reached the memory folder"


def test_one_line_with_a_list_or_object_where_a_string_belongs_costs_that_line_only(tmp_path: Path) -> None:
    """Issue 11 item 6: one such line used to stop phase 1 (30 of 30 sessions without memory),
    and inside a transcript it became `failed_model_request: TypeError: unhashable type: 'list'`."""
    home = tmp_path / "codex_home"
    enable_memories(home)
    damaged = [
        {"type": ["response_item"], "payload": {"type": "message", "role": "user", "content": []}},
        {"type": "response_item", "payload": {"type": {"nested": "message"}, "role": "user"}},
        {"type": "response_item", "payload": {"type": "message", "role": ["user"], "content": []}},
        {"type": "event_msg", "payload": {"type": ["agent_message"], "message": "x"}},
        # Model-visible items whose fields hold lists: kept for the model, and usable offline.
        {"type": "response_item", "payload": {"type": "function_call", "name": ["shell"], "arguments": "{}", "call_id": "x1"}},
        {
            "type": "response_item",
            "payload": {
                "type": "function_call", "name": "shell", "call_id": "x2",
                "arguments": json.dumps({"command": ["bash", "-lc", "make lint"], "workdir": ["/src"]}),
            },
        },
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "x2", "output": "Exit code: 0"}},
        {"type": "response_item", "payload": {"type": "local_shell_call", "call_id": ["x3"], "action": ["ls"]}},
    ]
    for number in range(30):
        write_rollout(
            home,
            created_at=NOW - timedelta(hours=20 + number),
            cwd=f"/home/dana/src/project-{number}",
            user_messages=[f"Always run make check in project {number}."],
            tool_calls=[("make check", "ok", 0)],
            extra_lines=damaged if number == 7 else (),
        )

    report = run_phase1(home, tmp_path)

    assert report.outcome_counts() == {"succeeded": 30}
    assert report.discovery["damaged lines skipped"] == 4
    assert report.discovery["damaged lines skipped: type_not_a_string"] == 1
    assert report.discovery["damaged lines skipped: payload_type_not_a_string"] == 2
    assert report.discovery["damaged lines skipped: role_not_a_string"] == 1
    store = open_store(tmp_path)
    try:
        assert scalar_count(store, "SELECT COUNT(*) FROM stage1_outputs") == 30
    finally:
        store.close()


def scalar_count(store: MemoryStore, sql: str) -> int:
    with store.engine.connect() as connection:
        return connection.execute(text(sql)).scalar_one()


def test_a_run_warns_when_codex_own_memory_feature_would_rewrite_our_folder(tmp_path: Path) -> None:
    home = tmp_path / "codex_home"
    write_corpus(home)
    enable_memories(home)  # [features] memories = true, and our folder is Codex's own
    report = run_phase1(home, tmp_path, memory_root=str(home / "memories"))
    assert report.warning is not None and "ON for the folder we write" in report.warning
    assert "memories = false" in report.warning
    assert report.warning in render_phase1_text(report)

    (home / "config.toml").write_text("[features]\nmemories = false\n", encoding="utf-8")
    assert run_phase1(home, tmp_path, memory_root=str(home / "memories")).warning is None
