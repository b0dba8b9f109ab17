"""The read path by scope (issue 15): a session gets its own project's memories and the
user-level ones; another project's rules reach it neither in the injected summary nor in recall
nor through the prompt hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.read.index import build_index
from codex_memories.read.injection import build_session_context, summary_for_project
from codex_memories.read.prompt_context import memory_context_for_prompt
from codex_memories.read.recall import CURRENT_PROJECT, OTHER_PROJECT, USER_LEVEL, recall, scope_class
from codex_memories.scopes import marked_project_key, project_keys_match, project_marker

A_KEY = "github.com/acme/a"
B_KEY = "github.com/acme/b"
TABS = "Indent with tabs, never spaces"
ENGLISH = "Answer in English, whatever language the question uses"
SPACES_B = "Run `make lint` before every commit"

MEMORY = f"""# Task Group: user-level (every project)
scope: user-level: what the user asked for in all their projects (1 session)
applies_to: cwd=any; reuse_rule=applies in every project

## User preferences
- {ENGLISH} [Task 1]

# Task Group: {A_KEY}
scope: work in a (1 session)
applies_to: cwd=/work/a; reuse_rule=use when working in /work/a; project={A_KEY}

## User preferences
- {TABS} [Task 1]

# Task Group: {B_KEY}
scope: work in b (1 session)
applies_to: cwd=/work/b; reuse_rule=use when working in /work/b; project={B_KEY}

## Reusable knowledge
- {SPACES_B} [Task 1]
"""

SUMMARY = f"""v1

## User Profile
A developer.

## User preferences
- {ENGLISH} (all projects)
- {TABS} (project={A_KEY}; cwd=/work/a)

## General Tips
- {SPACES_B} (seen in 2 sessions; project={B_KEY})

## What's in Memory
### user-level (every project)
#### 2026-11-18
- language: english

### project={A_KEY}
#### 2026-11-18
- indentation: tabs
  - learnings: {TABS}

### project={B_KEY}
#### 2026-11-17
- lint: make lint

### Older Memory Topics
- old indentation notes (project={A_KEY}, Task 2): tabs
"""


def make_repository(path: Path, origin: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {origin}\n', encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    root.mkdir()
    (root / paths.MEMORY_FILE).write_text(MEMORY, encoding="utf-8")
    (root / paths.MEMORY_SUMMARY_FILE).write_text(SUMMARY, encoding="utf-8")
    build_index(root)  # what phase 2 leaves: the prompt hook never builds one itself
    return root


@pytest.fixture
def repo_a(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "clones" / "a", "git@github.com:acme/a.git")


@pytest.fixture
def repo_b(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "clones" / "b", "https://dana:[REDACTED_SECRET]@github.com/acme/b.git")


def test_markers_round_trip_any_key_and_path_keys_cover_their_subfolders():
    for key in (A_KEY, "/home/dana/My Project (old)", "/srv/日本"):
        assert marked_project_key(f"- a rule ({project_marker(key)}; cwd=x)") == key
    assert project_keys_match("/work/notes", "/work/notes/drafts")
    assert not project_keys_match("/work/notes", "/work/notes-old")
    assert not project_keys_match(A_KEY, B_KEY) and not project_keys_match(A_KEY, None)


def test_the_summary_loses_other_projects_lines_and_sections_and_keeps_the_rest():
    for_b = summary_for_project(SUMMARY, B_KEY)

    assert TABS not in for_b and A_KEY not in for_b
    assert ENGLISH in for_b and SPACES_B in for_b and "### project=github.com/acme/b" in for_b
    assert for_b.startswith("v1\n\n## User Profile")
    for_a = summary_for_project(SUMMARY, A_KEY)
    assert TABS in for_a and ENGLISH in for_a and SPACES_B not in for_a
    # No current project: only what applies everywhere.
    neither = summary_for_project(SUMMARY, None)
    assert ENGLISH in neither and TABS not in neither and SPACES_B not in neither


def test_session_start_injection_in_project_b_has_the_user_rule_and_not_project_as(folder, repo_a, repo_b):
    in_b = build_session_context(folder, cwd=str(repo_b / "src")).text
    in_a = build_session_context(folder, cwd=str(repo_a)).text

    assert ENGLISH in in_b and SPACES_B in in_b and TABS not in in_b
    assert ENGLISH in in_a and TABS in in_a and SPACES_B not in in_a


def test_scope_classes_follow_the_project_key_not_the_folder_name():
    assert scope_class(f"project={A_KEY}", "/anywhere/a", A_KEY) == CURRENT_PROJECT
    assert scope_class(f"project={A_KEY}", "/anywhere/a", B_KEY) == OTHER_PROJECT
    assert scope_class("user-level (every project)", "/anywhere/a", B_KEY) == USER_LEVEL
    assert scope_class(f"project={A_KEY}", None, None) == USER_LEVEL


def test_recall_in_project_b_returns_no_rule_of_project_a(folder, repo_a, repo_b):
    in_b = recall(folder, "should I indent with tabs or spaces?", cwd=str(repo_b), limit=10)
    in_a = recall(folder, "should I indent with tabs or spaces?", cwd=str(repo_a), limit=10)

    assert not any(TABS in result.text for result in in_b)
    assert any(TABS in result.text for result in in_a)
    assert all(result.scope in (None, f"project={B_KEY}") for result in in_b)
    english = recall(folder, "which language should answers be written in?", cwd=str(repo_b))
    assert any(ENGLISH in result.text for result in english)


def test_the_prompt_hook_in_project_b_never_injects_project_as_rule(folder, repo_a, repo_b):
    in_b = memory_context_for_prompt(folder, "indent with tabs or spaces?", str(repo_b), 400)
    in_a = memory_context_for_prompt(folder, "indent with tabs or spaces?", str(repo_a), 400)

    assert TABS not in in_b
    assert TABS in in_a
