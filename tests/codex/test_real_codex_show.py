"""`codex-memories show` says what a real Codex session gets (issue 30), on both pinned versions.

The two projects of the scopes test go through our phase 1 and phase 2 (offline heuristic) and
our hooks are installed; `show --project B --json` lists what a session in B gets and what it
does not; then one `codex exec` in B. What the model server receives as developer context is the
proof: every entry `show` marks as in the SessionStart text arrives, and no line `show` lists as
another project's does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.codex import test_real_codex_hooks
from tests.codex.test_real_codex_scopes import A_RULE, B_RULE, USER_RULE, remember_both_projects, session_context
from tests.support.codex_cli import CODEX_VERSIONS, CodexHome
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)
pipeline_env = test_real_codex_hooks.pipeline_env


def show(home: CodexHome, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("CODEX_", "OPENAI_"))}
    environment["CODEX_HOME"] = str(home.path)
    return subprocess.run(
        [str(Path(sys.executable).with_name("codex-memories")), "show", *arguments],
        env=environment, capture_output=True, text=True, timeout=120, check=False,
    )


@versions
def test_what_show_lists_for_a_project_is_what_a_codex_session_there_receives(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path, pipeline_env: None
) -> None:
    _, repo_b = remember_both_projects(codex_home, tmp_path)

    listed = show(codex_home, "--project", str(repo_b), "--json")
    assert listed.returncode == 0, listed.stderr
    view = json.loads(listed.stdout)
    words = show(codex_home, "--project", str(repo_b), "--why")
    assert words.returncode == 0, words.stderr

    received = session_context(codex_home, codex_server, repo_b)

    given = view["project_rules"] + view["user_rules"] + view["notes"] + view["knowledge"]
    assert any("LYNX-9083" in entry["text"] for entry in view["project_rules"])
    assert any("WREN-2207" in entry["text"] for entry in view["user_rules"])
    for entry in given:
        assert entry["in_session_start"] and f"- {entry['text']} ({entry['source']})" in received, entry
    left_out = [item for item in view["left_out"] if item["reason"] == "other_project"]
    assert any("ORCA-4411" in item["text"] for item in left_out)
    for item in left_out:
        assert item["text"] not in received
    assert "ORCA-4411" not in received and "use tabs" not in received
    # The words say the same: B's and the user-level rule shown, A's named as another project's.
    shown, not_shown = words.stdout.split("Not shown here:", 1)
    assert B_RULE in shown and USER_RULE in shown and A_RULE not in shown
    assert any(A_RULE in line and line.startswith("  - another project's (github.com/acme/scopes-a)") for line in not_shown.splitlines())
