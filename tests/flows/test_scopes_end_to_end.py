"""Scopes end to end (issue 15): sessions in project A and B go through the real phase-1 and
phase-2 flows (offline heuristic provider); then a session in project B gets A's user-level rule
and not A's project rule, from `inject`, both hooks and recall, while a session in A gets both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_memories.read.hook_log import HookOptions
from codex_memories.read.hooks import handle_hook
from codex_memories.read.recall import recall
from codex_memories.scopes import project_key_for_directory
from tests.support.memory_home import MemoryHome

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

TABS_RULE = "In this repo use tabs for indentation."
ENGLISH_RULE = "In all my projects, answer in English."
B_RULE = "In this repo run make lint before committing."


def make_repository(path: Path, origin: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("scopes")
    home = MemoryHome(base / "home")
    repo_a = make_repository(base / "src" / "project-a", "git@github.com:acme/project-a.git")
    repo_b = make_repository(base / "src" / "project-b", "https://dana:ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@github.com/acme/project-b.git")
    home.rollout(TABS_RULE, ENGLISH_RULE, cwd=str(repo_a), repository_url="git@github.com:acme/project-a.git", days_ago=2)
    home.rollout(B_RULE, cwd=str(repo_b), repository_url="https://github.com/acme/project-b.git", days_ago=1)
    home.phase1()
    home.phase2()
    return home, repo_a, repo_b


def hook(home: MemoryHome, event: str, payload: dict) -> str:
    options = HookOptions(codex_home=home.codex_home, memory_root=home.memory_root)
    return handle_hook(event, json.dumps({"hook_event_name": event, **payload}), options).stdout


def test_extraction_stored_each_rule_with_its_scope_and_project(world):
    home, repo_a, repo_b = world
    with home.store as store:
        a_outputs = store.stage1_outputs_for_project(project_key_for_directory(repo_a))
        b_outputs = store.stage1_outputs_for_project("github.com/acme/project-b")
    assert [output.scope for output in a_outputs] == ["mixed"]
    assert [output.scope for output in b_outputs] == ["project"]
    assert "scope: user" in a_outputs[0].raw_memory and "project_key: github.com/acme/project-a" in a_outputs[0].raw_memory


def test_inject_in_project_b_prints_the_user_level_rule_and_not_project_as(world):
    home, repo_a, repo_b = world
    in_b = home.cli("inject", "--cwd", str(repo_b))
    in_a = home.cli("inject", "--cwd", str(repo_a))
    assert in_b.returncode == 0 and in_a.returncode == 0, in_b.stderr + in_a.stderr

    assert ENGLISH_RULE in in_b.stdout and B_RULE in in_b.stdout
    assert TABS_RULE not in in_b.stdout
    assert TABS_RULE in in_a.stdout and ENGLISH_RULE in in_a.stdout and B_RULE not in in_a.stdout


def test_the_session_start_hook_in_project_b_has_no_rule_of_project_a(world):
    home, repo_a, repo_b = world
    in_b = json.loads(hook(home, "SessionStart", {"cwd": str(repo_b), "source": "startup"}))["hookSpecificOutput"]["additionalContext"]
    in_a = json.loads(hook(home, "SessionStart", {"cwd": str(repo_a / "sub"), "source": "startup"}))["hookSpecificOutput"]["additionalContext"]

    assert ENGLISH_RULE in in_b and TABS_RULE not in in_b
    assert TABS_RULE in in_a


def test_the_prompt_hook_and_recall_in_project_b_never_return_project_as_rule(world):
    home, repo_a, repo_b = world
    prompt = "should I indent this file with tabs or spaces?"
    in_b = hook(home, "UserPromptSubmit", {"cwd": str(repo_b), "prompt": prompt})
    assert TABS_RULE not in in_b

    for result in recall(home.memory_root, prompt, cwd=str(repo_b), limit=10):
        assert TABS_RULE not in result.text, result
    assert any(TABS_RULE in result.text for result in recall(home.memory_root, prompt, cwd=str(repo_a), limit=10))
    english = recall(home.memory_root, "which language should I answer in?", cwd=str(repo_b))
    assert any(ENGLISH_RULE in result.text for result in english)
