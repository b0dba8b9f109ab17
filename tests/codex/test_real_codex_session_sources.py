"""Every way a Codex session starts gets the project's rules, sub-agents included (issue 35.2).

On both pinned versions (0.147.0 from PyPI, 0.171.0 from npm), with our hooks as `codex-memories
install` writes them:
- a session that auto-compacts (`model_auto_compact_token_limit` far below what a few long shell
  outputs cost) fires SessionStart again with `source: "compact"`, and the first model request
  after the compaction request carries the project's rule in our developer message (measured:
  with the old matcher `startup|resume|clear` that request carried nothing of ours);
- a sub-agent spawned through `multi_agent_v1.spawn_agent` fires SubagentStart (both versions
  have it), and the sub-agent's own request (`thread_source: "subagent"`) carries the rule.
Asserted on what the model server receives.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from codex_memories.read.hook_log import hook_log_path
from codex_memories.read.injection import HEADER
from tests.codex.test_real_codex_hooks import HOOK_BYPASS, codex_memories
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    developer_texts,
    git_checkout,
    is_user_turn,
    request_kind,
    run_codex_exec,
    thread_source,
)
from tests.support.openai_server import OpenAITestServer, RecordedRequest, ScriptedReply, ToolCall

pytestmark = [pytest.mark.codex]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

ORIGIN = "git@github.com:acme/atlas.git"
PROJECT_RULE = "Never edit migrations/legacy by hand (HERON-5511)"
USER_RULE = "Commit messages in the imperative (KITE-2024)"
# Each shell call prints about 14,000 characters (the test server counts 4 per token), so two
# calls pass the limit and Codex compacts in the middle of the turn.
LONG_OUTPUT_COMMAND = "seq 1 3000"
COMPACT_TOKEN_LIMIT = 9_000
SHELL_CALLS = 5


def write_memory(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    handbook = [
        "# Task Group: user-level (every project)", "scope: user-level", "applies_to: cwd=any; reuse_rule=applies in every project", "",
        "## User preferences", f"- {USER_RULE} [Task 1]", "",
        "# Task Group: github.com/acme/atlas", "scope: atlas",
        "applies_to: cwd=/src/atlas; reuse_rule=only here; project=github.com/acme/atlas", "",
        "## User preferences", f"- {PROJECT_RULE} [Task 1]", "",
    ]
    (root / "MEMORY.md").write_text("\n".join(handbook), encoding="utf-8")
    summary = "v1\n\n## What's in Memory\n\n### project=github.com/acme/atlas\n- atlas migrations and releases\n"
    (root / "memory_summary.md").write_text(summary, encoding="utf-8")


def checkout(tmp_path: Path) -> Path:
    return git_checkout(tmp_path / "src" / "atlas", ORIGIN)


def function_outputs(request: RecordedRequest) -> dict[str, object]:
    return {
        item.get("call_id"): item.get("output")
        for item in (request.body or {}).get("input") or []
        if item.get("type") == "function_call_output"
    }


def carries_our_rules(request: RecordedRequest) -> bool:
    ours = [text for text in developer_texts(request) if text.startswith(HEADER.split("\n", 1)[0])]
    return any(PROJECT_RULE in text and USER_RULE in text for text in ours)


@pytest.fixture
def installed_home(codex_home: CodexHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CodexHome:
    for name in [n for n in os.environ if n.startswith(("CODEX_MEMORIES_", "OPENAI_"))] + ["CODEX_HOME"]:
        monkeypatch.delenv(name, raising=False)
    write_memory(codex_home.memories_dir)
    installed = codex_memories(codex_home, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    hooks = json.loads((codex_home.path / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    assert "matcher" not in hooks["SessionStart"][0] and "SubagentStart" in hooks
    return codex_home


@versions
def test_the_first_request_after_an_auto_compaction_carries_the_projects_rules(
    codex_version: str, installed_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path
) -> None:
    installed_home.extra_top_level["model_auto_compact_token_limit"] = COMPACT_TOKEN_LIMIT
    installed_home.write_config()
    atlas = checkout(tmp_path)
    calls = {"made": 0}

    def handler(request: RecordedRequest) -> ScriptedReply:
        if request_kind(request) == "compaction" or not is_user_turn(request):
            return ScriptedReply.output_text("Summary: the user ran long listings in atlas.")
        if calls["made"] < SHELL_CALLS:
            calls["made"] += 1
            return ScriptedReply.function_calls(
                ToolCall("exec_command", json.dumps({"cmd": LONG_OUTPUT_COMMAND}), f"call_listing_{calls['made']}")
            )
        return ScriptedReply.output_text("Done.")

    codex_server.set_handler(handler)
    result = run_codex_exec(installed_home, "list the numbers a few times", cwd=atlas, server=codex_server,
                            extra_args=HOOK_BYPASS, timeout=180)

    assert result.returncode == 0, result.stderr[-3000:]
    requests = list(codex_server.requests)
    kinds = [request_kind(request) for request in requests]
    assert "compaction" in kinds, kinds
    first_compaction = kinds.index("compaction")
    after = [request for request in requests[first_compaction + 1 :] if is_user_turn(request) and request_kind(request) != "compaction"]
    assert after, "the turn went on after the compaction"
    assert carries_our_rules(requests[0]), "the session's first request has the rules"
    assert carries_our_rules(after[0]), "the first request after the compaction has them again"
    assert all(carries_our_rules(request) for request in after)
    log = hook_log_path(installed_home.path).read_text(encoding="utf-8")
    assert "SessionStart injected_memory_summary" in log and "source compact" in log, log


@versions
def test_a_sub_agents_own_request_carries_the_projects_rules(
    codex_version: str, installed_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path
) -> None:
    atlas = checkout(tmp_path)

    def handler(request: RecordedRequest) -> ScriptedReply:
        if thread_source(request) == "subagent":
            return ScriptedReply.output_text("Sub-agent: nothing to change.")
        if not is_user_turn(request):
            return ScriptedReply.output_text("Nothing to do.")
        outputs = function_outputs(request)
        if "call_spawn" not in outputs:
            return ScriptedReply.function_calls(
                ToolCall("spawn_agent", json.dumps({"message": "check the migrations folder"}), "call_spawn", namespace="multi_agent_v1")
            )
        if "call_wait" not in outputs:
            # Wait for the sub-agent, or `codex exec` ends the session before it sent anything.
            agent_ids = UUID.findall(str(outputs["call_spawn"]))
            return ScriptedReply.function_calls(
                ToolCall("wait_agent", json.dumps({"targets": agent_ids[:1], "timeout_ms": 60_000}), "call_wait", namespace="multi_agent_v1")
            )
        return ScriptedReply.output_text("The helper found nothing to change.")

    codex_server.set_handler(handler)
    result = run_codex_exec(installed_home, "ask a helper to look at the migrations", cwd=atlas, server=codex_server,
                            extra_args=HOOK_BYPASS, timeout=180)

    assert result.returncode == 0, result.stderr[-3000:]
    sub_agent = [request for request in codex_server.requests if thread_source(request) == "subagent"]
    assert sub_agent, [thread_source(request) for request in codex_server.requests]
    log = hook_log_path(installed_home.path).read_text(encoding="utf-8")
    assert carries_our_rules(sub_agent[0]), log.replace("\n", " || ")
    assert "SubagentStart injected_memory_summary" in hook_log_path(installed_home.path).read_text(encoding="utf-8")
