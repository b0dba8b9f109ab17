"""Forgetting by text (`codex_memories.forget.text_match`): lines, names and the git history.

The folder here is written the way phase 2 writes it (the inputs synced from the stage-1 outputs,
a handbook that names the rollout summaries, a git baseline); the flows have their own tests.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.forget.audit import record_actions
from codex_memories.forget.manual import ResetRefused, plan_reset, reset_memories
from codex_memories.forget.selective import SelectiveForgetError
from codex_memories.forget.text_match import check_match_text, forget_match, plan_match_forget, shown_match_text
from codex_memories.memory_folder.inputs import rebuild_raw_memories, sync_rollout_summaries
from codex_memories.memory_folder.workspace import ensure_git_baseline, workspace_diff
from codex_memories.raw_memories import stem_for
from codex_memories.read.injection import pending_notes
from codex_memories.sandbox import SandboxedFolder
from codex_memories.state.records import ForgetRoute, Stage1Output
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalWorkspace, WorkspaceSnapshot, open_memory_root, push
from tests.support.memory_home import remember as remember_thread
from tests.support.secrets import SECRET_VALUES

FALCON_THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"  # a UUIDv7: its summary is named by its creation time
TABS_THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1b99"
CODE_NAME = "Project Falcon"


def remember(store: MemoryStore, thread_id: str, raw_memory: str, *, summary: str = "summary", slug: str | None = None) -> Stage1Output:
    remember_thread(store, thread_id, raw_memory=raw_memory, rollout_summary=summary, cwd="/work/app", rollout_slug=slug)
    output = store.get_stage1_output(thread_id)
    assert output is not None
    return output


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")


def git(root: Path, *arguments: str, stdin: bytes | None = None) -> bytes:
    command = ["git", "--git-dir", str(root / ".git"), "--work-tree", str(root), "-c", "user.name=u", "-c", "user.email=u@x"]
    return subprocess.run([*command, *arguments], input=stdin, capture_output=True, check=True).stdout


def write_folder(root: Path, outputs: list[Stage1Output]) -> dict[str, str]:
    """The inputs synced from `outputs`, a handbook and a summary naming them, a note; its baseline."""
    sync_rollout_summaries(root, outputs)
    rebuild_raw_memories(root, outputs)
    stems = {output.thread_id: stem_for(output) for output in outputs}
    (root / paths.MEMORY_FILE).write_text(
        "# Task Group: app\n\n## Task 1: deploy, outcome: success\n\n### rollout_summary_files\n"
        + "".join(f"- rollout_summaries/{stem}.md (cwd=/work/app)\n" for stem in stems.values())
        + "\n## User preferences\n- Project Falcon ships on Fridays\n- the project-falcon pager rotates weekly\n"
        + "\n## Reusable knowledge\n- keep tabs in Makefiles\n",
        encoding="utf-8",
    )
    (root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n\n## What's in Memory\n- Project Falcon deploys\n- tabs in Makefiles\n", encoding="utf-8")
    notes = root / paths.ad_hoc_notes_dir()
    notes.mkdir(parents=True)
    (notes / "2025-01-02T03-04-05-project-falcon-launch.md").write_text("Project Falcon launches in May\nbring the runbook\n", encoding="utf-8")
    ensure_git_baseline(root)
    return stems


@pytest.fixture
def folder(tmp_path: Path, store: MemoryStore) -> Path:
    root = tmp_path / "memories"
    falcon = remember(store, FALCON_THREAD, "## Preferences\n- Project Falcon ships on Fridays\n\n## Knowledge\n- keep tabs\n",
                      summary="Deployed project_falcon to staging.\nok\n", slug="project-falcon-deploy")
    tabs = remember(store, TABS_THREAD, "- keep tabs in Makefiles\n", slug="makefile-tabs")
    write_folder(root, [falcon, tabs])
    return root


def everything_in(root: Path) -> str:
    """Every name and every byte under the folder, git's objects as git reads them."""
    parts = [str(path.relative_to(root)) for path in root.rglob("*")]
    # Every file's bytes but git's compressed objects, which git itself reads below.
    parts += [path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file() and "objects" not in path.parts]
    parts.append(git(root, "log", "-p", "--all", "--format=%H %s").decode("utf-8", "replace"))
    parts.append(git(root, "cat-file", "--batch-all-objects", "--batch").decode("utf-8", "replace"))
    return "\n".join(parts).casefold()


