"""The read path never serves a replaced value (issue 34, item 3): where a folder holds both an
earlier statement and the later one that replaced it (a model consolidation kept both, or two
folders of one project each kept theirs), a session gets the later one only."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.read.injection import REPLACED, Entry, build_session_context, read_folder_memory, replaced_entries

APP_KEY = "github.com/acme/app"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def group(title: str, cwd: str, updated: str, sections: dict[str, list[str]], *, project: str | None) -> str:
    applies = f"applies_to: cwd={cwd}; reuse_rule=use when working in {cwd}" + (f"; project={project}" if project else "")
    lines = [f"# Task Group: {title}", f"scope: work in {cwd} (1 session)", applies, "",
             "## Task 1: work, outcome: success", "", "### rollout_summary_files",
             f"- rollout_summaries/{updated}.md (updated_at={updated}T10:00:00+00:00, thread_id=t-{updated})", ""]
    for heading, bullets in sections.items():
        lines += [f"## {heading}", *[f"- {bullet} [Task 1]" for bullet in bullets], ""]
    return "\n".join(lines)


# Both statements reached the folder, the older group first in the file, in another folder.
MEMORY = "\n".join([
    group("user-level (every project)", "any", "2026-10-01", {"User preferences": ["Use pnpm for every repository."]}, project=None),
    group("user-level (every project)", "any", "2026-11-15", {"User preferences": ["Usa bun en todos los repositorios."]}, project=None),
    group(APP_KEY, "/work/app", "2026-10-01", {
        "User preferences": ["Use Node 18 for this project.", "Never push directly to main."],
        "Reusable knowledge": ["The dev database listens on port 5432.", "The AWS profile is `staging-admin`."],
    }, project=APP_KEY),
    group(APP_KEY, "/work/app-clone/api", "2026-11-15", {
        "User preferences": ["We are on Node 20 now."],
        "Reusable knowledge": ["開発DBのポートは5433です。", "AWSのプロファイルはprod-adminを使ってください。"],
    }, project=APP_KEY),
])
SUMMARY = """v1

## User preferences
- Use pnpm for every repository. (all projects)
- Usa bun en todos los repositorios. (all projects)

## What's in Memory
### user-level (every project)
#### 2026-11-15
- package manager
  - learnings: Use pnpm for every repository.
"""
REPLACED_VALUES = ("pnpm", "Node 18", "5432", "staging-admin")
NEWER_VALUES = ("bun", "Node 20", "5433", "prod-admin")


def make_repository(path: Path, origin: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {origin}\n', encoding="utf-8")
    return path


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    root.mkdir()
    (root / paths.MEMORY_FILE).write_text(MEMORY, encoding="utf-8")
    (root / paths.MEMORY_SUMMARY_FILE).write_text(SUMMARY, encoding="utf-8")
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "clones" / "app", "git@github.com:acme/app.git")


def test_a_session_start_carries_the_newer_value_and_never_the_replaced_one(memory_root: Path, checkout: Path) -> None:
    context = build_session_context(memory_root, cwd=str(checkout), now=NOW)
    assert context is not None
    for newer in NEWER_VALUES:
        assert newer in context.text
    for replaced in REPLACED_VALUES:
        assert replaced not in context.text
    assert "Never push directly to main." in context.text


def test_what_was_replaced_is_listed_as_left_out_with_what_replaced_it(memory_root: Path, checkout: Path) -> None:
    memory = read_folder_memory(memory_root, cwd=str(checkout), session_key=APP_KEY, now=NOW)
    replaced = {item.text: item.detail for item in memory.left_out if item.reason == REPLACED}
    assert replaced == {
        "Use pnpm for every repository.": "Usa bun en todos los repositorios.",
        "Use Node 18 for this project.": "We are on Node 20 now.",
        "The dev database listens on port 5432.": "開発DBのポートは5433です。",
        "The AWS profile is `staging-admin`.": "AWSのプロファイルはprod-adminを使ってください。",
    }


def test_a_note_written_after_the_consolidation_replaces_a_remembered_rule_at_once(memory_root: Path, checkout: Path) -> None:
    notes = memory_root / paths.ad_hoc_notes_dir()
    notes.mkdir(parents=True)
    (notes / "2026-11-30T10-00-00-node.md").write_text("Node 22 is the version now.\n", encoding="utf-8")
    context = build_session_context(memory_root, cwd=str(checkout), now=NOW)
    assert context is not None
    assert "Node 22" in context.text and "Node 20" not in context.text and "Node 18" not in context.text


def test_without_a_project_the_user_level_replacement_still_wins(memory_root: Path) -> None:
    context = build_session_context(memory_root, cwd=None, now=NOW)
    assert context is not None
    assert "bun" in context.text and "pnpm" not in context.text


def test_a_prompt_about_the_subject_gets_the_newer_value_and_never_the_replaced_one(memory_root: Path, checkout: Path) -> None:
    from codex_memories.read.index import build_index
    from codex_memories.read.prompt_context import memory_context_for_prompt

    build_index(memory_root)  # as phase 2 leaves it: the prompt hook never builds one
    text = memory_context_for_prompt(memory_root, "Which Node version does this project use?", str(checkout), 400)
    assert "Node 18" not in text
    text = memory_context_for_prompt(memory_root, "which package manager should I use for every repository, pnpm?", str(checkout), 400)
    assert "Use pnpm for every repository." not in text


def test_the_mcp_read_of_the_handbook_marks_the_replaced_lines_and_only_them(memory_root: Path, checkout: Path) -> None:
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def read_handbook() -> str:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "codex_memories.read.mcp_server", "--memory-root", str(memory_root)], cwd=str(checkout),
        )
        async with stdio_client(parameters) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                result = await session.call_tool("read", {"path": paths.MEMORY_FILE})
        assert not result.is_error
        return result.structured_content["content"]

    content = anyio.run(read_handbook)
    lines = content.split("\n")
    marked = {line.split(" [Task 1]")[0].lstrip("- ") for line in lines if "[replaced by a later statement:" in line}
    assert marked == {
        "Use pnpm for every repository.", "Use Node 18 for this project.",
        "The dev database listens on port 5432.", "The AWS profile is `staging-admin`.",
    }
    assert len(lines) == len(MEMORY.split("\n"))  # the file as it is, line for line



def test_fewer_than_two_entries_load_no_conflict_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    # One entry has nothing to replace: the prompt hook then skips compiling the later-words
    # patterns (consolidate.conflicts); two entries still go through them.
    one = Entry("Use port 8080 for the dev server.", "MEMORY.md:3", "2026-11-01")
    two = Entry("Use port 9090 for the dev server.", "MEMORY.md:9", "2026-11-20")
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "codex_memories.consolidate.conflicts", None)  # importing it now raises
        assert replaced_entries([one], [], [], []) == []
        assert replaced_entries([], [], [], [two]) == []
        with pytest.raises(ImportError):
            replaced_entries([two], [], [one], [])
    assert replaced_entries([two], [], [one], []) == [(one, two)]
