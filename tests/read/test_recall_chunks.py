"""How the recall index cuts memory files into chunks: line ranges, scopes and dates."""

from __future__ import annotations

import pytest

from codex_memories import paths
from codex_memories.read.chunks import chunk_file, source_files
from tests.support.memory_folder import (
    ATLAS,
    BILLING,
    MEMORY,
    NOTE_FILE,
    ROLLOUT,
    ROLLOUT_SUMMARY,
    SUMMARY,
    write_memory_folder,
)


def _chunk_containing(relative: str, text: str, needle: str):
    [chunk] = [chunk for chunk in chunk_file(relative, text) if needle in chunk.text]
    return chunk


@pytest.mark.parametrize(
    ("relative", "text", "needle", "scope", "date", "first_line_startswith"),
    [
        ("MEMORY.md", MEMORY, "make ship-prod", ATLAS, "2026-11-18", "- Production deploys go through"),
        ("MEMORY.md", MEMORY, "goreleaser builds", BILLING, "2026-11-12", "- Production deploys are cut"),
        ("MEMORY.md", MEMORY, "Ship the orders API", ATLAS, "2026-11-18", "## Task 1: Ship the orders API"),
        ("MEMORY.md", MEMORY, "Prefer pnpm", None, None, "- Prefer pnpm"),
        ("memory_summary.md", SUMMARY, "orders API deploy", ATLAS, "2026-11-18", "- orders API deploy"),
        ("memory_summary.md", SUMMARY, "Backend engineer", None, None, "Backend engineer"),
        (f"rollout_summaries/{ROLLOUT_SUMMARY}", ROLLOUT, "canary failed twice", ATLAS, "2026-11-18", "The canary failed twice"),
        (f"{paths.ad_hoc_notes_dir()}/{NOTE_FILE}", "Prefer pnpm over npm.\n", "Prefer pnpm", None, "2026-10-02", "Prefer pnpm"),
    ],
)
def test_a_chunk_carries_its_scope_date_and_first_line(relative, text, needle, scope, date, first_line_startswith):
    chunk = _chunk_containing(relative, text, needle)

    assert chunk.scope == scope
    assert chunk.date == date
    assert text.split("\n")[chunk.line_start - 1].startswith(first_line_startswith)
    assert chunk.text == "\n".join(text.split("\n")[chunk.line_start - 1 : chunk.line_end])


def test_a_task_section_spans_its_heading_to_its_keywords_and_is_searched_by_them():
    chunk = _chunk_containing("MEMORY.md", MEMORY, "Ship the orders API")
    lines = MEMORY.split("\n")

    assert lines[chunk.line_end - 1] == "- deploy, canary, make"
    assert "deploy, canary, make" in chunk.embed_text
    assert "rollout_path" not in chunk.embed_text  # Paths and ids would only dilute the embedding.


def test_a_bullet_is_embedded_without_its_citation_and_markup():
    chunk = _chunk_containing("MEMORY.md", MEMORY, "make ship-prod")

    assert chunk.embed_text == "Production deploys go through make ship-prod; it tags the commit and waits for the canary to pass."


def test_only_the_files_codex_reads_are_indexed_and_never_the_bookkeeping_folder(tmp_path):
    root = write_memory_folder(tmp_path)
    (root / paths.RAW_MEMORIES_FILE).write_text("# Raw Memories\n", encoding="utf-8")
    (root / paths.WORKSPACE_STATE_DIR).mkdir()
    (root / paths.WORKSPACE_STATE_DIR / "MEMORY.md").write_text("hidden\n", encoding="utf-8")
    (root / paths.ROLLOUT_SUMMARIES_DIR / "link.md").symlink_to(root / paths.MEMORY_FILE)

    assert source_files(root) == [
        "MEMORY.md",
        f"{paths.ad_hoc_notes_dir()}/{NOTE_FILE}",
        "memory_summary.md",
        f"rollout_summaries/{ROLLOUT_SUMMARY}",
    ]


def test_bullets_written_straight_under_a_task_group_heading_are_chunks_too() -> None:
    text = "# Task Group: atlas build\nscope: atlas\n- build atlas with make -j8\n- the CI runner is called heron\n"
    chunks = chunk_file("MEMORY.md", text)
    assert [(chunk.line_start, chunk.text) for chunk in chunks] == [
        (3, "- build atlas with make -j8"),
        (4, "- the CI runner is called heron"),
    ]