def holds_code_name(text: str) -> bool:
    folded = text.casefold()
    return "falcon" in folded


def test_a_match_text_must_be_one_line_of_three_characters() -> None:
    for bad in ("", "  a ", "ab", "two\nlines"):
        with pytest.raises(SelectiveForgetError):
            check_match_text(bad)
    assert check_match_text("  pnpm ") == "pnpm"


def test_the_dry_run_lists_each_line_with_its_text_each_rename_and_the_baseline(store: MemoryStore, folder: Path) -> None:
    falcon = store.get_stage1_output(FALCON_THREAD)
    old_stem = stem_for(falcon)
    listed = plan_match_forget(store, open_memory_root(folder), CODE_NAME).describe()

    assert listed == [
        "MEMORY.md:9: ## User preferences  (heading left with nothing under it)",
        "MEMORY.md:10: - Project Falcon ships on Fridays",
        "MEMORY.md:11: - the project-falcon pager rotates weekly",
        "MEMORY.md: 1 mention(s) of renamed files now name the new file",
        (
            "extensions/ad_hoc/notes/2025-01-02T03-04-05-project-falcon-launch.md -> "
            "extensions/ad_hoc/notes/2025-01-02T03-04-05-launch.md (renamed: the name carries the text)"
        ),
        "extensions/ad_hoc/notes/2025-01-02T03-04-05-project-falcon-launch.md:1: Project Falcon launches in May",
        "memory_summary.md:4: - Project Falcon deploys",
        "raw_memories.md:11: ## Preferences  (heading left with nothing under it)",
        "raw_memories.md:12: - Project Falcon ships on Fridays",
        "raw_memories.md: 1 mention(s) of renamed files now name the new file",
        f"rollout_summaries/{old_stem}.md -> rollout_summaries/{old_stem.replace('project_falcon_', '')}.md (renamed: the name carries the text)",
        f"rollout_summaries/{old_stem}.md:6: Deployed project_falcon to staging.",
        f"stage-1 output of thread {FALCON_THREAD}, raw_memory:1: ## Preferences  (heading left with nothing under it)",
        f"stage-1 output of thread {FALCON_THREAD}, raw_memory:2: - Project Falcon ships on Fridays",
        f"stage-1 output of thread {FALCON_THREAD}, rollout_summary:1: Deployed project_falcon to staging.",
        f"stage-1 output of thread {FALCON_THREAD}, slug project-falcon-deploy -> deploy",
        (
            ".git (the folder's git baseline): 5 file(s) rewritten, 2 renamed, 0 deleted alike; "
            "one new commit replaces its history and the old objects are pruned"
        ),
    ]
    assert holds_code_name(everything_in(folder))  # a dry run changes nothing


def test_forget_match_leaves_no_line_name_or_git_object_holding_the_text(store: MemoryStore, folder: Path) -> None:
    plan = plan_match_forget(store, open_memory_root(folder), CODE_NAME)

    [action] = record_actions(store, forget_match(store, open_memory_root(folder), CODE_NAME))

    assert not holds_code_name(everything_in(folder))
    assert action.route is ForgetRoute.text_match and action.removed == plan.removed()
    assert (folder / paths.MEMORY_FILE).read_text(encoding="utf-8").endswith("## Reusable knowledge\n- keep tabs in Makefiles\n")
    [row] = store.list_forget_audit()
    assert row.target == "a text of 14 characters" and not holds_code_name(str(row.removed) + row.target)
    assert git(folder, "rev-list", "--all").decode().count("\n") == 1  # one commit, no history
    assert git(folder, "fsck", "--unreachable", "--dangling", "--no-reflogs", "--no-progress") == b""
    assert git(folder, "status", "--porcelain") == b""  # folder and baseline were edited alike
    assert plan_match_forget(store, open_memory_root(folder), CODE_NAME).empty
    assert forget_match(store, open_memory_root(folder), CODE_NAME) == []  # idempotent: no second row


