"""A forget on request reaches the team memory file exported into the repository
(`codex_memories.forget.team_files`), and what a session then gets from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.forget import team_files
from codex_memories.forget.audit import record_actions
from codex_memories.forget.manual import plan_reset, reset_memories
from codex_memories.forget.selective import ProjectTarget, forget_project, plan_project_forget
from codex_memories.forget.text_match import forget_match, plan_match_forget
from codex_memories.forget.threads import disable_thread, forget_deleted_threads, forget_thread, pollute_thread
from codex_memories.memory_folder.team_memory import TEAM_NOTES_HEADING, export_team_memory, team_memory_context
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalMemoryRoot, open_memory_root
from tests.support.memory_home import remember as remember_thread
from tests.support.secrets import SECRET_VALUES

ORIGIN = "git@github.com:acme/app.git"
OTHER_ORIGIN = "git@github.com:acme/site.git"


def raw_memory(*bullets: str) -> str:
    return "\n".join(["### Task 1: build", "task: build", "", "Preference signals:", *(f"- {bullet}" for bullet in bullets), ""])


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")


def make_repository(parent: Path, name: str, origin: str) -> Path:
    repo = parent / name
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n', encoding="utf-8")
    return repo


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return make_repository(tmp_path, "app", ORIGIN)


@pytest.fixture
def exported(store: MemoryStore, repository: Path) -> Path:
    """Two sessions' memories exported, then a teammate's line and the team's notes added, as a
    committed file holds them after review."""
    remember_thread(store, "t-make", raw_memory=raw_memory("Build with make ship", "Run tests with pytest -q"),
                    cwd=str(repository / "src"), git_origin_url=ORIGIN, source_updated_at=1)
    remember_thread(store, "t-pnpm", raw_memory=raw_memory("Use pnpm, not npm", "Run tests with pytest -q"),
                    cwd=str(repository), git_origin_url=ORIGIN, source_updated_at=2)
    path = export_team_memory(store, repository).path
    text = path.read_text(encoding="utf-8")
    text = text.replace("- Use pnpm, not npm\n", "- Use pnpm, not npm\n- Deploys go through the ship pipeline (added by a teammate)\n")
    text = text.replace(TEAM_NOTES_HEADING + "\n\n", TEAM_NOTES_HEADING + "\n\nWe ship on Tuesdays; make ship needs VPN.\n")
    path.write_text(text, encoding="utf-8")
    return path


def generated_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[2:] for line in lines[: lines.index(TEAM_NOTES_HEADING)] if line.startswith("- ")]


def test_forgetting_a_thread_removes_only_the_lines_it_gave_the_team_file(store: MemoryStore, repository: Path, exported: Path) -> None:
    [action] = record_actions(store, forget_thread(store, "t-make", root=None))

    # Its own line goes; a line another thread still gives, the teammate's and the notes stay.
    assert generated_lines(exported) == [
        "Run tests with pytest -q", "Use pnpm, not npm", "Deploys go through the ship pipeline (added by a teammate)",
    ]
    text = exported.read_text(encoding="utf-8")
    assert "We ship on Tuesdays; make ship needs VPN." in text
    assert "Exported from 1 memory (3 lines)." in text
    assert action.removed[team_files.TEAM_FILES_FACT] == [
        {"path": str(exported), "lines_removed": 1, "team_notes_holding_text": 0},
    ]
    # What the SessionStart hook injects from the repository no longer holds the forgotten line.
    context = team_memory_context(repository / "src", budget_tokens=4000)
    assert context is not None and "make ship" not in context.text.split("Team notes")[0]
    assert "Use pnpm, not npm" in context.text


def test_a_second_forget_changes_the_file_no_further(store: MemoryStore, exported: Path) -> None:
    forget_thread(store, "t-make", root=None)
    after_first = exported.read_bytes()
    assert forget_thread(store, "t-make", root=None) == []
    assert exported.read_bytes() == after_first


@pytest.mark.parametrize("route", [disable_thread, pollute_thread])
def test_disabling_or_marking_polluted_prunes_the_team_file_too(store: MemoryStore, exported: Path, route) -> None:
    [action] = route(store, "t-pnpm")
    assert "Use pnpm, not npm" not in generated_lines(exported)
    assert "Run tests with pytest -q" in generated_lines(exported)  # t-make still gives it
    assert action.removed[team_files.TEAM_FILES_FACT][0]["lines_removed"] == 1


def test_forgetting_the_project_leaves_only_what_this_machine_did_not_export(store: MemoryStore, repository: Path, exported: Path) -> None:
    target = ProjectTarget(key="github.com/acme/app", folder=str(repository))
    plan = plan_project_forget(store, target)
    assert f"team memory file {exported}: 3 generated line(s) removed" in plan.describe()
    before = exported.read_bytes()
    assert exported.read_bytes() == before  # the plan reads only

    [action] = forget_project(store, target, root=LocalMemoryRoot(repository.parent / "memories"))

    assert generated_lines(exported) == ["Deploys go through the ship pipeline (added by a teammate)"]
    assert "Exported from 0 memories (1 line)." in exported.read_text(encoding="utf-8")
    assert action.removed[team_files.TEAM_FILES_FACT] == [{"path": str(exported), "lines_removed": 3, "team_notes_holding_text": 0}]


def test_forget_match_removes_every_generated_line_holding_the_text_in_every_project(
    store: MemoryStore, tmp_path: Path, repository: Path, exported: Path
) -> None:
    site = make_repository(tmp_path, "site", OTHER_ORIGIN)
    remember_thread(store, "t-site", raw_memory=raw_memory("Publish with make ship-docs"), cwd=str(site), git_origin_url=OTHER_ORIGIN)
    site_file = export_team_memory(store, site).path
    root = open_memory_root(str(tmp_path / "memories"))

    plan = plan_match_forget(store, root, "SHIP")
    assert plan.team_files == [
        (
            f"team memory file {exported}: 2 generated line(s) removed; 1 line(s) under `## Team notes` still hold the text"
            " (the team's own, left as written)"
        ),
        f"team memory file {site_file}: 1 generated line(s) removed",
    ]
    [action] = record_actions(store, forget_match(store, root, "SHIP"))

    # The teammate's line holds the text too: the user asked for every line holding it.
    assert generated_lines(exported) == ["Run tests with pytest -q", "Use pnpm, not npm"]
    assert "We ship on Tuesdays; make ship needs VPN." in exported.read_text(encoding="utf-8")
    assert generated_lines(site_file) == []
    assert action.removed[team_files.TEAM_FILES_FACT] == [
        {"path": str(exported), "lines_removed": 2, "team_notes_holding_text": 1},
        {"path": str(site_file), "lines_removed": 1, "team_notes_holding_text": 0},
    ]


def test_forget_match_acts_on_a_team_file_even_when_nothing_else_holds_the_text(store: MemoryStore, tmp_path: Path, exported: Path) -> None:
    root = open_memory_root(str(tmp_path / "memories"))
    plan = plan_match_forget(store, root, "teammate")
    assert plan.empty and plan.team_files  # not in the folder or the outputs, only in the team file

    [action] = forget_match(store, root, "teammate")

    assert "Deploys go through the ship pipeline (added by a teammate)" not in generated_lines(exported)
    assert action.removed["stage1_outputs"] == [] and action.removed[team_files.TEAM_FILES_FACT][0]["lines_removed"] == 1
    assert forget_match(store, root, "teammate") == []


def test_a_reset_prunes_every_exported_file(store: MemoryStore, tmp_path: Path, exported: Path) -> None:
    root = open_memory_root(str(tmp_path / "memories"))
    assert f"team memory file {exported}: 3 generated line(s) removed" in plan_reset(store, root).describe()

    [action] = reset_memories(store, root)

    assert generated_lines(exported) == ["Deploys go through the ship pipeline (added by a teammate)"]
    assert action.removed[team_files.TEAM_FILES_FACT][0]["lines_removed"] == 3


def test_a_vanished_rollout_does_not_write_into_the_repository(store: MemoryStore, exported: Path) -> None:
    before = exported.read_bytes()
    store.mark_threads_missing(["/nowhere/t-make.jsonl"])
    [action] = forget_deleted_threads(store)
    assert action.target == "t-make" and team_files.TEAM_FILES_FACT not in action.removed
    assert exported.read_bytes() == before


def test_a_file_that_cannot_be_rewritten_is_named_and_the_forget_stands(
    store: MemoryStore, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> bool:
        raise PermissionError("read-only checkout")

    monkeypatch.setattr("codex_memories.memory_folder.team_memory.SandboxedFolder.write_if_changed", refuse)
    [action] = forget_thread(store, "t-make", root=None)

    assert action.removed[team_files.TEAM_FILES_FACT] == [{"path": str(exported), "error": "PermissionError: read-only checkout"}]
    assert store.get_stage1_output("t-make") is None
    assert team_files.describe_pruned(action.removed[team_files.TEAM_FILES_FACT][0]) == (
        f"team memory file {exported}: not rewritten (PermissionError: read-only checkout)"
    )


def test_threads_of_other_machines_or_without_a_team_file_change_nothing(store: MemoryStore, tmp_path: Path, repository: Path) -> None:
    remember_thread(store, "t-gone", raw_memory=raw_memory("Build with make"), cwd=str(tmp_path / "deleted-checkout"), git_origin_url=ORIGIN)
    remember_thread(store, "t-here", raw_memory=raw_memory("Build with make"), cwd=str(repository), git_origin_url=ORIGIN)
    assert team_files.TEAM_FILES_FACT not in forget_thread(store, "t-gone", root=None)[0].removed
    assert team_files.TEAM_FILES_FACT not in forget_thread(store, "t-here", root=None)[0].removed  # never exported
    assert not (repository / paths.TEAM_MEMORY_FILE).exists()


def test_a_line_typed_into_the_file_is_written_back_redacted(store: MemoryStore, exported: Path) -> None:
    secret = SECRET_VALUES["github_pat"]
    exported.write_text(
        exported.read_text(encoding="utf-8").replace("- Use pnpm, not npm\n", f"- Use pnpm, not npm\n- CI reads the token {secret}\n"),
        encoding="utf-8",
    )
    forget_thread(store, "t-make", root=None)
    text = exported.read_text(encoding="utf-8")
    assert secret not in text and "CI reads the token [REDACTED_SECRET]" in text


def test_phase_2s_quarantine_marks_the_thread_polluted_without_writing_into_the_repository(store: MemoryStore, exported: Path) -> None:
    before = exported.read_bytes()
    [action] = pollute_thread(store, "t-pnpm", reason="injection gate", team_files=False)  # as `quarantine_injection_sources` calls it
    assert team_files.TEAM_FILES_FACT not in action.removed
    assert exported.read_bytes() == before


def test_a_checkout_where_no_session_ran_is_found_from_its_export(store: MemoryStore, tmp_path: Path, exported: Path) -> None:
    clone = make_repository(tmp_path / "second", "app", ORIGIN)  # the same project, cloned elsewhere
    clone_file = export_team_memory(store, clone).path
    assert "Build with make ship" in generated_lines(clone_file)

    [action] = forget_thread(store, "t-make", root=None)

    assert "Build with make ship" not in generated_lines(clone_file)
    assert "Build with make ship" not in generated_lines(exported)
    assert sorted(fact["path"] for fact in action.removed[team_files.TEAM_FILES_FACT]) == sorted([str(exported), str(clone_file)])


def test_a_project_dry_run_lists_only_that_projects_team_file(store: MemoryStore, tmp_path: Path, repository: Path, exported: Path) -> None:
    site = make_repository(tmp_path, "site", OTHER_ORIGIN)
    remember_thread(store, "t-site", raw_memory=raw_memory("Publish with make docs"), cwd=str(site), git_origin_url=OTHER_ORIGIN)
    site_file = export_team_memory(store, site).path

    plan = plan_project_forget(store, ProjectTarget(key="github.com/acme/app", folder=str(repository)))

    assert [line for line in plan.describe() if line.startswith("team memory file")] == [
        f"team memory file {exported}: 3 generated line(s) removed",
    ]
    [action] = forget_project(store, ProjectTarget(key="github.com/acme/app", folder=str(repository)), root=LocalMemoryRoot(repository.parent / "memories"))
    assert [fact["path"] for fact in action.removed[team_files.TEAM_FILES_FACT]] == [str(exported)]
    assert generated_lines(site_file) == ["Publish with make docs"]


def test_a_team_file_that_is_not_utf8_is_named_and_the_match_forget_runs(store: MemoryStore, tmp_path: Path, exported: Path) -> None:
    exported.write_bytes(exported.read_bytes() + b"\n- broken \xff\xfe bytes\n")
    root = open_memory_root(str(tmp_path / "memories"))

    plan = plan_match_forget(store, root, "pytest")
    [line] = plan.team_files
    assert line.startswith(f"team memory file {exported}: not rewritten (UnicodeDecodeError: ")
    [action] = forget_match(store, root, "pytest")

    assert store.stage1_outputs_containing("pytest") == []
    assert action.removed[team_files.TEAM_FILES_FACT][0]["error"].startswith("UnicodeDecodeError:")
