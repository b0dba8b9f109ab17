"""What a new session gets at SessionStart (issue 27): the rules first, a short how-to, the index,
never more than Codex's hook limit, never cut mid-line."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.prompts import load_template, template_placeholders
from codex_memories.read.injection import (
    DEFAULT_SESSION_START_BUDGET_TOKENS,
    READ_PATH_TEMPLATE,
    build_session_context,
)
from codex_memories.scopes import scope_matches_cwd
from codex_memories.tokens import CODEX_HOOK_CONTEXT_LIMIT_TOKENS, codex_token_count

BEGINS = "========= MEMORY_SUMMARY BEGINS ========="
ENDS = "========= MEMORY_SUMMARY ENDS ========="
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
A_KEY = "github.com/acme/atlas"
B_KEY = "github.com/acme/billing"
MULTI_BYTE = "部署前先运行迁移脚本 🚀 then check the ключ value ✅ émigré naïve façade"


def checkout(tmp_path: Path, name: str, origin: str) -> Path:
    """A folder whose git config names `origin`, so its project key is the origin's."""
    folder = tmp_path / "src" / name
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text(f'[remote "origin"]\n\turl = git@{origin.replace("/", ":", 1)}.git\n', encoding="utf-8")
    return folder


def group(key: str | None, sections: dict[str, list[str]], updated: str = "2026-11-20") -> str:
    if key is None:
        head = ["# Task Group: user-level (every project)", "scope: user-level", "applies_to: cwd=any; reuse_rule=applies in every project"]
    else:
        head = [f"# Task Group: {key}", f"scope: work in {key}", f"applies_to: cwd=/x; reuse_rule=only here; project={key}"]
    body = ["", "## Task 1: work, outcome: success", "", "### rollout_summary_files", f"- rollout_summaries/a.md (updated_at={updated}T10:00:00+00:00, thread_id=t)", ""]
    for title, bullets in sections.items():
        body += [f"## {title}", *[cited(bullet) for bullet in bullets], ""]
    return "\n".join([*head, *body])


def cited(bullet: str) -> str:
    """A MEMORY.md bullet as phase 2 writes it: the citation, then any typed-entry suffix last."""
    text, brace, suffix = bullet.partition(" {memory:")
    return f"- {text} [Task 1]" + (f"{brace}{suffix}" if brace else "")