def test_the_renamed_summary_is_what_the_next_sync_writes_so_nothing_comes_back(store: MemoryStore, folder: Path) -> None:
    forget_match(store, open_memory_root(folder), CODE_NAME)
    outputs = [store.get_stage1_output(FALCON_THREAD), store.get_stage1_output(TABS_THREAD)]

    assert outputs[0].rollout_slug == "deploy"
    assert outputs[0].raw_memory == "## Knowledge\n- keep tabs\n" and outputs[0].rollout_summary == "ok\n"
    result = sync_rollout_summaries(folder, outputs)
    assert result.written == [] and result.deleted == []
    assert not rebuild_raw_memories(folder, outputs)
    assert f"rollout_summary_file: {stem_for(outputs[0])}.md" in (folder / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8")
    assert f"rollout_summaries/{stem_for(outputs[0])}.md" in (folder / paths.MEMORY_FILE).read_text(encoding="utf-8")


def test_a_change_the_user_made_since_the_last_consolidation_is_still_a_change(store: MemoryStore, folder: Path) -> None:
    notes = folder / paths.ad_hoc_notes_dir()
    pending = notes / "2025-03-01T00-00-00-pending.md"
    pending.write_text("use the blue pager for Project Falcon\nand ring twice\n", encoding="utf-8")
    handbook_mtime = (folder / paths.MEMORY_FILE).stat().st_mtime_ns
    consolidated = notes / "2025-01-02T03-04-05-project-falcon-launch.md"
    os.utime(consolidated, ns=(handbook_mtime - 10**9, handbook_mtime - 10**9))  # folded in by the last phase 2
    os.utime(pending, ns=(handbook_mtime + 10**9, handbook_mtime + 10**9))  # added after it
    before = [entry.source for entry in pending_notes(SandboxedFolder(folder), after_ns=handbook_mtime)]

    forget_match(store, open_memory_root(folder), CODE_NAME)

    assert [change.path for change in workspace_diff(folder).changes] == ["extensions/ad_hoc/notes/2025-03-01T00-00-00-pending.md"]
    assert (folder / paths.MEMORY_FILE).stat().st_mtime_ns == handbook_mtime
    after = pending_notes(SandboxedFolder(folder), after_ns=(folder / paths.MEMORY_FILE).stat().st_mtime_ns)
    assert [entry.source for entry in after] == before == ["extensions/ad_hoc/notes/2025-03-01T00-00-00-pending.md"]
    assert [entry.text for entry in after] == ["and ring twice"]


def test_a_codex_baseline_with_history_branches_and_packs_is_left_as_one_clean_commit(store: MemoryStore, folder: Path) -> None:
    (folder / paths.MEMORY_FILE).write_text("# Memory\n- Project Falcon v2\n", encoding="utf-8")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "Project Falcon second commit")
    git(folder, "branch", "falcon-archive")
    git(folder, "config", "branch.falcon-archive.description", "Project Falcon archive")
    git(folder, "tag", "-a", "falcon-v1", "-m", "Project Falcon tag")
    git(folder, "gc", "-q")  # packs everything, keeps reflogs
    git(folder, "reset", "-q", "--hard", "HEAD~1")  # ORIG_HEAD and the reflog keep the commit alive

    forget_match(store, open_memory_root(folder), CODE_NAME)

    assert not holds_code_name(everything_in(folder))
    assert git(folder, "for-each-ref", "--format=%(refname)").decode().split() == ["refs/heads/main"]
    assert git(folder, "rev-list", "--all", "--reflog").decode().count("\n") == 1
    assert git(folder, "fsck", "--unreachable", "--dangling", "--no-progress") == b""


