"""Record a real Codex 0.171 TUI rollout as a test fixture (tests/fixtures/rollouts/).

    .venv/bin/python -m tests.support.record_rollout_fixture tests/fixtures/rollouts/codex-0.171-tui.jsonl
    .venv/bin/python -m tests.support.record_rollout_fixture --fork tests/fixtures/rollouts/codex-0.171-fork

One interactive session against the test server: the project has an AGENTS.md and the prompt
uses a skill (harness text that must not reach phase 1), the model runs one shell command, and
the final reply ends with an `<oai-mem-citation>` block. The file is copied byte for byte.
`--fork`: a `codex exec` session and a `codex exec fork` of it (parent and child rollouts).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.codex_cli import (
    CODEX_NPM_VERSION,
    CodexHome,
    _for_user_turns,
    citation_block,
    codex_binary,
    run_codex_tui,
    write_skill,
)
from tests.support.openai_server import RecordedRequest, ScriptedReply, ToolCall, running_openai_server

CITED_THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"
USER_WORDS = "Use $fixture-skill. PREF: deploy with ./ship.sh --canary (OSPREY-2044)"
AGENTS_CANARY = "AGENTSCANARY-0171 project rules from AGENTS.md"
SKILL_CANARY = "SKILLCANARY-0171 body of the skill"
SHELL_CALL = "call_fixture_0171_shell"


def _answer(request: RecordedRequest) -> ScriptedReply:
    outputs = {item.get("call_id") for item in request.body.get("input") or [] if item.get("type") == "function_call_output"}
    if SHELL_CALL in outputs:
        return ScriptedReply.output_text(f"Deployed with the canary flag.\n\n{citation_block([CITED_THREAD])}")
    return ScriptedReply.function_calls(ToolCall("exec_command", '{"cmd": "echo fixture-shell-0171"}', SHELL_CALL))


def record(target: Path) -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="record-0171-"))
    try:
        with running_openai_server(_for_user_turns(_answer)) as server:
            home = CodexHome.create(scratch / "home", server, binary=codex_binary(CODEX_NPM_VERSION))
            home.write_config()
            project = scratch / "project"
            project.mkdir()
            (project / "AGENTS.md").write_text(f"{AGENTS_CANARY}\n", encoding="utf-8")
            write_skill(home, "fixture-skill", SKILL_CANARY)
            result = run_codex_tui(home, USER_WORDS, cwd=project, server=server, expect="Deployed with the canary flag.")
            if result.returncode != 0 or result.rollout is None:
                raise RuntimeError(f"the TUI session failed:\n{result.pane}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(result.rollout, target)
            return target
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


PARENT_WORDS = "PARENT-WORDS-0171 the first session"
CHILD_WORDS = "CHILD-WORDS-0171 said only in the fork"


def record_fork(folder: Path) -> list[Path]:
    from tests.support.codex_cli import rollout_files, run_codex_exec, session_meta, text_reply

    scratch = Path(tempfile.mkdtemp(prefix="record-0171-fork-"))
    try:
        with running_openai_server(text_reply("Noted.")) as server:
            home = CodexHome.create(scratch / "home", server, binary=codex_binary(CODEX_NPM_VERSION))
            home.write_config()
            project = scratch / "project"
            project.mkdir()
            if run_codex_exec(home, PARENT_WORDS, cwd=project, server=server).returncode != 0:
                raise RuntimeError("the parent session failed")
            parent = session_meta(rollout_files(home)[0])["id"]
            flags = ["--strict-config", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
            forked = subprocess.run(
                [str(home.codex), "exec", *flags, "fork", parent, CHILD_WORDS],
                cwd=project, env=home.env(), capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
            )
            if forked.returncode != 0:
                raise RuntimeError(f"codex exec fork failed: {forked.stderr[-2000:]}")
            folder.mkdir(parents=True, exist_ok=True)
            copies = []
            for path in rollout_files(home):
                shutil.copyfile(path, folder / path.name)
                copies.append(folder / path.name)
            return copies
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1] == "--fork":
        print(record_fork(Path(sys.argv[2])))
    else:
        print(record(Path(sys.argv[1])))
