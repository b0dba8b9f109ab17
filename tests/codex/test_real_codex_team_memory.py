"""Team memory reaches a real Codex session after AGENTS.md (issue 15), on both pinned versions.

A repository with an AGENTS.md ("Never use requests") and the team memory file our `export`
wrote from two stage-1 memories of that project (one says "use requests", which contradicts
AGENTS.md; one is a fact); a third memory from another project. `codex-memories install` adds
our hooks; one `codex exec --dangerously-bypass-hook-trust` in a subfolder of the repository.
The model server receives AGENTS.md as Codex sends it, and our SessionStart text as one developer
message: the team memory, saying memory is history and AGENTS.md the rule, with the fact, without
the contradicting line or the other project's memory. After `codex-memories forget --match`, the
line is gone from the file and from what the next session's model request holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.memory_folder.team_memory import BEGIN_MARKER, team_memory_context
from codex_memories.read.hook_log import hook_log_path
from codex_memories.runtime import close_stores, open_store
from tests.codex import test_real_codex_hooks
from tests.codex.test_real_codex_hooks import HOOK_BYPASS, codex_memories, default_db_url, input_messages
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    run_codex_exec,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.memory_home import remember as remember_thread
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]
# The environment fixture of the hook tests (no CODEX_*/OPENAI_* variables of the machine).
pipeline_env = test_real_codex_hooks.pipeline_env
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

FACT = "integration tests need `make db-up` first (HERON-4410)"
CONTRADICTING = "use requests for every HTTP call (STORK-118)"
OTHER_PROJECT = "use yarn workspaces (EGRET-77)"


def remember(home: CodexHome, thread_id: str, origin: str, *bullets: str) -> None:
    raw = "### Task 1: work\n\nPreference signals:\n" + "".join(f"- {bullet}\n" for bullet in bullets)
    remember_thread(open_store(default_db_url(home)), thread_id, raw_memory=raw, cwd="/somewhere/else", git_origin_url=origin)
    close_stores()


def as_a_user(home: CodexHome, *args: str) -> subprocess.CompletedProcess[str]:
    """Our CLI with this Codex home, for the commands that take no Codex binary (`export`, `forget`)."""
    command = Path(sys.executable).with_name("codex-memories")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
    env["CODEX_HOME"] = str(home.path)
    return subprocess.run([str(command), *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def export_as_a_user(home: CodexHome, project: Path) -> subprocess.CompletedProcess[str]:
    return as_a_user(home, "export", "--project", str(project))


@versions
def test_the_team_memory_reaches_the_session_after_agents_md_without_the_contradicting_line(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    (codex_workdir / ".git").mkdir()
    (codex_workdir / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/app.git\n', encoding="utf-8")
    (codex_workdir / "AGENTS.md").write_text("# Rules of this repository\n\n- Never use requests; use httpx.\n", encoding="utf-8")
    (codex_workdir / "src").mkdir()
    remember(codex_home, "thread-app-1", "https://github.com/acme/app.git", CONTRADICTING)
    remember(codex_home, "thread-app-2", "git@github.com:acme/app.git", FACT)
    remember(codex_home, "thread-other", "git@github.com:acme/other.git", OTHER_PROJECT)

    exported = export_as_a_user(codex_home, codex_workdir / "src")
    assert exported.returncode == 0, exported.stderr
    team_file = codex_workdir / paths.TEAM_MEMORY_FILE
    team_text = team_file.read_text(encoding="utf-8")
    assert FACT in team_text and CONTRADICTING in team_text and OTHER_PROJECT not in team_text
    assert codex_memories(codex_home, "install").returncode == 0

    codex_server.set_handler(with_pipeline_requests(text_reply("Use httpx.")))
    codex_server.clear_requests()
    result = run_codex_exec(codex_home, "How do I call the API?", cwd=codex_workdir / "src", server=codex_server, extra_args=HOOK_BYPASS)
    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    messages = input_messages(request)

    # What we meant to send is what the model server got, as one developer message.
    expected = team_memory_context(codex_workdir / "src", 5000)
    assert expected is not None
    developer = [text for role, text in messages if role == "developer"]
    assert expected.text in developer
    assert "Memory is\nhistory, AGENTS.md is the rule" in expected.text
    memory_part = expected.text.split(BEGIN_MARKER)[1]
    assert FACT in memory_part and "STORK-118" not in expected.text and "EGRET-77" not in expected.text
    assert "`requests`: AGENTS.md forbids it" in expected.text
    # Codex itself sent AGENTS.md; nothing of ours repeats the contradicting memory anywhere.
    assert any("Never use requests" in text for _, text in messages)
    assert not any("STORK-118" in text for _, text in messages)
    log = hook_log_path(codex_home.path).read_text(encoding="utf-8")
    assert "SessionStart injected_team_memory" in log and "failed_" not in log


@versions
def test_a_line_forgotten_after_the_export_no_longer_reaches_the_session(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None
) -> None:
    kept = "run `make lint` before pushing (KITE-902)"
    (codex_workdir / ".git").mkdir()
    (codex_workdir / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/app.git\n', encoding="utf-8")
    remember(codex_home, "thread-app", "git@github.com:acme/app.git", FACT, kept)
    assert export_as_a_user(codex_home, codex_workdir).returncode == 0
    team_file = codex_workdir / paths.TEAM_MEMORY_FILE
    assert "HERON-4410" in team_file.read_text(encoding="utf-8")
    assert codex_memories(codex_home, "install").returncode == 0

    forgot = as_a_user(codex_home, "forget", "--match", "heron-4410")
    assert forgot.returncode == 0, forgot.stderr
    assert f"  team memory file {team_file}: 1 generated line(s) removed" in forgot.stdout.splitlines()
    assert "HERON-4410" not in team_file.read_text(encoding="utf-8")

    codex_server.set_handler(with_pipeline_requests(text_reply("Run the linter.")))
    codex_server.clear_requests()
    result = run_codex_exec(codex_home, "What should I do before pushing?", cwd=codex_workdir, server=codex_server, extra_args=HOOK_BYPASS)
    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    messages = input_messages(request)
    assert any("KITE-902" in text for role, text in messages if role == "developer")
    assert not any("HERON-4410" in text for _, text in messages)