def test_an_object_store_root_is_scrubbed_with_its_baseline_archive(store: MemoryStore, folder: Path, tmp_path: Path) -> None:
    root = open_memory_root(f"memory://forget-{time.time_ns()}/memories")
    push(folder, root, WorkspaceSnapshot())
    assert root.is_file(paths.baseline_archive_path())

    listed = plan_match_forget(store, root, CODE_NAME).describe()
    [action] = forget_match(store, root, CODE_NAME)

    assert any(line.startswith(".git (the folder's git baseline)") for line in listed)
    assert action.removed["git_baseline"]["files_renamed"] == 2
    mirror = LocalWorkspace(root, tmp_path / "pulled")
    mirror.pull()
    assert not holds_code_name(everything_in(mirror.path))
    assert git(mirror.path, "status", "--porcelain") == b""


def test_copies_of_the_old_folder_beside_it_are_deleted_and_listed(store: MemoryStore, folder: Path) -> None:
    staging = folder.parent / ".memories.staging-dead-run"
    proposal = folder.parent / ".memories.proposal"
    for copy in (staging, proposal):
        (copy / paths.MEMORY_FILE).parent.mkdir(parents=True)
        (copy / paths.MEMORY_FILE).write_text("- Project Falcon\n", encoding="utf-8")

    listed = plan_match_forget(store, open_memory_root(folder), CODE_NAME).describe()
    forget_match(store, open_memory_root(folder), CODE_NAME)

    assert f"{staging}: deleted (a copy of the memory folder a stopped phase 2 left behind)" in listed
    assert any(line.startswith(f"{proposal}: deleted (the consolidation waiting for review") for line in listed)
    assert not staging.exists() and not proposal.exists()


def test_a_reset_deletes_the_copies_beside_the_folder_too(store: MemoryStore, folder: Path) -> None:
    staging = folder.parent / ".memories.staging-dead-run"
    (staging / "sub").mkdir(parents=True)
    assert str(staging) in plan_reset(store, open_memory_root(folder)).describe()

    [action] = reset_memories(store, open_memory_root(folder))

    assert not staging.exists() and action.removed["copies_deleted"] == [str(staging)]


def test_a_skill_named_after_the_text_is_renamed_and_its_mentions_follow(store: MemoryStore, folder: Path) -> None:
    skill = folder / paths.SKILLS_DIR / "falcon-deploy"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: deploy with the blue pager\n---\nRun scripts/go.sh\n", encoding="utf-8")
    (skill / "scripts" / "go.sh").write_text("#!/bin/sh\necho go\n", encoding="utf-8")
    (skill / "scripts" / "go.sh").chmod(0o755)
    with (folder / paths.MEMORY_FILE).open("a", encoding="utf-8") as handbook:
        handbook.write("- the deploy skill: skills/falcon-deploy/SKILL.md\n")

    forget_match(store, open_memory_root(folder), "falcon")

    moved = folder / paths.SKILLS_DIR / "deploy"
    assert not skill.exists() and (moved / "SKILL.md").is_file()
    assert os.access(moved / "scripts" / "go.sh", os.X_OK)  # a rename keeps the file as it was
    assert "- the deploy skill: skills/deploy/SKILL.md\n" in (folder / paths.MEMORY_FILE).read_text(encoding="utf-8")