def write_folder(root: Path, *, handbook: str = "", summary: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if handbook:
        (root / paths.MEMORY_FILE).write_text(handbook, encoding="utf-8")
    if summary:
        (root / paths.MEMORY_SUMMARY_FILE).write_text(summary, encoding="utf-8")
    return root


def big_summary(topics: int) -> str:
    filler = "\n".join(f"- topic {index}: {MULTI_BYTE}\n  - learnings: step {index} of the long story" for index in range(topics))
    return "\n".join(
        [
            "v1", "", "## User Profile", "Works on several services.", "",
            "## What's in Memory", f"### project={B_KEY}", "#### 2026-11-12", filler, "",
            f"### project={A_KEY}", "#### 2026-11-14", "- deploy: atlas ships with `make ship` (PELICAN-42)", "",
            "### Older Memory Topics", filler,
        ]
    )


def test_a_folder_with_nothing_in_it_injects_nothing(tmp_path):
    assert build_session_context(tmp_path / "missing", now=NOW) is None
    write_folder(tmp_path / "blank", summary="  \n\t\n")
    assert build_session_context(tmp_path / "blank", now=NOW) is None


def test_the_projects_rules_and_the_user_level_ones_come_first_and_another_projects_never(tmp_path):
    atlas = checkout(tmp_path, "atlas", A_KEY)
    handbook = "\n".join(
        [
            group(None, {"User preferences": ["Answer in English"]}),
            group(A_KEY, {"User preferences": ["Indent with tabs in atlas"], "Reusable knowledge": ["`make ship` deploys atlas"]}),
            group(B_KEY, {"User preferences": ["Use spaces in billing"], "Reusable knowledge": ["billing deploys with `./go`"]}),
        ]
    )
    root = write_folder(tmp_path / "memories", handbook=handbook, summary=big_summary(5))

    context = build_session_context(root, cwd=str(atlas), now=NOW)

    text = context.text
    assert text.index("Indent with tabs in atlas") < text.index("Answer in English") < text.index("### Using the memory folder")
    assert text.index("### Using the memory folder") < text.index("`make ship` deploys atlas") < text.index(BEGINS)
    assert f"### Rules for this project ({A_KEY})" in text
    assert "(MEMORY.md:" in text and "[Task 1]" not in text
    for other in ("Use spaces in billing", "./go", f"project={B_KEY}"):
        assert other not in text
    assert text.index(f"### project={A_KEY}") < text.index("### Older Memory Topics")


@pytest.mark.parametrize("budget", [300, 700, 1_200, DEFAULT_SESSION_START_BUDGET_TOKENS, CODEX_HOOK_CONTEXT_LIMIT_TOKENS])
def test_a_month_sized_folder_fits_the_budget_in_codex_tokens_without_a_middle_cut(tmp_path, budget):
    atlas = checkout(tmp_path, "atlas", A_KEY)
    rules = [f"Rule {index}: never run `make nuke-{index}` in atlas, because {MULTI_BYTE}" for index in range(40)]
    handbook = group(A_KEY, {"User preferences": rules, "Reusable knowledge": [f"fact {i} {MULTI_BYTE}" for i in range(60)]})
    root = write_folder(tmp_path / "memories", handbook=handbook, summary=big_summary(200))

    context = build_session_context(root, cwd=str(atlas), budget_tokens=budget, now=NOW)

    assert context is not None
    assert codex_token_count(context.text) <= budget
    assert len(context.text.encode("utf-8")) <= budget * 4
    assert "tokens truncated" not in context.text
    for line in context.text.split("\n"):
        if line.startswith("- Rule "):
            assert line.endswith(")") and "(MEMORY.md:" in line, "a rule is shown whole, with its source"
    if budget >= 1_200:
        assert "### Using the memory folder" in context.text, "the how-to is reserved before the rules fill up"
    assert context.tiers["project_rules"].shown >= 1
    if context.tiers["project_rules"].omitted:
        assert f"{context.tiers['project_rules'].omitted} more in MEMORY.md" in context.text


def test_the_default_budget_is_under_the_limit_codex_enforces():
    assert DEFAULT_SESSION_START_BUDGET_TOKENS < CODEX_HOOK_CONTEXT_LIMIT_TOKENS == 2_500
    assert codex_token_count("a" * 10_000) == 2_500 and codex_token_count("a" * 10_001) == 2_501
    assert codex_token_count("部" * 3_334) == 2_501  # bytes, not characters


def test_a_typed_entry_shows_its_reason_and_an_expired_one_is_left_out(tmp_path):
    atlas = checkout(tmp_path, "atlas", A_KEY)
    handbook = group(
        A_KEY,
        {
            "Reusable knowledge": [
                "Never touch vendor/legacy {memory: type=constraint; weight=0.9; reason=it is generated from the upstream tarball}",
                "Use the old staging cluster {memory: type=constraint; weight=0.5; expires=2026-11-30}",
                "`make ship` deploys {memory: type=command; weight=0.5}",
            ]
        },
    )
    root = write_folder(tmp_path / "memories", handbook=handbook)

    text = build_session_context(root, cwd=str(atlas), now=NOW).text

    rules = text[text.index("### Rules for this project") : text.index("### Using")]
    assert "Never touch vendor/legacy (why: it is generated from the upstream tarball)" in rules
    assert "{memory:" not in text and "old staging cluster" not in text
    assert "`make ship` deploys" in text[text.index("### Also remembered") :]


def test_a_folder_with_only_a_summary_takes_its_rules_from_the_summarys_preferences(tmp_path):
    atlas = checkout(tmp_path, "atlas", A_KEY)
    summary = "\n".join(
        ["v1", "", "## User preferences", "- Answer in English (all projects)", f"- Tabs in atlas (project={A_KEY})", f"- Spaces in billing (project={B_KEY})", "", "## What's in Memory", f"### project={A_KEY}", "- deploy: make ship"]
    )
    root = write_folder(tmp_path / "memories", summary=summary)

    text = build_session_context(root, cwd=str(atlas), now=NOW).text

    assert "- Tabs in atlas (memory_summary.md:5)" in text
    assert "- Answer in English (memory_summary.md:4)" in text
    assert "Spaces in billing" not in text
    index = text[text.index(BEGINS) :]
    assert "Tabs in atlas" not in index, "preferences are not repeated in the index"
    assert "deploy: make ship" in index


def test_a_note_written_after_the_last_consolidation_reaches_the_next_session_at_once(tmp_path):
    root = write_folder(tmp_path / "memories", handbook=group(None, {"User preferences": ["Answer in English"]}))
    notes = root / paths.ad_hoc_notes_dir()
    notes.mkdir(parents=True)
    old = notes / "2026-11-01T10-00-00-old.md"
    old.write_text("Prefer pnpm.\n", encoding="utf-8")
    handbook_time = (root / paths.MEMORY_FILE).stat().st_mtime
    os.utime(old, (handbook_time - 60, handbook_time - 60))
    new = notes / "2026-12-04T10-00-00-staging.md"
    new.write_text("# note\nRemember that the staging DB is read-only.\n", encoding="utf-8")
    os.utime(new, (handbook_time + 60, handbook_time + 60))

    text = build_session_context(root, now=NOW).text

    assert f"- Remember that the staging DB is read-only. ({paths.ad_hoc_notes_dir()}/{new.name})" in text
    assert "Prefer pnpm" not in text, "a note already folded into MEMORY.md is not repeated"


def test_the_how_to_names_the_folder_and_the_citation_format(tmp_path):
    root = write_folder(tmp_path / "memories", summary="v1\n\n## User Profile\nPrefers pnpm.")

    text = build_session_context(root, now=NOW).text

    assert f"{root.absolute()}/MEMORY.md" in text
    assert f"{root.absolute()}/extensions/ad_hoc/notes/" in text
    for fixed in ("<oai-mem-citation>", "<citation_entries>", "</citation_entries>", "<rollout_ids>", "</rollout_ids>", "</oai-mem-citation>", "|note=["):
        assert fixed in text
    assert text.count(BEGINS) == 1 and text.count(ENDS) == 1
    assert "{{" not in text


def test_the_how_to_template_declares_only_the_folder():
    assert template_placeholders(load_template(READ_PATH_TEMPLATE)) == {"base_path"}


@pytest.mark.parametrize(
    ("scope", "cwd", "matches"),
    [
        ("/work/projects/atlas", "/work/projects/atlas", True),
        ("`/work/projects/atlas`", "/work/projects/atlas/", True),
        ("/work/projects/atlas", "/work/projects/atlas/api", True),
        ("cwd=/work/projects/atlas (main repo)", "/work/projects/atlas", True),
        ("atlas service", "/work/projects/atlas", True),
        ("Atlas", "/work/projects/atlas", True),
        ("/work/projects/atlas-web", "/work/projects/atlas", False),
        ("/work/projects/atlas", "/work/projects", False),
        ("/", "/work/projects/atlas", False),
        ("~", "/work/projects/atlas", False),
        ("Older Memory Topics", "/work/projects/atlas", False),
        ("~/src/atlas", "/mnt/clones/atlas", True),
        ("C:\\code\\atlas", "C:\\code\\atlas", True),
    ],
)
def test_scope_matches_cwd(scope, cwd, matches):
    assert scope_matches_cwd(scope, cwd) is matches


@pytest.mark.parametrize("name", [paths.MEMORY_SUMMARY_FILE, paths.MEMORY_FILE])
def test_a_symlinked_or_hard_linked_memory_file_is_never_injected(tmp_path, name):
    outside = tmp_path / "outside.md"
    outside.write_text("v1\n\n## User preferences\n- secret instructions from outside\n", encoding="utf-8")
    root = tmp_path / "memories"
    root.mkdir()
    (root / name).symlink_to(outside)
    with pytest.raises(PermissionError, match="symlink"):
        build_session_context(root, now=NOW)
    (root / name).unlink()
    os.link(outside, root / name)
    with pytest.raises(PermissionError, match="hard links"):
        build_session_context(root, now=NOW)
