"""The view behind `codex-memories show` (issue 30): built on the read path's own sorting, it says
what a session in a folder gets and what the folder holds that it does not get, and why."""

from __future__ import annotations

from pathlib import Path

from codex_memories.read.injection import EXPIRED, OTHER_PROJECT, build_session_context, read_folder_memory
from codex_memories.read.memory_view import forgotten_items, view_memory
from codex_memories.state.records import ForgetAuditRecord, ForgetRoute
from tests.read.test_read_path import A_KEY, B_KEY, NOW, checkout, group, write_folder


def folder(tmp_path: Path) -> Path:
    handbook = "\n\n".join(
        [
            group(A_KEY, {"User preferences": ["Tabs in atlas"], "Reusable knowledge": ["`make ship` deploys atlas"]}),
            group(B_KEY, {"User preferences": ["Spaces in billing"]}),
            group(
                None,
                {"User preferences": ["Answer in English", "Use the old staging cluster {memory: type=constraint; weight=0.5; expires=2026-11-30}"]},
            ),
        ]
    )
    summary = "\n".join(
        ["v1", "", "## User preferences", f"- Spaces in billing (project={B_KEY})", "", "## What's in Memory",
         f"### project={A_KEY}", "- deploy: make ship", "", f"### project={B_KEY}", "- release: push a tag"]
    )
    return write_folder(tmp_path / "memories", handbook=handbook, summary=summary)


def test_what_the_folder_holds_for_another_project_or_past_its_expiry_is_listed_once_with_why(tmp_path: Path) -> None:
    atlas = checkout(tmp_path, "atlas", A_KEY)
    root = folder(tmp_path)

    memory = read_folder_memory(root, cwd=str(atlas), session_key=A_KEY, now=NOW)

    left = {(item.text, item.reason, item.detail) for item in memory.left_out}
    assert left == {
        ("Spaces in billing", OTHER_PROJECT, B_KEY),  # met in MEMORY.md and in the summary: said once
        ('the summary\'s section "project=github.com/acme/billing"', OTHER_PROJECT, B_KEY),
        ("Use the old staging cluster", EXPIRED, "2026-11-30"),
    }
    assert [entry.text for entry in memory.project_rules] == ["Tabs in atlas"]
    assert [entry.text for entry in memory.user_rules] == ["Answer in English"]


def test_the_view_marks_each_entry_by_whether_the_session_start_text_holds_it(tmp_path: Path) -> None:
    atlas = checkout(tmp_path, "atlas", A_KEY)
    root = folder(tmp_path)

    for budget in (100, 160, 2_400):
        view = view_memory(root, cwd=str(atlas), budget_tokens=budget, now=NOW)
        context = build_session_context(root, cwd=str(atlas), budget_tokens=budget, now=NOW)
        text = context.text if context is not None else ""
        assert view.session_start_tokens == (context.codex_tokens if context is not None else 0)
        for entry in view.entries:
            assert entry.in_session_start == (f"- {entry.text} ({entry.source})" in text), (budget, entry)
    assert all(entry.in_session_start for entry in view_memory(root, cwd=str(atlas), now=NOW).entries)
    assert not any(entry.in_session_start for entry in view_memory(root, cwd=str(atlas), budget_tokens=100, now=NOW).entries)


def test_a_folder_that_does_not_exist_is_an_empty_view(tmp_path: Path) -> None:
    view = view_memory(tmp_path / "nowhere", cwd=str(tmp_path), now=NOW)

    assert not view.folder_exists and view.entries == [] and view.index == [] and view.session_start_tokens == 0
    assert not (tmp_path / "nowhere").exists()


def test_forgotten_items_are_the_forgetting_routes_newest_first_in_words() -> None:
    def row(number: int, route: ForgetRoute, target: str, removed: object = None) -> ForgetAuditRecord:
        return ForgetAuditRecord(id=number, route=route, target=target, reason=f"reason {number}", removed=removed or {}, created_at=1_000 + number)

    items = forgotten_items([
        row(1, ForgetRoute.text_match, "make lint"),
        row(2, ForgetRoute.ad_hoc_note, "extensions/ad_hoc/notes/x.md"),  # a note given to phase 2: not a forget
        row(3, ForgetRoute.entry_expiry, "thread-1", {"entry": "Use the old staging cluster", "expires": "2026-11-30"}),
        row(4, ForgetRoute.user_edit, "MEMORY.md"),
    ])

    assert [(item.kind, item.target, item.reason) for item in items] == [
        ("expired", "Use the old staging cluster", "reason 3"),
        ("lines forgotten", "make lint", "reason 1"),
    ]
