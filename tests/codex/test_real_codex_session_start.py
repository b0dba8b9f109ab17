"""What a month-sized memory folder gives a real Codex session at SessionStart (issue 27).

On both pinned versions: with a handbook and a summary far over Codex's hook limit (10,000 bytes,
where Codex cuts a hook's context to a head and a tail and spills the whole text into a
world-readable file), the developer message our SessionStart hook adds arrives whole, first with
this project's rules and the user-level ones, without another project's rule, and Codex writes no
spill file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories.read.injection import HEADER
from codex_memories.tokens import CODEX_HOOK_CONTEXT_LIMIT_TOKENS, codex_token_count
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    developer_texts,
    run_codex_exec,
    text_reply,
    user_turn_requests,
)
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

ORIGINS = {"atlas": "git@github.com:acme/atlas.git", "billing": "git@github.com:acme/billing.git"}
ATLAS_RULE = "Never edit migrations/legacy by hand (HERON-5511)"
USER_RULE = "Answer in English, commit messages in the imperative (KITE-2024)"
BILLING_RULE = "Billing deploys only from the release branch (OSPREY-7788)"
FILLER = "then checked the dashboards, retried the flaky job and wrote down what changed in the runbook"


def group(title: str, applies_to: str, preferences: list[str], knowledge: list[str]) -> list[str]:
    lines = [f"# Task Group: {title}", f"scope: {title}", f"applies_to: {applies_to}", ""]
    for number in range(1, 31):
        lines += [f"## Task {number}: session {number} of {title}, outcome: success", "", "### keywords", f"- {title}, {number}", ""]
    lines += ["## User preferences", *[f"- {rule} [Task 1]" for rule in preferences], ""]
    lines += ["## Reusable knowledge", *[f"- {fact} [Task {index % 30 + 1}]" for index, fact in enumerate(knowledge)], ""]
    return lines


def write_month_of_memory(root: Path) -> None:
    root.mkdir(parents=True)
    handbook = [
        *group("user-level (every project)", "cwd=any; reuse_rule=applies in every project", [USER_RULE], []),
        *group("github.com/acme/atlas", "cwd=/src/atlas; reuse_rule=only here; project=github.com/acme/atlas", [ATLAS_RULE],
               [f"atlas fact {index}: {FILLER}" for index in range(120)]),
        *group("github.com/acme/billing", "cwd=/src/billing; reuse_rule=only here; project=github.com/acme/billing", [BILLING_RULE],
               [f"billing fact {index}: {FILLER}" for index in range(120)]),
    ]
    (root / "MEMORY.md").write_text("\n".join(handbook), encoding="utf-8")
    index = ["v1", "", "## User Profile", "A developer with two services.", "", "## What's in Memory"]
    for project in ("atlas", "billing"):
        index += [f"### project=github.com/acme/{project}", "#### 2026-11-30"]
        index += [f"- {project} topic {number}: {FILLER}\n  - learnings: step {number}" for number in range(60)]
    summary = "\n".join(index)
    assert len(summary.encode()) > 10_000 and len("\n".join(handbook).encode()) > 40_000
    (root / "memory_summary.md").write_text(summary, encoding="utf-8")


def checkout(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "src" / name
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", ORIGINS[name]], check=True)
    return folder.resolve()


@versions
def test_a_month_sized_folder_reaches_the_session_whole_with_the_projects_rules_first(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # where Codex would spill a cut hook output
    for name in [name for name in os.environ if name.startswith("CODEX_MEMORIES_")]:
        monkeypatch.delenv(name)
    write_month_of_memory(codex_home.memories_dir)
    atlas = checkout(tmp_path, "atlas")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))} | {"CODEX_HOME": str(codex_home.path)}
    installed = subprocess.run(
        [str(Path(sys.executable).with_name("codex-memories")), "install", "--codex-binary", str(codex_home.codex)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    codex_server.set_handler(text_reply("ok"))

    result = run_codex_exec(codex_home, "what should I watch out for in the migrations?", cwd=atlas, server=codex_server,
                            extra_args=["--dangerously-bypass-hook-trust"])

    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    [ours] = [text for text in developer_texts(request) if text.startswith(HEADER.split("\n", 1)[0])]
    assert "truncated output" not in ours and "Full hook output saved to" not in ours
    assert codex_token_count(ours) < CODEX_HOOK_CONTEXT_LIMIT_TOKENS
    assert ours.index("HERON-5511") < ours.index("KITE-2024") < ours.index("### Using the memory folder")
    assert "OSPREY-7788" not in "\n".join(developer_texts(request)), "another project's rule never arrives"
    assert "atlas fact 0:" in ours or "atlas topic" in ours, "the project's knowledge fills what is left"
    assert not list(temp.rglob("hook_outputs")), "Codex spilled nothing: nothing was cut"
