"""`status` and `show` after real runs (issue 30): sessions in two projects go through the real
phase-1 and phase-2 flows (offline heuristic provider); then the CLI, as a user runs it, says in
words what the runs did and shows what a session in each project gets, what it does not get and
why, in agreement with what the SessionStart text (`inject`) holds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codex_memories.state.records import GLOBAL_JOB_KEY, JobKind
from tests.flows.test_scopes_end_to_end import make_repository
from tests.support.memory_home import MemoryHome

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

TABS_RULE = "In this repo use tabs for indentation."
ENGLISH_RULE = "In all my projects, answer in English."
LINT_RULE = "In this repo run make lint before committing."
DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")
EPOCH = re.compile(r"\b1[6-9]\d{8}\b")  # Unix seconds of these years


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryHome, Path, Path]:
    base = tmp_path_factory.mktemp("first-hour")
    home = MemoryHome(base / "home")
    repo_a = make_repository(base / "src" / "project-a", "git@github.com:acme/project-a.git")
    repo_b = make_repository(base / "src" / "project-b", "git@github.com:acme/project-b.git")
    home.rollout(TABS_RULE, ENGLISH_RULE, cwd=str(repo_a), repository_url="git@github.com:acme/project-a.git", days_ago=2)
    home.rollout(LINT_RULE, cwd=str(repo_b), repository_url="git@github.com:acme/project-b.git", days_ago=1)
    home.phase1()
    home.phase2()
    return home, repo_a, repo_b


def copy_of(world: tuple[MemoryHome, Path, Path], tmp_path: Path) -> MemoryHome:
    """A home of its own for a test that changes it (the paths inside are all under its root)."""
    home, _, _ = world
    shutil.copytree(home.root, tmp_path / "home")
    return MemoryHome(tmp_path / "home")


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


# ---- show --------------------------------------------------------------------------------------


def test_show_in_a_project_lists_its_rules_and_the_user_level_ones_and_counts_what_it_leaves_out(world) -> None:
    home, repo_a, repo_b = world

    shown = ok(home.cli("show", "--project", str(repo_b)))

    assert shown.startswith(f"What sessions in {repo_b} get (project github.com/acme/project-b)")
    project_rules = shown.split("Rules for this project\n", 1)[1].split("\n\n", 1)[0]
    user_rules = shown.split("Rules for all your projects\n", 1)[1].split("\n\n", 1)[0]
    assert LINT_RULE in project_rules and ENGLISH_RULE in user_rules
    assert TABS_RULE not in shown
    assert re.search(r"Not shown here: \d+ line\(s\) of other projects \(--why lists them\)\.", shown), shown

    in_a = ok(home.cli("show", "--project", str(repo_a / "sub" if (repo_a / "sub").is_dir() else repo_a)))
    assert TABS_RULE in in_a and ENGLISH_RULE in in_a and LINT_RULE not in in_a


def test_show_why_names_each_line_left_out_with_its_project(world) -> None:
    home, _, repo_b = world

    shown = ok(home.cli("show", "--project", str(repo_b), "--why"))

    not_shown = shown.split("Not shown here:", 1)[1]
    [tabs] = [line for line in not_shown.splitlines() if TABS_RULE in line]
    assert tabs.startswith("  - another project's (") and "project-a" in tabs and "(MEMORY.md:" in tabs


def test_show_json_agrees_with_the_text_a_session_gets(world) -> None:
    home, _, repo_b = world

    view = json.loads(ok(home.cli("show", "--project", str(repo_b), "--json")))
    session_start = ok(home.cli("inject", "--cwd", str(repo_b)))

    entries = view["project_rules"] + view["user_rules"] + view["notes"] + view["knowledge"]
    assert entries and all(entry["in_session_start"] for entry in entries)  # a small folder fits the budget
    for entry in entries:
        assert f"- {entry['text']} ({entry['source']})" in session_start
    assert view["project"] == "github.com/acme/project-b" and view["folder_exists"] is True
    assert 0 < view["session_start_tokens"] <= view["budget_tokens"]
    assert {item["reason"] for item in view["left_out"]} == {"other_project"}
    assert any(TABS_RULE in item["text"] for item in view["left_out"])
    assert all(line in session_start for line in view["index"] if line.strip())


def test_show_marks_what_the_session_start_budget_leaves_to_search(world) -> None:
    home, _, repo_b = world

    small = json.loads(ok(home.cli("show", "--project", str(repo_b), "--json", "--budget", "100")))
    text = ok(home.cli("show", "--project", str(repo_b), "--budget", "100"))
    session_start = ok(home.cli("inject", "--cwd", str(repo_b), "--budget", "100"))

    over = [entry for entry in small["project_rules"] + small["user_rules"] + small["knowledge"] if not entry["in_session_start"]]
    assert over, small
    assert text.count("[over the budget: search finds it]") == len(over)
    assert all(entry["text"] not in session_start for entry in over)
    assert small["index_lines_cut"] > 0
    assert f"[{small['index_lines_cut']} more line(s) over the budget: search finds them]" in text


def test_show_lists_a_new_note_at_once_and_a_forget_without_its_text(world, tmp_path: Path) -> None:
    home = copy_of(world, tmp_path)
    repo_b = world[2]

    forgot = ok(home.cli("forget", "--match", "make lint"))
    assert "forgot" in forgot
    # A note is for the project of the folder it is written for (issue 34.6): here repo B.
    ok(home.cli("note", "Remember that the staging DB is read-only.", "--slug", "staging", "--cwd", str(repo_b)))

    shown = ok(home.cli("show", "--project", str(repo_b), "--why"))

    notes = shown.split("Notes you added, not yet consolidated\n", 1)[1].split("\n\n", 1)[0]
    assert "Remember that the staging DB is read-only." in notes
    assert LINT_RULE not in shown.split("Not shown here:", 1)[0]
    [forgotten] = [line for line in shown.splitlines() if line.startswith("  - lines forgotten ")]
    # The forget's audit keeps no forgotten text (a forgotten code name must not survive in the
    # record of its forgetting): the view says when, and how long the text was.
    assert "make lint" not in forgotten and "a text of 9 characters" in forgotten and DATE.search(forgotten)


def test_show_of_a_folder_that_is_not_on_this_machine_answers_and_says_so(world, tmp_path: Path) -> None:
    home, _, _ = world
    elsewhere = tmp_path / "nowhere"

    result = home.cli("show", "--project", str(elsewhere))

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"codex-memories: note: {elsewhere} is not a folder on this machine; showing what a session started there would get"
    ]
    assert ENGLISH_RULE in result.stdout and TABS_RULE not in result.stdout and LINT_RULE not in result.stdout
    assert not elsewhere.exists()


def test_show_and_inject_find_the_project_of_a_folder_from_the_given_codex_homes_records(world, tmp_path: Path) -> None:
    """A folder of another machine (a teammate's path, the demo's sessions) has no git config
    here: its project comes from the map phase 1 recorded in the Codex home given, as the hooks
    of a session under that home find it, whatever this process's CODEX_HOME is."""
    home = copy_of(world, tmp_path)
    recorded = home.codex_home / "codex-memories" / "project-keys.json"
    document = json.loads(recorded.read_text(encoding="utf-8"))
    document["keys"]["/elsewhere/project-b"] = "github.com/acme/project-b"
    recorded.write_text(json.dumps(document), encoding="utf-8")

    shown = home.cli("show", "--project", "/elsewhere/project-b")
    session_start = ok(home.cli("inject", "--cwd", "/elsewhere/project-b"))

    assert shown.returncode == 0 and "is not a folder on this machine" in shown.stderr
    assert shown.stdout.startswith("What sessions in /elsewhere/project-b get (project github.com/acme/project-b)")
    assert LINT_RULE in shown.stdout.split("Rules for this project\n", 1)[1].split("\n\n", 1)[0]
    assert LINT_RULE in session_start and TABS_RULE not in session_start


