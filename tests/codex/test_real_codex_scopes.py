"""Scopes in real Codex sessions (issue 15), on both pinned versions.

Two recorded sessions, one in repository A (a project rule and a user-level rule) and one in
repository B (a project rule), go through our phase 1 and phase 2 (offline heuristic); our hooks
are installed; then one `codex exec` in B and one in A. What the model server receives as
developer context is the proof: in B the user-level rule and B's rule arrive and A's rule does
not; in A, A's rule arrives and B's does not. And once A's `.git` is gone, A's sessions still
get A's rule: the project is found from the sessions' own records.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codex_memories.runtime import close_stores
from codex_memories.settings import SettingsOverrides
from tests.codex import test_real_codex_hooks
from tests.codex.test_real_codex_hooks import HOOK_BYPASS, codex_memories, default_db_url
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    developer_texts,
    run_codex_exec,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.openai_server import OpenAITestServer
from tests.support.rollout_factory import write_rollout

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)
pipeline_env = test_real_codex_hooks.pipeline_env  # the same clean environment as the hook tests

A_ORIGIN = "git@github.com:acme/scopes-a.git"
B_ORIGIN = "https://github.com/acme/scopes-b.git"
A_RULE = "In this repo use tabs for indentation (ORCA-4411)."
USER_RULE = "In all my projects, answer in English (WREN-2207)."
B_RULE = "In this repo run make lint before committing (LYNX-9083)."


def make_repository(path: Path, origin: str) -> Path:
    path.mkdir(parents=True)
    for command in (["git", "init", "-q"], ["git", "remote", "add", "origin", origin]):
        subprocess.run(command, cwd=path, check=True, capture_output=True, timeout=30)
    return path.resolve()


def remember_both_projects(home: CodexHome, tmp_path: Path, *install_options: str) -> tuple[Path, Path]:
    """Repositories A and B, a session recorded in each, our phase 1 (which also records which
    folder is which project) and phase 2, then `codex-memories install <install_options>`."""
    from codex_memories_flows.phase1 import phase1
    from codex_memories_flows.phase2 import phase2

    repo_a = make_repository(tmp_path / "src" / "scopes-a", A_ORIGIN)
    repo_b = make_repository(tmp_path / "src" / "scopes-b", B_ORIGIN)
    now = datetime.now(UTC)
    write_rollout(home.path, created_at=now - timedelta(hours=3), cwd=str(repo_a), repository_url=A_ORIGIN, user_messages=[A_RULE, USER_RULE])
    write_rollout(home.path, created_at=now - timedelta(hours=2), cwd=str(repo_b), repository_url=B_ORIGIN, user_messages=[B_RULE])
    overrides = SettingsOverrides(codex_home=str(home.path), db_url=default_db_url(home), provider="heuristic")
    report = phase1(overrides=overrides.model_copy(update={"ignore_age_windows": True}))
    assert report.claimed == 2, report
    result = phase2(overrides=overrides, force=True)
    assert result.outcome is not None and not result.outcome.is_failure, result
    close_stores()
    installed = codex_memories(home, "install", *install_options)
    assert installed.returncode == 0, installed.stderr
    return repo_a, repo_b


def session_context(home: CodexHome, server: OpenAITestServer, cwd: Path) -> str:
    """Every developer text of the one model request of a `codex exec` turn in `cwd`."""
    server.set_handler(with_pipeline_requests(text_reply("Understood.")))
    server.clear_requests()
    result = run_codex_exec(home, "How should I indent the new module?", cwd=cwd, server=server, extra_args=HOOK_BYPASS)
    assert result.returncode == 0, result.stderr[-3000:]
    [request] = user_turn_requests(server)
    return "\n".join(developer_texts(request))


@versions
def test_a_session_in_another_repository_never_receives_a_projects_rule(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path, pipeline_env: None
) -> None:
    repo_a, repo_b = remember_both_projects(codex_home, tmp_path)
    summary = (codex_home.memories_dir / "memory_summary.md").read_text(encoding="utf-8")
    assert "ORCA-4411" in summary and "WREN-2207" in summary and "LYNX-9083" in summary  # all in one folder

    in_b = session_context(codex_home, codex_server, repo_b)
    assert "MEMORY_SUMMARY BEGINS" in in_b  # the SessionStart hook ran
    assert "WREN-2207" in in_b and "LYNX-9083" in in_b
    assert "ORCA-4411" not in in_b and "use tabs" not in in_b

    in_a = session_context(codex_home, codex_server, repo_a)
    assert "ORCA-4411" in in_a and "WREN-2207" in in_a
    assert "LYNX-9083" not in in_a


@versions
def test_a_checkout_without_its_git_folder_still_gets_its_projects_memory(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path, pipeline_env: None
) -> None:
    repo_a, _ = remember_both_projects(codex_home, tmp_path, "--trust")

    shutil.rmtree(repo_a / ".git")  # moved, mounted elsewhere, opened in a container: no git config

    in_a = session_context(codex_home, codex_server, repo_a)
    assert "MEMORY_SUMMARY BEGINS" in in_a
    assert "ORCA-4411" in in_a and "WREN-2207" in in_a  # its project's rule and the user-level one
    assert "LYNX-9083" not in in_a
