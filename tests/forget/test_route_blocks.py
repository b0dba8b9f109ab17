"""Each forgetting route block's decision (setup -> actions), the one audit writer, and the
forget flow's route names. Route blocks never write an audit row: every test checks it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codex_memories.forget.audit import ForgetAction, audit_mark, audit_rows_after, record_actions
from codex_memories.forget.empty_reextraction import empty_reextraction_actions
from codex_memories.forget.manual import ResetRefused, manual_change_actions, reset_memories
from codex_memories.forget.retention import prune_stale_outputs
from codex_memories.forget.selection_window import selection_window_actions
from codex_memories.forget.threads import (
    UnknownThread,
    disable_thread,
    forget_deleted_threads,
    forget_thread,
    pollute_thread,
    polluted_thread_actions,
)
from codex_memories.memory_folder.workspace import Change
from codex_memories.state.records import ForgetRoute, JobKind, MemoryMode, Stage1Output
from codex_memories.state.store import MemoryStore
from codex_memories.storage import open_memory_root
from tests.state.support import DAY, NOW, FakeClock, execute_sql, insert_output, make_thread


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}", clock=clock)
    try:
        yield opened
    finally:
        opened.close()


def add_thread(
    store: MemoryStore,
    thread_id: str,
    *,
    memory: bool = True,
    selected: bool = False,
    mode: MemoryMode = MemoryMode.enabled,
    missing: bool = False,
    source_age_days: int = 1,
    last_usage_age_days: int | None = None,
) -> None:
    thread = make_thread(thread_id, memory_mode=mode)
    store.upsert_threads([thread])
    if memory:
        insert_output(
            store,
            thread_id,
            source_updated_at=NOW - source_age_days * DAY,
            last_usage=None if last_usage_age_days is None else NOW - last_usage_age_days * DAY,
            selected_for_phase2=int(selected),
        )
        execute_sql(store, "UPDATE stage1_outputs SET rollout_slug = :slug WHERE thread_id = :id", slug=f"slug-{thread_id}", id=thread_id)
    if missing:
        store.mark_threads_missing([thread.rollout_path])


def output_facts(thread_id: str, *, selected: bool, source_age_days: int = 1) -> dict[str, Any]:
    return {
        "stage1_output": {"rollout_slug": f"slug-{thread_id}", "source_updated_at": NOW - source_age_days * DAY},
        "was_selected_for_phase2": selected,
    }


def mode_facts(before: str, after: str, *, kept: bool, enqueued: bool) -> dict[str, Any]:
    return {"memory_mode": f"{before} -> {after}", "stage1_output_kept": kept, "phase2_enqueued": enqueued}


# ---- the writer ----------------------------------------------------------------------------


def test_record_actions_writes_one_row_per_action_in_order_and_returns_them(store: MemoryStore, clock: FakeClock) -> None:
    actions = [
        ForgetAction(route=ForgetRoute.retention_prune, target="a", reason="stale", removed={"stage1_output": "a"}),
        ForgetAction(route=ForgetRoute.user_edit, target="MEMORY.md", reason="edited", removed={"status": "M"}),
    ]

    assert record_actions(store, actions) == actions

    rows = store.list_forget_audit()
    assert [(row.route, row.target, row.reason, row.removed, row.created_at) for row in rows] == [
        (ForgetRoute.retention_prune, "a", "stale", {"stage1_output": "a"}, NOW),
        (ForgetRoute.user_edit, "MEMORY.md", "edited", {"status": "M"}, NOW),
    ]
    assert all(isinstance(row.route, ForgetRoute) for row in rows)
    clock.advance(10)
    assert record_actions(store, []) == []
    mark = audit_mark(store)
    assert audit_rows_after(store, mark) == []
    assert len(audit_rows_after(store, 0)) == 2
    record_actions(store, [ForgetAction(ForgetRoute.manual_reset, "all", "reset", {})])
    assert [row.route for row in audit_rows_after(store, mark)] == [ForgetRoute.manual_reset]


# ---- route 1: retention prune --------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "limit", "expected"),
    [
        ({}, 10, []),
        ({"fresh": {"source_age_days": 10}}, 10, []),
        ({"stale": {"source_age_days": 60}}, 10, ["stale"]),
        ({"stale_selected": {"source_age_days": 60, "selected": True}}, 10, []),
        ({"stale_but_used": {"source_age_days": 60, "last_usage_age_days": 2}}, 10, []),
        ({"fifty": {"source_age_days": 50}, "sixty": {"source_age_days": 60}, "forty": {"source_age_days": 40}}, 2, ["sixty", "fifty"]),
    ],
    ids=["nothing", "fresh-kept", "stale-pruned", "selected-kept", "recently-used-kept", "stalest-first-up-to-limit"],
)
def test_retention_prunes_stale_unselected_rows_and_returns_one_action_each(
    store: MemoryStore, rows: dict[str, dict[str, Any]], limit: int, expected: list[str]
) -> None:
    for thread_id, fields in rows.items():
        add_thread(store, thread_id, **fields)

    actions = prune_stale_outputs(store, max_unused_days=30, limit=limit)

    assert actions == [
        ForgetAction(
            route=ForgetRoute.retention_prune,
            target=thread_id,
            reason="unselected and unused for more than 30 days",
            removed={"stage1_output": thread_id},
        )
        for thread_id in expected
    ]
    assert all(store.get_stage1_output(thread_id) is None for thread_id in expected)
    assert store.list_forget_audit() == []


# ---- route 2: selection window -------------------------------------------------------------


@pytest.mark.parametrize(
    "deleted",
    [[], ["rollout_summaries/a.md"], ["rollout_summaries/b.md", "rollout_summaries/a.md"]],
    ids=["none", "one", "order-kept"],
)
def test_selection_window_returns_one_action_per_deleted_summary(deleted: list[str]) -> None:
    assert selection_window_actions(deleted) == [
        ForgetAction(
            route=ForgetRoute.selection_window,
            target=path,
            reason="no longer among the selected stage-1 outputs (window, top-N, or its row was forgotten)",
            removed={"file": path},
        )
        for path in deleted
    ]


# ---- route 3: empty re-extraction ----------------------------------------------------------


def stage1_output(slug: str | None) -> Stage1Output:
    return Stage1Output(thread_id="t", source_updated_at=NOW - DAY, raw_memory="r", rollout_summary="s", rollout_slug=slug, generated_at=NOW - DAY)


@pytest.mark.parametrize(
    ("previous", "expected_removed"),
    [
        (None, None),
        (stage1_output("pnpm"), {"stage1_output_source_updated_at": NOW - DAY, "rollout_slug": "pnpm"}),
        (stage1_output(None), {"stage1_output_source_updated_at": NOW - DAY, "rollout_slug": None}),
    ],
    ids=["first-extraction-forgets-nothing", "row-with-slug", "row-without-slug"],
)
def test_empty_reextraction_describes_the_row_it_replaced(previous: Stage1Output | None, expected_removed: dict | None) -> None:
    actions = empty_reextraction_actions("t", previous)

    if expected_removed is None:
        assert actions == []
    else:
        assert actions == [
            ForgetAction(
                route=ForgetRoute.empty_reextraction,
                target="t",
                reason="re-extraction of the updated rollout found nothing worth keeping",
                removed=expected_removed,
            )
        ]


# ---- route 4: thread deletion --------------------------------------------------------------


@pytest.mark.parametrize(
    ("threads", "expected"),
    [
        ({"present": {}}, []),
        ({"gone_without_memory": {"missing": True, "memory": False}}, []),
        ({"gone": {"missing": True, "selected": True}}, [("gone", True)]),
        ({"gone": {"missing": True}, "present": {}}, [("gone", False)]),
    ],
    ids=["present-kept", "missing-without-memory", "missing-selected", "only-the-missing-one"],
)
def test_deleted_threads_lose_their_memory_with_one_action_each(
    store: MemoryStore, threads: dict[str, dict[str, Any]], expected: list[tuple[str, bool]]
) -> None:
    for thread_id, fields in threads.items():
        add_thread(store, thread_id, **fields)

    actions = forget_deleted_threads(store)

    assert [(action.route, action.target, action.removed) for action in actions] == [
        (ForgetRoute.thread_deletion, thread_id, output_facts(thread_id, selected=selected)) for thread_id, selected in expected
    ]
    assert all(action.reason.startswith("rollout file disappeared: ") for action in actions)
    assert all(store.get_stage1_output(thread_id) is None for thread_id, _ in expected)
    assert forget_deleted_threads(store) == []  # idempotent
    assert store.list_forget_audit() == []


@pytest.mark.parametrize(
    ("setup", "expected_removed"),
    [
        ({}, output_facts("t", selected=False) | {"memory_mode": "enabled -> disabled"}),
        ({"memory": False}, {"stage1_output": None, "memory_mode": "enabled -> disabled"}),
        ({"mode": MemoryMode.disabled}, output_facts("t", selected=False)),
        ({"mode": MemoryMode.polluted, "selected": True}, output_facts("t", selected=True) | {"memory_mode": "polluted -> disabled"}),
        ({"memory": False, "mode": MemoryMode.disabled}, None),
    ],
    ids=["enabled-with-memory", "enabled-without-memory", "disabled-with-memory", "polluted-selected", "nothing-to-forget"],
)
def test_forget_thread_deletes_the_memory_and_disables_the_thread(
    store: MemoryStore, setup: dict[str, Any], expected_removed: dict | None
) -> None:
    add_thread(store, "t", **setup)

    actions = forget_thread(store, "t", root=None, reason="asked")

    if expected_removed is None:
        assert actions == []
    else:
        assert actions == [ForgetAction(route=ForgetRoute.thread_deletion, target="t", reason="asked", removed=expected_removed)]
    assert store.get_stage1_output("t") is None
    assert store.get_thread("t").memory_mode is MemoryMode.disabled
    assert forget_thread(store, "t", root=None) == []  # idempotent
    assert store.list_forget_audit() == []


# ---- route 5: pollution and disabling ------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "route", "after"),
    [(disable_thread, ForgetRoute.disabled, MemoryMode.disabled), (pollute_thread, ForgetRoute.pollution, MemoryMode.polluted)],
    ids=["disable", "pollute"],
)
@pytest.mark.parametrize(
    ("setup", "expected_removed"),
    [
        ({"selected": True}, {"before": "enabled", "kept": True, "enqueued": True}),
        ({}, {"before": "enabled", "kept": True, "enqueued": False}),
        ({"memory": False}, {"before": "enabled", "kept": False, "enqueued": False}),
        ({"mode": "after"}, None),
    ],
    ids=["selected", "unselected", "without-memory", "already-in-that-mode"],
)
def test_a_mode_change_keeps_the_row_and_returns_one_action_unless_nothing_changed(
    store: MemoryStore, block, route: ForgetRoute, after: MemoryMode, setup: dict[str, Any], expected_removed: dict | None
) -> None:
    if setup.get("mode") == "after":
        setup = {"mode": after}
    add_thread(store, "t", **setup)

    actions = block(store, "t", reason="asked")

    if expected_removed is None:
        assert actions == []
    else:
        facts = mode_facts(expected_removed["before"], after.value, kept=expected_removed["kept"], enqueued=expected_removed["enqueued"])
        assert actions == [ForgetAction(route=route, target="t", reason="asked", removed=facts)]
        enqueued = store.get_job(JobKind.consolidate_global, "global")
        assert (enqueued is not None and enqueued.status == "pending") is expected_removed["enqueued"]
    assert store.get_thread("t").memory_mode is after
    assert (store.get_stage1_output("t") is not None) is setup.get("memory", True)
    assert block(store, "t") == []  # idempotent
    assert store.list_forget_audit() == []


@pytest.mark.parametrize("block", [forget_thread, disable_thread, pollute_thread])
def test_the_on_request_thread_routes_refuse_an_unknown_thread(store: MemoryStore, block) -> None:
    with pytest.raises(UnknownThread):
        block(store, "nobody", **({"root": None} if block is forget_thread else {}))


@pytest.mark.parametrize(
    ("threads", "expected"),
    [
        ({}, []),
        ({"with_memory": {"selected": True}}, [("with_memory", True, True)]),
        ({"without_memory": {"memory": False}}, [("without_memory", False, False)]),
    ],
    ids=["none", "selected-memory", "no-memory"],
)
def test_threads_discovery_polluted_are_described_without_changing_anything(
    store: MemoryStore, threads: dict[str, dict[str, Any]], expected: list[tuple[str, bool, bool]]
) -> None:
    for thread_id, fields in threads.items():
        add_thread(store, thread_id, mode=MemoryMode.polluted, **fields)

    actions = polluted_thread_actions(store, list(threads))

    assert actions == [
        ForgetAction(
            route=ForgetRoute.pollution,
            target=thread_id,
            reason="the session used external context and disable_on_external_context is on",
            removed=mode_facts("enabled", "polluted", kept=kept, enqueued=enqueued),
        )
        for thread_id, kept, enqueued in expected
    ]
    assert store.list_forget_audit() == []


# ---- route 7: manual -----------------------------------------------------------------------


NOTE = "extensions/ad_hoc/notes/2026-03-01T12-00-00-forget-pnpm.md"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (Change("A", NOTE), (ForgetRoute.ad_hoc_note, "ad-hoc note added, given to the consolidator", {"status": "A", "note": "Forget pnpm."})),
        (Change("M", NOTE), (ForgetRoute.ad_hoc_note, "ad-hoc note edited, given to the consolidator", {"status": "M", "note": "Forget pnpm."})),
        (Change("D", NOTE), None),
        (Change("M", "MEMORY.md"), (ForgetRoute.user_edit, "changed outside consolidation (a user edit), taken as authoritative", {"status": "M"})),
        (Change("D", "memory_summary.md"), (ForgetRoute.user_edit, "changed outside consolidation (a user edit), taken as authoritative", {"status": "D"})),
        (Change("A", "skills/deploy/SKILL.md"), (ForgetRoute.user_edit, "changed outside consolidation (a user edit), taken as authoritative", {"status": "A"})),
        (Change("D", "rollout_summaries/x.md"), None),
        (Change("M", "raw_memories.md"), None),
        (Change("M", "extensions/ad_hoc/instructions.md"), None),
    ],
    ids=["note-added", "note-edited", "note-deleted", "memory-md", "summary-deleted", "skill-added", "summary-input", "raw-memories", "ad-hoc-instructions"],
)
def test_manual_changes_become_note_and_user_edit_actions(tmp_path: Path, change: Change, expected: tuple | None) -> None:
    (tmp_path / NOTE).parent.mkdir(parents=True)
    (tmp_path / NOTE).write_text("  Forget pnpm.\n")

    actions = manual_change_actions(tmp_path, [change])

    if expected is None:
        assert actions == []
    else:
        route, reason, removed = expected
        assert actions == [ForgetAction(route=route, target=change.path, reason=reason, removed=removed)]


def test_a_note_that_vanished_before_the_audit_has_an_empty_preview(tmp_path: Path) -> None:
    [action] = manual_change_actions(tmp_path, [Change("A", NOTE)])
    assert action.removed == {"status": "A", "note": ""}


def test_reset_returns_one_action_describing_what_it_deleted(store: MemoryStore, tmp_path: Path) -> None:
    add_thread(store, "a")
    add_thread(store, "b")
    folder = tmp_path / "memories"
    (folder / ".git").mkdir(parents=True)
    (folder / "MEMORY.md").write_text("x")
    root = open_memory_root(folder)

    [action] = reset_memories(store, root, reason="asked")

    assert action.route is ForgetRoute.manual_reset
    assert (action.target, action.reason) == (root.url, "asked")
    assert action.removed == {
        "rows": {"stage1_outputs": 2, "memory_stage1": 0, "memory_consolidate_global": 0},
        "memory_files": 1,
        "git_baseline": True,
    }
    # Only the folder's history stays (an empty bookkeeping folder here: no ledger, no binding yet).
    assert [path.relative_to(folder).as_posix() for path in folder.rglob("*")] == [".codex-memories"]
    assert store.get_thread("a") is not None  # threads stay
    assert store.list_forget_audit() == []


def test_reset_refuses_while_phase2_holds_its_lease(store: MemoryStore, clock: FakeClock, tmp_path: Path) -> None:
    clock.now = time.time()  # the reset compares the lease with the wall clock
    assert store.try_claim_global_phase2_job(worker_id="w", lease_seconds=3600).ownership_token
    with pytest.raises(ResetRefused):
        reset_memories(store, open_memory_root(tmp_path / "memories"))
    assert store.get_job(JobKind.consolidate_global, "global").status == "running"
