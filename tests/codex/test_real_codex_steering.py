"""Steering reaches a real Codex session at once, on both pinned versions (issues 29 and 30).

A note written with `codex-memories note` is in the next `codex exec`'s SessionStart message,
as the command says; after `codex-memories forget --match`, the forgotten code name is in no
request the model server receives (not a line, not a file name), while the rest of the memory
still arrives, so the absence is the forget's doing and not a silent hook.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.memory_folder.workspace import ensure_git_baseline
from codex_memories.read.injection import HEADER, NOTES_HEADING
from tests.support.codex_cli import CODEX_VERSIONS, CodexHome, developer_texts, is_user_turn, run_codex_exec, text_reply
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

SUMMARY_STEM = "2026-11-30T10-00-00-abcd-project_falcon_deploy"


def write_memory(root: Path) -> None:
    """A user-level handbook and summary, a rollout summary and a note named after the code name."""
    (root / paths.ROLLOUT_SUMMARIES_DIR).mkdir(parents=True)
    (root / paths.MEMORY_FILE).write_text(
        "# Task Group: user-level (every project)\nscope: user-level (every project)\n"
        "applies_to: cwd=any; reuse_rule=applies in every project\n\n## Task 1: deploys, outcome: success\n\n"
        f"### rollout_summary_files\n- rollout_summaries/{SUMMARY_STEM}.md (cwd=/src/app)\n\n### keywords\n- deploys\n\n"
        "## User preferences\n- Project Falcon ships only on Fridays (KESTREL-31) [Task 1]\n"
        "- Keep tabs in Makefiles (OTTER-902) [Task 1]\n",
        encoding="utf-8",
    )
    (root / paths.MEMORY_SUMMARY_FILE).write_text(
        "v1\n\n## User Profile\nA developer who deploys often.\n\n## What's in Memory\n### user-level\n"
        f"- deploy notes: rollout_summaries/{SUMMARY_STEM}.md\n- Makefile tabs (OTTER-902)\n",
        encoding="utf-8",
    )
    (root / paths.rollout_summary_path(SUMMARY_STEM)).write_text("thread_id: x\n\nDeployed Project Falcon to staging.\n", encoding="utf-8")
    old = 1_700_000_000_000_000_000
    os.utime(root / paths.MEMORY_FILE, ns=(old, old))  # consolidated long ago: later notes are pending


def codex_memories(codex_home: CodexHome, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Our CLI as the user runs it; `cwd` is where they type it (a note keeps that project)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CODEX_", "OPENAI_"))}
    env["CODEX_HOME"] = str(codex_home.path)
    command = [str(Path(sys.executable).with_name("codex-memories")), *arguments]
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def our_message(server: OpenAITestServer, since: int = 0) -> str:
    """Our SessionStart message in the one user turn sent after the first `since` requests."""
    [request] = [request for request in server.requests[since:] if is_user_turn(request)]
    [ours] = [text for text in developer_texts(request) if text.startswith(HEADER.split("\n", 1)[0])]
    return ours


def everything_sent(server: OpenAITestServer, since: int = 0) -> str:
    return "\n".join(str(request.body) for request in server.requests[since:]).casefold()


@pytest.fixture
def installed(codex_home: CodexHome, monkeypatch: pytest.MonkeyPatch) -> CodexHome:
    for name in [name for name in os.environ if name.startswith("CODEX_MEMORIES_")]:
        monkeypatch.delenv(name)
    write_memory(codex_home.memories_dir)
    codex_memories(codex_home, "install", "--codex-binary", str(codex_home.codex))
    return codex_home


@versions
def test_a_note_reaches_the_next_session_at_once_as_the_note_command_says(
    codex_version: str, installed: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path
) -> None:
    said = codex_memories(installed, "note", "Remember that the staging DB is read-only (HERON-77).", cwd=codex_workdir)
    assert "The next Codex session sees it at once" in said.stdout
    codex_server.set_handler(text_reply("ok"))

    result = run_codex_exec(installed, "which database can I write to?", cwd=codex_workdir, server=codex_server,
                            extra_args=["--dangerously-bypass-hook-trust"])

    assert result.returncode == 0, result.stderr[-3000:]
    ours = our_message(codex_server)
    assert NOTES_HEADING in ours
    assert ours.index(NOTES_HEADING) < ours.index("Remember that the staging DB is read-only (HERON-77).")


@versions
def test_after_a_forget_match_the_code_name_reaches_no_request_while_the_rest_still_does(
    codex_version: str, installed: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path
) -> None:
    ensure_git_baseline(installed.memories_dir)
    codex_memories(installed, "note", "Project Falcon launches in May (PLOVER-8).", cwd=codex_workdir)
    codex_server.set_handler(text_reply("ok"))
    before = run_codex_exec(installed, "when do we ship?", cwd=codex_workdir, server=codex_server,
                            extra_args=["--dangerously-bypass-hook-trust"])
    assert before.returncode == 0, before.stderr[-3000:]
    assert "kestrel-31" in everything_sent(codex_server) and "plover-8" in everything_sent(codex_server)
    assert "falcon" in everything_sent(codex_server)  # the test can fail: the name did arrive

    forgot = codex_memories(installed, "forget", "--match", "project falcon")
    assert "Sessions stop seeing it now" in forgot.stdout
    since = len(codex_server.requests)
    after = run_codex_exec(installed, "when do we ship Project Phoenix?", cwd=codex_workdir, server=codex_server,
                           extra_args=["--dangerously-bypass-hook-trust"])

    assert after.returncode == 0, after.stderr[-3000:]
    sent = everything_sent(codex_server, since)
    assert "otter-902" in our_message(codex_server, since).casefold()  # the memory still arrives
    assert "falcon" not in sent and "kestrel-31" not in sent and "plover-8" not in sent
    assert f"rollout_summaries/{SUMMARY_STEM.replace('project_falcon_', '')}.md" in our_message(codex_server, since)
