"""Selective forgetting: a project's memories, every memory line holding a text (issue 15)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.forget.audit import record_actions
from codex_memories.forget.manual import ResetRefused
from codex_memories.forget.selective import (
    ProjectTarget,
    SelectiveForgetError,
    check_match_text,
    forget_match,
    forget_project,
    plan_match_forget,
    plan_project_forget,
    resolve_project,
)
from codex_memories.state.records import ForgetRoute, JobKind, MemoryMode
from codex_memories.state.store import MemoryStore
from codex_memories.storage import open_memory_root
from tests.support.memory_home import remember as remember_thread
from tests.support.secrets import SECRET_VALUES

APP = "git@github.com:acme/app.git"


def remember(store: MemoryStore, thread_id: str, raw_memory: str, *, origin: str | None = APP, cwd: str = "/work/app", summary: str = "summary") -> None:
    remember_thread(store, thread_id, raw_memory=raw_memory, rollout_summary=summary, cwd=cwd, git_origin_url=origin)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    (root / paths.ROLLOUT_SUMMARIES_DIR).mkdir(parents=True)
    (root / paths.ad_hoc_notes_dir()).mkdir(parents=True)
    (root / paths.MEMORY_FILE).write_text("# Memory\n- use PNPM for installs\n- keep tabs\n", encoding="utf-8")
    (root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n\n- pnpm is the package manager\n- make -j8\n", encoding="utf-8")
    (root / paths.RAW_MEMORIES_FILE).write_text("# Raw Memories\n\n- prefers pnpm\n- other\n", encoding="utf-8")
    (root / paths.rollout_summary_path("2025-01-01T00-00-00-abcd-s")).write_text("thread_id: t1\n\nran pnpm install\n", encoding="utf-8")
    (root / paths.ad_hoc_notes_dir() / "note.md").write_text("always pnpm\n", encoding="utf-8")
    return root


def test_a_match_text_must_be_one_line_of_three_characters() -> None:
    for bad in ("", "  a ", "ab", "two\nlines"):
        with pytest.raises(SelectiveForgetError):
            check_match_text(bad)
    assert check_match_text("  pnpm ") == "pnpm"


def test_forget_match_removes_exactly_what_the_dry_run_lists(store: MemoryStore, folder: Path) -> None:
    remember(store, "t1", "Preference signals:\n- prefers pnpm\n- keep tabs\n", summary="ran pnpm install\nok\n")
    remember(store, "t2", "Reusable knowledge:\n- make works\n")
    root = open_memory_root(folder)

    plan = plan_match_forget(store, root, "PNPM")
    assert plan.describe() == [
        "MEMORY.md:2",
        "extensions/ad_hoc/notes/note.md:1",
        "memory_summary.md:3",
        "raw_memories.md:3",
        "rollout_summaries/2025-01-01T00-00-00-abcd-s.md:3",
        "stage-1 output of thread t1: raw_memory 1 line(s), rollout_summary 1 line(s)",
    ]
    [action] = record_actions(store, forget_match(store, root, "PNPM"))

    assert action.route is ForgetRoute.text_match and action.target == "PNPM"
    assert action.removed == plan.removed()
    for path in folder.rglob("*.md"):
        assert "pnpm" not in path.read_text(encoding="utf-8").casefold(), path
    assert not (folder / paths.ad_hoc_notes_dir() / "note.md").exists()  # a note left blank goes
    assert (folder / paths.MEMORY_FILE).read_text(encoding="utf-8") == "# Memory\n- keep tabs\n"
    output = store.get_stage1_output("t1")
    assert output.raw_memory == "Preference signals:\n- keep tabs\n" and output.rollout_summary == "ok\n"
    assert store.get_stage1_output("t2").raw_memory == "Reusable knowledge:\n- make works\n"
    [row] = store.list_forget_audit()
    assert row.route is ForgetRoute.text_match and "pnpm" not in str(row.removed).casefold()
    assert plan_match_forget(store, root, "pnpm").empty
    assert forget_match(store, root, "pnpm") == []  # idempotent: nothing more, no second row


def test_a_secret_looking_match_text_is_redacted_in_the_audit(store: MemoryStore, folder: Path) -> None:
    secret = SECRET_VALUES["github_token"]
    (folder / paths.MEMORY_FILE).write_text(f"# Memory\n- token {secret}\n", encoding="utf-8")
    [action] = record_actions(store, forget_match(store, open_memory_root(folder), secret))
    assert secret not in action.target and "REDACTED" in action.target
    assert secret not in str(store.list_forget_audit()[0])


def test_forget_match_waits_for_a_running_consolidation(store: MemoryStore, folder: Path) -> None:
    remember(store, "t1", "- prefers pnpm\n")
    store.enqueue_global_consolidation(int(time.time()))
    claim = store.try_claim_global_phase2_job(worker_id="w", lease_seconds=600)
    assert claim.ownership_token
    with pytest.raises(ResetRefused, match="phase 2 is consolidating"):
        forget_match(store, open_memory_root(folder), "pnpm")
    assert "pnpm" in (folder / paths.MEMORY_FILE).read_text(encoding="utf-8").casefold()


def test_forget_project_forgets_its_threads_only_and_the_plan_is_the_audit(store: MemoryStore, tmp_path: Path) -> None:
    remember(store, "app-1", "- a\n")
    remember(store, "app-2", "- b\n", origin="https://user:secret@GitHub.com/acme/app")
    remember(store, "other", "- c\n", origin="git@github.com:acme/other.git")
    target = ProjectTarget(key="github.com/acme/app", folder=None)

    plan = plan_project_forget(store, target)
    assert [entry["thread_id"] for entry in plan.threads] == ["app-1", "app-2"]
    [action] = record_actions(store, forget_project(store, target))

    assert action.route is ForgetRoute.project_deletion and action.target == "github.com/acme/app"
    assert action.removed["threads"] == plan.threads
    assert store.get_stage1_output("app-1") is None and store.get_stage1_output("app-2") is None
    assert store.get_thread("app-1").memory_mode is MemoryMode.disabled  # not extracted again
    assert store.get_stage1_output("other") is not None
    assert store.get_job(JobKind.stage1, "app-1") is None
    assert forget_project(store, target) == []


def test_a_project_folder_without_origin_takes_the_threads_below_it(store: MemoryStore, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    remember(store, "inside", "- a\n", origin=None, cwd=str(repo / "src"))
    remember(store, "beside", "- b\n", origin=None, cwd=str(tmp_path / "repo-other"))
    target = resolve_project(str(repo / "src"))
    assert target == ProjectTarget(key=str(repo), folder=str(repo))
    assert [entry["thread_id"] for entry in plan_project_forget(store, target).threads] == ["inside"]
