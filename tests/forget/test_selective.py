"""Selective forgetting: a project's memories (issue 15); by text: `test_text_match.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories.forget.audit import record_actions
from codex_memories.forget.selective import ProjectTarget, forget_project, plan_project_forget, resolve_project
from codex_memories.state.records import ForgetRoute, JobKind, MemoryMode
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalMemoryRoot
from tests.support.memory_home import remember as remember_thread

APP = "git@github.com:acme/app.git"


def remember(store: MemoryStore, thread_id: str, raw_memory: str, *, origin: str | None = APP, cwd: str = "/work/app", summary: str = "summary") -> None:
    remember_thread(store, thread_id, raw_memory=raw_memory, rollout_summary=summary, cwd=cwd, git_origin_url=origin)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")


def test_forget_project_forgets_its_threads_only_and_the_plan_is_the_audit(store: MemoryStore, tmp_path: Path) -> None:
    remember(store, "app-1", "- a\n")
    remember(store, "app-2", "- b\n", origin="https://user:secret@GitHub.com/acme/app")
    remember(store, "other", "- c\n", origin="git@github.com:acme/other.git")
    target = ProjectTarget(key="github.com/acme/app", folder=None)

    plan = plan_project_forget(store, target)
    assert [entry["thread_id"] for entry in plan.threads] == ["app-1", "app-2"]
    [action] = record_actions(store, forget_project(store, target, root=LocalMemoryRoot(tmp_path / "memories")))

    assert action.route is ForgetRoute.project_deletion and action.target == "github.com/acme/app"
    assert action.removed["threads"] == plan.threads
    assert store.get_stage1_output("app-1") is None and store.get_stage1_output("app-2") is None
    assert store.get_thread("app-1").memory_mode is MemoryMode.disabled  # not extracted again
    assert store.get_stage1_output("other") is not None
    assert store.get_job(JobKind.stage1, "app-1") is None
    assert forget_project(store, target, root=LocalMemoryRoot(tmp_path / "memories")) == []


def test_a_project_folder_without_origin_takes_the_threads_below_it(store: MemoryStore, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    remember(store, "inside", "- a\n", origin=None, cwd=str(repo / "src"))
    remember(store, "beside", "- b\n", origin=None, cwd=str(tmp_path / "repo-other"))
    target = resolve_project(str(repo / "src"))
    assert target == ProjectTarget(key=str(repo), folder=str(repo))
    assert [entry["thread_id"] for entry in plan_project_forget(store, target).threads] == ["inside"]
