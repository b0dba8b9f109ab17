"""Scopes kept through consolidation (issue 15): selection carries the scope lines into
raw_memories.md, and the heuristic consolidator gives user-level memory one task group and each
project its own, with the markers the read path filters on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.consolidate.heuristic import consolidate_heuristically
from codex_memories.consolidate.heuristic.parse import parse_raw_memories
from codex_memories.extract.scope_tagging import tag_raw_memory
from codex_memories.memory_folder.inputs import rebuild_raw_memories
from codex_memories.scopes import USER_LEVEL_LABEL
from codex_memories.state.records import Stage1Output

NOW = datetime(2026, 11, 20, tzinfo=UTC)


def block(number: int, name: str, preference: str, *, scope: str | None = None) -> str:
    scope_line = f"scope: {scope}\n" if scope else ""
    return f"### Task {number}: {name}\ntask: {name}\ntask_outcome: success\n{scope_line}\nPreference signals:\n- {preference}\n\n"


def output(thread_id: str, cwd: str, memory: str, *, scopes: list[str], key: str | None, updated: int) -> Stage1Output:
    front = f"---\ndescription: work in {cwd}\ntask: work\ntask_group: work\ntask_outcome: success\ncwd: {cwd}\nkeywords: work\n---\n\n"
    return Stage1Output(
        thread_id=thread_id, source_updated_at=updated, raw_memory=tag_raw_memory(front + memory, scopes, key),
        rollout_summary="# s\n", rollout_slug=None, generated_at=updated, cwd=cwd, rollout_path=f"/r/{thread_id}.jsonl",
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory_root = tmp_path / "memories"
    memory_root.mkdir()
    selection = [
        output("a1", "/work/a", block(1, "indentation", "in this repo use tabs") + block(2, "language", "in all my projects, answer in English"),
               scopes=["project", "user"], key="github.com/acme/a", updated=1_763_600_000),
        output("a2", "/work/a-clone", block(1, "tests", "run make check before pushing"),
               scopes=["project"], key="github.com/acme/a", updated=1_763_500_000),
        output("b1", "/work/b", block(1, "indentation", "in this repo use spaces"),
               scopes=["project"], key="github.com/acme/b", updated=1_763_400_000),
        output("legacy", "/work/old", block(1, "old", "prefer make over just"), scopes=[], key=None, updated=1_763_300_000),
    ]
    rebuild_raw_memories(memory_root, selection)
    return memory_root


def test_raw_memories_keep_the_scope_lines_inside_codexs_thread_sections(root):
    text = (root / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8")
    a1 = text.split("## Thread `a1`", 1)[1].split("## Thread `a2`", 1)[0]
    # Codex's header lines first (spec 8.2), the scope lines inside the raw memory.
    assert a1.startswith("\nupdated_at: ") and "\ncwd: /work/a\nrollout_path: /r/a1.jsonl\nrollout_summary_file: " in a1
    assert "project_key: github.com/acme/a" in a1 and "scope: user" in a1 and "scope: project" in a1

    entries = parse_raw_memories(text)
    scoped = {(entry.thread_id, entry.scope): entry for entry in entries}
    assert set(scoped) == {("a1", "project"), ("a1", "user"), ("a2", "project"), ("b1", "project"), ("legacy", "project")}
    assert scoped[("a1", "user")].lines["User preferences"] == ["in all my projects, answer in English"]
    assert scoped[("a1", "project")].lines["User preferences"] == ["in this repo use tabs"]
    assert scoped[("a1", "user")].description == "language"  # never the project's task


def test_memory_md_has_a_user_level_group_first_and_one_group_per_project_key(root):
    consolidate_heuristically(root, now=NOW)
    memory = (root / paths.MEMORY_FILE).read_text(encoding="utf-8")
    groups = [line.removeprefix("# Task Group: ") for line in memory.splitlines() if line.startswith("# Task Group: ")]

    assert groups == [USER_LEVEL_LABEL, "github.com/acme/a", "github.com/acme/b", "/work/old"]
    user_group = memory.split(f"# Task Group: {USER_LEVEL_LABEL}", 1)[1].split("# Task Group: ", 1)[0]
    assert "applies_to: cwd=any;" in user_group
    assert "answer in English" in user_group and "tabs" not in user_group
    a_group = memory.split("# Task Group: github.com/acme/a\n", 1)[1].split("# Task Group: ", 1)[0]
    # Two clones of one repository are one project.
    assert "applies_to: cwd=/work/a, /work/a-clone;" in a_group and a_group.split("\n")[1].endswith("; project=github.com/acme/a")
    assert "in this repo use tabs" in a_group and "make check" in a_group and "English" not in a_group
    assert "; project=/work/old" in memory  # an output from before scopes: keyed by its cwd


def test_the_summary_marks_every_project_line_and_leaves_user_level_ones_plain(root):
    consolidate_heuristically(root, now=NOW)
    summary = (root / paths.MEMORY_SUMMARY_FILE).read_text(encoding="utf-8")
    preferences = summary.split("## User preferences\n", 1)[1].split("\n## ", 1)[0].splitlines()

    assert preferences[0] == "- in all my projects, answer in English (all projects)"
    assert "- in this repo use tabs (project=github.com/acme/a; cwd=/work/a, /work/a-clone)" in preferences
    assert "- in this repo use spaces (project=github.com/acme/b; cwd=/work/b)" in preferences
    index = summary.split("## What's in Memory", 1)[1]
    assert f"### {USER_LEVEL_LABEL}" in index and "### project=github.com/acme/a" in index and "### project=github.com/acme/b" in index
    assert summary.splitlines()[0] == "v1"
    assert consolidate_heuristically(root, now=NOW).files_written == []  # idempotent with scopes


def test_the_consolidation_prompt_says_how_to_keep_scopes(tmp_path):
    from codex_memories.consolidate.consolidators import build_consolidation_prompt

    text = build_consolidation_prompt(tmp_path).text
    for required in ("scope: user", "project_key: <key>", USER_LEVEL_LABEL, "; project=<project key>", "### project=<project key>"):
        assert required in text, required