# ---- status ------------------------------------------------------------------------------------


def test_status_says_what_the_runs_did_in_words_with_dates_and_no_internals(world) -> None:
    home, _, _ = world
    job = home.store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    assert job is not None and job.worker_id and job.finished_at

    words = ok(home.cli("status"))

    assert "Sessions:       2 seen" in words
    assert "Extraction:     2 done" in words
    assert re.search(r"Memories:       2 extracted, 2 in the memory folder's last consolidation", words), words
    consolidation = next(line for line in words.splitlines() if line.startswith("Consolidation:  "))
    assert consolidation.startswith("Consolidation:  last ") and DATE.search(consolidation)
    assert "the next not before" in consolidation and "`codex-memories phase2 --force` skips it" in consolidation
    assert job.worker_id not in words and "ownership" not in words and "worker" not in words
    assert not EPOCH.search(words), words
    assert "{" not in words and "No run yet" not in words


def test_status_json_keeps_the_machine_form(world) -> None:
    home, _, _ = world

    machine = json.loads(ok(home.cli("status", "--json")))

    assert machine["has_run"] is True
    assert machine["threads_by_memory_mode"]["enabled"] == 2
    assert machine["last_phase2_job"]["status"] == "done" and isinstance(machine["last_phase2_job"]["finished_at"], int)
    assert machine["memory_root"] == str(home.memory_root)