def test_a_note_left_blank_is_deleted_not_renamed(store: MemoryStore, folder: Path) -> None:
    note = folder / paths.ad_hoc_notes_dir() / "2025-04-01T00-00-00-falcon.md"
    note.write_text("Falcon\n", encoding="utf-8")
    plan = plan_match_forget(store, open_memory_root(folder), "falcon")
    assert "extensions/ad_hoc/notes/2025-04-01T00-00-00-falcon.md: deleted (nothing is left in the note)" in plan.describe()

    forget_match(store, open_memory_root(folder), "falcon")

    assert sorted(path.name for path in (folder / paths.ad_hoc_notes_dir()).iterdir()) == ["2025-01-02T03-04-05-project-launch.md"]


def test_lines_that_record_a_folder_or_a_project_keep_the_text_so_no_memory_changes_scope(store: MemoryStore, tmp_path: Path) -> None:
    raw = "scope: project\nproject_key: github.com/acme/falcon-api\n- keep tabs\n- page falcon on Fridays\n"
    remember_thread(store, "t-falcon", raw_memory=raw, cwd="/src/falcon-api", rollout_slug=None)
    output = store.get_stage1_output("t-falcon")
    root = tmp_path / "memories"
    sync_rollout_summaries(root, [output])
    rebuild_raw_memories(root, [output])
    group = "# Task Group: github.com/acme/falcon-api\napplies_to: cwd=/src/falcon-api; project=github.com/acme/falcon-api\n\n"
    (root / paths.MEMORY_FILE).write_text(group + "## User preferences\n- keep tabs\n- page falcon on Fridays\n", encoding="utf-8")

    listed = plan_match_forget(store, open_memory_root(root), "falcon").describe()
    forget_match(store, open_memory_root(root), "falcon")

    assert (root / paths.MEMORY_FILE).read_text(encoding="utf-8") == group + "## User preferences\n- keep tabs\n"
    assert store.get_stage1_output("t-falcon").raw_memory == "scope: project\nproject_key: github.com/acme/falcon-api\n- keep tabs\n"
    kept = "  (kept: it says where a memory comes from or which project it belongs to)"
    assert "MEMORY.md:1: # Task Group: github.com/acme/falcon-api" + kept in listed
    assert "raw_memories.md:7: cwd: /src/falcon-api" + kept in listed
    assert "stage-1 output of thread t-falcon, raw_memory:2: project_key: github.com/acme/falcon-api" + kept in listed
    assert listed[-1] == (
        "not changed: 1 session folder(s) hold the text (/src/falcon-api); the lines that record a session's folder or "
        "project keep it, and phase 2 writes them again from the session's record: `codex-memories forget --project <folder>` "
        "forgets those sessions"
    )
    outputs = [store.get_stage1_output("t-falcon")]
    assert sync_rollout_summaries(root, outputs).written == [] and not rebuild_raw_memories(root, outputs)


def test_a_secret_looking_text_is_redacted_wherever_it_is_shown_and_never_audited(store: MemoryStore, folder: Path) -> None:
    secret = SECRET_VALUES["github_token"]
    (folder / paths.MEMORY_FILE).write_text(f"# Memory\n- token {secret}\n", encoding="utf-8")
    assert secret not in shown_match_text(secret) and "REDACTED" in shown_match_text(secret)
    assert not any(secret in line for line in plan_match_forget(store, open_memory_root(folder), secret).describe())

    [action] = record_actions(store, forget_match(store, open_memory_root(folder), secret))

    assert secret not in action.target and secret not in str(store.list_forget_audit()[0])
    assert secret not in everything_in(folder)


def test_forget_match_waits_for_a_running_consolidation(store: MemoryStore, folder: Path) -> None:
    store.enqueue_global_consolidation(int(time.time()))
    claim = store.try_claim_global_phase2_job(worker_id="w", lease_seconds=600)
    assert claim.ownership_token
    with pytest.raises(ResetRefused, match="phase 2 is consolidating"):
        forget_match(store, open_memory_root(folder), CODE_NAME)
    assert holds_code_name((folder / paths.MEMORY_FILE).read_text(encoding="utf-8"))
