"""The forgetting routes of spec section 6, end to end through the real flows.

Each test: the setup (two remembered sessions, phase 1 then phase 2 with the offline heuristic
provider), the action, the memory gone from the state DB and from the memory folder after the
next phase 2, and the `forget_audit` row, also shown in the run's report.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from codex_memories import paths
from codex_memories.reports.phase1 import render_phase1_markdown
from codex_memories.reports.phase2 import render_phase2_markdown
from codex_memories.state.records import JobKind, MemoryMode
from codex_memories.storage import STATE_BINDING_PATH
from tests.support.memory_home import MemoryHome
from tests.support.rollout_factory import rollout_lines

pytestmark = pytest.mark.usefixtures("prefect_harness")

PNPM = "I prefer pnpm over npm in this repo."
DEPLOY = "Remember that the deploy command is make ship."


def remember_two_sessions(home: MemoryHome) -> tuple[str, str]:
    pnpm_thread, _ = home.rollout(PNPM, cwd="/home/dana/src/alpha")
    deploy_thread, _ = home.rollout(DEPLOY, cwd="/home/dana/src/beta")
    assert home.phase1().outcome_counts()["succeeded"] == 2
    assert home.phase2().outcome.value == "succeeded"
    assert "pnpm" in home.memory_text() and "make ship" in home.memory_text()
    return pnpm_thread, deploy_thread


def audit_rows(home: MemoryHome, route: str) -> list:
    return [row for row in home.store.list_forget_audit() if row.route == route]


def partition(rows: list, first) -> tuple[list, list]:
    return [row for row in rows if first(row)], [row for row in rows if not first(row)]


def assert_pnpm_forgotten_from_files(home: MemoryHome) -> None:
    text = home.memory_text()
    assert "pnpm" not in text
    assert "make ship" in text  # the other memory stays
    assert len(home.rollout_summaries()) == 1


def append_lines(path, lines: list[dict]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


# ---- route 4: thread deletion --------------------------------------------------------------


def test_a_deleted_rollout_file_forgets_its_thread_at_the_next_runs(home: MemoryHome) -> None:
    pnpm_thread, _ = remember_two_sessions(home)
    rollout = next(home.codex_home.glob(f"sessions/**/*{pnpm_thread}.jsonl"))

    rollout.unlink()
    report = home.phase1()

    assert home.store.get_stage1_output(pnpm_thread) is None
    assert home.store.get_job(JobKind.stage1, pnpm_thread) is None
    [row] = audit_rows(home, "thread_deletion")
    assert row.target == pnpm_thread and "rollout file disappeared" in row.reason
    assert row.removed["was_selected_for_phase2"] is True
    assert report.discovery["memories forgotten (rollout deleted)"] == 1
    assert [r.target for r in report.forget_audit] == [pnpm_thread]
    assert f"`{pnpm_thread}`" in render_phase1_markdown(report)

    home.phase2()  # enqueued by the deletion: the folder follows
    assert_pnpm_forgotten_from_files(home)
    # Idempotent: the next run finds nothing more to forget.
    home.phase1()
    assert len(audit_rows(home, "thread_deletion")) == 1


def test_forget_command_deletes_a_threads_memory_and_it_is_not_extracted_again(home: MemoryHome) -> None:
    pnpm_thread, _ = remember_two_sessions(home)

    result = home.cli("forget", "--thread", pnpm_thread)

    assert result.returncode == 0, result.stderr
    assert f"forgot thread {pnpm_thread}" in result.stdout
    assert home.store.get_stage1_output(pnpm_thread) is None
    assert home.store.get_thread(pnpm_thread).memory_mode == MemoryMode.disabled
    [row] = audit_rows(home, "thread_deletion")
    assert row.target == pnpm_thread and row.removed["memory_mode"] == "enabled -> disabled"

    home.rollout("I prefer tabs in Makefiles.", cwd="/home/dana/src/gamma")  # new work arrives
    assert home.phase1().outcome_counts()["succeeded"] == 1  # the forgotten thread is not re-claimed
    home.phase2()
    assert home.store.get_stage1_output(pnpm_thread) is None
    assert "pnpm" not in home.memory_text()


# ---- route 5: pollution and disabling ------------------------------------------------------


def test_disable_command_takes_a_thread_out_of_the_memory_folder(home: MemoryHome) -> None:
    pnpm_thread, _ = remember_two_sessions(home)

    result = home.cli("disable", "--thread", pnpm_thread)

    assert result.returncode == 0, result.stderr
    assert home.store.get_thread(pnpm_thread).memory_mode == MemoryMode.disabled
    assert home.store.get_stage1_output(pnpm_thread) is not None  # the row stays (spec 6, route 5)
    assert home.store.get_job(JobKind.consolidate_global, "global").status == "pending"  # enqueued
    [row] = audit_rows(home, "disabled")
    assert row.target == pnpm_thread and row.removed["phase2_enqueued"] is True

    report = home.phase2()
    assert_pnpm_forgotten_from_files(home)
    assert report.outcome.value == "succeeded"
    # Again: nothing changes, nothing is audited.
    again = home.cli("disable", "--thread", pnpm_thread)
    assert again.returncode == 0 and "already disabled" in again.stdout
    assert len(audit_rows(home, "disabled")) == 1


def test_a_session_that_later_used_web_search_is_forgotten_as_polluted(home: MemoryHome) -> None:
    home.write_codex_config("disable_on_external_context = true")
    pnpm_thread, _ = remember_two_sessions(home)
    rollout = next(home.codex_home.glob(f"sessions/**/*{pnpm_thread}.jsonl"))

    later = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    append_lines(
        rollout,
        [{"timestamp": later, "type": "response_item", "payload": {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "pnpm"}}}],
    )
    report = home.phase1()

    assert home.store.get_thread(pnpm_thread).memory_mode == MemoryMode.polluted
    [row] = audit_rows(home, "pollution")
    assert row.target == pnpm_thread and "external context" in row.reason
    assert [r.route for r in report.forget_audit] == ["pollution"]
    home.phase2()
    assert_pnpm_forgotten_from_files(home)


def test_the_forget_flow_marks_a_thread_polluted_and_reports_the_audit_row(home: MemoryHome) -> None:
    from codex_memories_flows.forget import forget

    pnpm_thread, _ = remember_two_sessions(home)

    report = forget(route="pollution", target=pnpm_thread, overrides=home.overrides())

    assert [(row.route, row.target) for row in report.forget_audit] == [("pollution", pnpm_thread)]
    assert home.store.get_thread(pnpm_thread).memory_mode == MemoryMode.polluted
    assert len(audit_rows(home, "pollution")) == 1
    home.phase2()
    assert_pnpm_forgotten_from_files(home)


def test_the_forget_flow_refuses_a_thread_route_without_a_target(home: MemoryHome) -> None:
    from codex_memories_flows.forget import forget

    state = forget(route="disabled", overrides=home.overrides(), return_state=True)
    assert state.is_failed()
    assert home.store.list_forget_audit() == []


# ---- route 7: manual -----------------------------------------------------------------------


def test_reset_forgets_every_row_and_every_file_and_the_next_runs_start_over(home: MemoryHome) -> None:
    remember_two_sessions(home)

    refused = home.cli("reset")
    assert refused.returncode == 1
    assert "2 stage1_outputs" in refused.stdout and "file(s)" in refused.stdout
    assert refused.stderr.strip() == "codex-memories: refusing to reset without --yes"
    assert home.store.status_summary().stage1_outputs == 2

    done = home.cli("reset", "--yes")

    assert done.returncode == 0, done.stderr
    assert home.store.status_summary().stage1_outputs == 0
    # Every file, .git included; the folder's history stays (its binding to this state DB, the
    # forget ledger when there is one): a reset must not bring back what was forgotten before.
    left = sorted(path.relative_to(home.memory_root).as_posix() for path in home.memory_root.rglob("*") if path.is_file())
    assert left == [STATE_BINDING_PATH], left
    [row] = audit_rows(home, "manual_reset")
    assert row.removed["rows"]["stage1_outputs"] == 2 and row.removed["memory_files"] > 0
    # Threads (and their memory modes) stay, so the next runs rebuild from the rollouts.
    assert home.phase1().outcome_counts()["succeeded"] == 2
    assert home.phase2().outcome.value == "succeeded"
    assert "pnpm" in home.memory_text()


def test_an_ad_hoc_forget_note_removes_the_preference_and_is_audited(home: MemoryHome) -> None:
    remember_two_sessions(home)

    result = home.cli("note", "Please forget that I prefer pnpm over npm.", "--slug", "forget-pnpm")
    assert result.returncode == 0, result.stderr
    report = home.phase2()

    summary = (home.memory_root / paths.MEMORY_SUMMARY_FILE).read_text()
    handbook = (home.memory_root / paths.MEMORY_FILE).read_text()
    # The preference is gone from both files (the heuristic consolidator drops matching
    # preferences; the task the session did stays listed under its own title).
    assert f'"{PNPM}"' not in summary and f'"{PNPM}"' not in handbook
    assert f'"{DEPLOY}"' in summary
    # Two rows: the `note` command's when it wrote the note, phase 2's when it folded it in.
    written, [row] = partition(audit_rows(home, "ad_hoc_note"), lambda one: one.removed.get("status") != "A")
    assert [one.reason.split(",")[0] for one in written] == ["note added by the user"]
    assert row.target.startswith("extensions/ad_hoc/notes/") and row.target.endswith("-forget-pnpm.md")
    # The note as the file holds it: the text, then the project it was typed in.
    assert row.removed["status"] == "A" and row.removed["note"].startswith("Please forget that I prefer pnpm over npm.\n\n(project=")
    assert [r.route for r in report.forget_audit] == ["ad_hoc_note"]
    assert "## Forget audit (1 row(s) written during this run)" in render_phase2_markdown(report)
    # The note is consumed once: the next consolidation does not audit it again.
    home.phase2()
    assert len(audit_rows(home, "ad_hoc_note")) == 2


def test_a_user_edit_of_memory_md_is_audited_as_authoritative(home: MemoryHome) -> None:
    remember_two_sessions(home)
    handbook = home.memory_root / paths.MEMORY_FILE
    handbook.write_text(handbook.read_text() + "\nA line the user added.\n")

    report = home.phase2()

    assert report.outcome.value == "succeeded"
    [row] = audit_rows(home, "user_edit")
    assert (row.target, row.removed) == ("MEMORY.md", {"status": "M"})


# ---- routes 1, 2, 3 and 6, which existed before the audit was shown in the reports ---------


def test_an_unused_memory_leaves_the_selection_then_its_row_is_pruned(home: MemoryHome) -> None:
    home.rollout(DEPLOY, cwd="/home/dana/src/beta")
    old_thread, _ = home.rollout(PNPM, cwd="/home/dana/src/alpha", days_ago=10)
    home.phase1()
    home.phase2()
    assert "pnpm" in home.memory_text()

    # Route 2: with a 5-day window the old memory is not selected; the sync deletes its summary.
    home.write_codex_config("max_unused_days = 5")
    report = home.phase2()
    assert_pnpm_forgotten_from_files(home)
    assert [row.route for row in report.forget_audit] == ["selection_window"]
    assert home.store.get_stage1_output(old_thread).selected_for_phase2 is False

    # Route 1: now unselected and stale, the next phase 1 prunes the row (its job stays).
    report = home.phase1()
    assert home.store.get_stage1_output(old_thread) is None
    assert home.store.get_job(JobKind.stage1, old_thread) is not None
    assert report.pruned_thread_ids == [old_thread]
    assert [(row.route, row.target) for row in report.forget_audit] == [("retention_prune", old_thread)]


def test_an_empty_re_extraction_forgets_the_thread(home: MemoryHome) -> None:
    pnpm_thread, _ = remember_two_sessions(home)
    rollout = next(home.codex_home.glob(f"sessions/**/*{pnpm_thread}.jsonl"))
    # The session was rewritten (newer activity, nothing worth remembering any more).
    rewritten = rollout_lines(
        thread_id=pnpm_thread,
        created_at=datetime.now(UTC) - timedelta(hours=2),
        cwd="/home/dana/src/alpha",
        user_messages=["What time is it?"],
    )
    rollout.write_text("".join(json.dumps(line) + "\n" for line in rewritten))

    report = home.phase1()

    assert [line.outcome.value for line in report.extractions] == ["succeeded_no_output"]
    assert home.store.get_stage1_output(pnpm_thread) is None
    [row] = audit_rows(home, "empty_reextraction")
    assert row.target == pnpm_thread
    home.phase2()
    assert_pnpm_forgotten_from_files(home)


def test_an_expired_extension_resource_is_deleted_and_audited(home: MemoryHome) -> None:
    remember_two_sessions(home)
    resources = home.memory_root / "extensions" / "chronicle" / "resources"
    resources.mkdir(parents=True)
    (resources.parent / "instructions.md").write_text("Chronicle: screen activity summaries.\n")
    stamp = (datetime.now(UTC) - timedelta(days=8)).strftime("%Y-%m-%dT%H-%M-%S")
    old = resources / f"{stamp}-standup.md"
    old.write_text("Stand-up notes.\n")

    report = home.phase2()

    assert not old.exists()
    assert [(row.route, row.target) for row in report.forget_audit] == [
        ("extension_expiry", f"extensions/chronicle/resources/{stamp}-standup.md")
    ]
