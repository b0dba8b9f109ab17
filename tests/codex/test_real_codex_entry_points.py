"""One memory for every entry point, and a broken hook that says so, with the real Codex CLI.

On both pinned versions (0.147.0 from PyPI, 0.171.0 from npm):
- `codex-memories install --trust`, run from a shell whose memory root and state DB come from
  `CODEX_MEMORIES_*` variables, pins them; a plain `codex exec` started WITHOUT those variables
  (as from an IDE or a script) then gets that memory: asserted on the request the model test
  server receives, and on the hook log.
- A hook launcher whose Python environment is gone (a moved checkout or venv) shows its message
  with the fix in Codex's TUI (the hook's systemMessage; `codex exec` shows no hook message on
  either version, see codex_memories/read/hook_notices.py), and the session's request still goes out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories.codex.hooks_file import hooks_path
from codex_memories.codex.install import install
from codex_memories.codex.launcher import FALLBACK_EXECUTABLE, LauncherTarget, current_target
from codex_memories.read.hook_log import HookOutcome, hook_log_path
from codex_memories.read.hook_notices import PREFIX
from codex_memories.settings_sources import pinned_settings_path
from tests.codex.test_real_codex_hooks import input_messages, wait_for_log
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    run_codex_exec,
    run_codex_tui,
    text_reply,
    user_turn_requests,
)
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

FACT = "HERON-4412"
SUMMARY = (
    "# Memory summary\n\n## What's in Memory\n\n### user-level (every project)\n"
    f"- release builds are signed with the team key on the build box ({FACT})\n"
)
QUESTION = "How are release builds signed here?"


@pytest.fixture
def no_variables_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith(("CODEX_MEMORIES_", "OPENAI_"))] + ["CODEX_HOME"]:
        monkeypatch.delenv(name, raising=False)


@versions
def test_a_codex_exec_started_without_our_variables_gets_the_memory_install_pinned_from_the_shell(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, tmp_path: Path,
    no_variables_of_ours: None,
) -> None:
    memory_root = tmp_path / "team-memory"
    memory_root.mkdir()
    (memory_root / "memory_summary.md").write_text(SUMMARY, encoding="utf-8")
    db_url = f"sqlite:///{tmp_path / 'team-state.sqlite'}"
    shell = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
    shell |= {"CODEX_HOME": str(codex_home.path), "CODEX_MEMORIES_MEMORY_ROOT": str(memory_root), "CODEX_MEMORIES_DB_URL": db_url}
    # No MCP registration here (no codex binary given): this test is about the hooks.
    installed = subprocess.run(
        [str(Path(sys.executable).with_name("codex-memories")), "install", "--trust", "--codex-binary", str(tmp_path / "no-codex")],
        env=shell, capture_output=True, text=True, timeout=120, check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    pinned = json.loads(pinned_settings_path(codex_home.path).read_text(encoding="utf-8"))
    assert (pinned["memory_root"], pinned["db_url"]) == (str(memory_root), db_url)

    codex_server.set_handler(text_reply("Signed with the team key."))
    # The harness's environment has CODEX_HOME and none of CODEX_MEMORIES_* (CodexHome.env).
    assert not any(name.startswith("CODEX_MEMORIES_") and name != "CODEX_MEMORIES_TEST_API_KEY" for name in codex_home.env())
    result = run_codex_exec(codex_home, QUESTION, cwd=codex_workdir, server=codex_server)

    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    developer = [text for role, text in input_messages(request) if role == "developer"]
    assert any(FACT in text for text in developer), developer
    wait_for_log(codex_home, f"SessionStart {HookOutcome.injected_memory_summary.value}")
    assert HookOutcome.skipped_no_memory_summary.value not in hook_log_path(codex_home.path).read_text(encoding="utf-8")
    assert not (codex_home.path / "memories").exists()


def _path_without_our_hook() -> str:
    """This PATH minus any folder holding a `codex-memories-hook` (the launcher's fallback), so
    that nothing can stand in for the environment the test removes; `node` (0.171) stays."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(folder for folder in folders if not (Path(folder) / FALLBACK_EXECUTABLE).exists())


@versions
def test_a_broken_hook_launcher_shows_its_fix_in_codex_and_the_session_request_still_goes_out(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, tmp_path: Path,
    no_variables_of_ours: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    codex_home.write_memory_summary(SUMMARY)
    environment = tmp_path / "moved-venv"
    python = environment / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    ours = current_target(codex_home.path)
    target = LauncherTarget(python=str(python), hook_module=ours.hook_module, log=ours.log)
    install(codex_home.path, codex_home.memories_dir, Path(sys.executable).with_name("codex-memories"), trust=True,
            launcher_target=target, codex_binary=tmp_path / "no-codex")
    assert hooks_path(codex_home.path).is_file()
    shutil.rmtree(environment)  # the checkout moved: the recorded interpreter is gone
    monkeypatch.setenv("PATH", _path_without_our_hook())
    codex_server.set_handler(text_reply("Signed with the team key."))

    # `codex exec`: the session goes on, its request goes out, the log says why there was no memory.
    result = run_codex_exec(codex_home, QUESTION, cwd=codex_workdir, server=codex_server)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Signed with the team key." in result.stdout
    [request] = user_turn_requests(codex_server)
    assert not any(FACT in text for _, text in input_messages(request))
    wait_for_log(codex_home, f"SessionStart {HookOutcome.failed_hook_environment_missing.value}")

    # The TUI: the person sees the hook's message, with the command that fixes it, and the turn runs.
    # run_codex_tui waits until `expect` is on the screen (a TimeoutError with the pane otherwise).
    tui = run_codex_tui(codex_home, QUESTION, cwd=codex_workdir, server=codex_server, expect=f"{PREFIX}: the Python environment")
    assert tui.returncode == 0, tui.pane
    assert len(user_turn_requests(codex_server)) >= 2
    if codex_version == CODEX_VERSIONS[0]:  # 0.147 leaves its transcript on the pane after /quit
        shown = " ".join(tui.pane.split())
        assert "SessionStart (completed) says: codex-memories: this session has no memory" in shown
        assert "codex-memories install" in shown
