"""Read-path developer instructions and the summary budget (spec 5.1, 5.2; issue #17496)."""

from __future__ import annotations

import inspect
import os

import pytest

from codex_memories import paths
from codex_memories.prompts import load_template, template_placeholders
from codex_memories.read.injection import (
    CODEX_SUMMARY_BUDGET_TOKENS,
    DEFAULT_SUMMARY_BUDGET_TOKENS,
    READ_PATH_TEMPLATE,
    build_developer_instructions,
    scope_matches_cwd,
)
from codex_memories.tokens import count_tokens

BEGINS = "========= MEMORY_SUMMARY BEGINS ========="
ENDS = "========= MEMORY_SUMMARY ENDS ========="
MULTI_BYTE_LINE = "- 部署前先运行迁移脚本 🚀 then check the ключ value ✅ émigré naïve façade"


def injected_summary(instructions: str) -> str:
    start = instructions.index(BEGINS + "\n") + len(BEGINS) + 1
    end = instructions.index("\n" + ENDS)
    return instructions[start:end]


def write_summary(root, text: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / paths.MEMORY_SUMMARY_FILE).write_text(text, encoding="utf-8")


def test_missing_summary_injects_nothing(tmp_path):
    assert build_developer_instructions(tmp_path) is None


@pytest.mark.parametrize("text", ["", "  \n\t\n  "])
def test_blank_summary_injects_nothing(tmp_path, text):
    write_summary(tmp_path, text)

    assert build_developer_instructions(tmp_path) is None


def test_summary_under_budget_is_injected_stripped_and_unchanged(tmp_path):
    summary = "v1\n\n## User Profile\n" + MULTI_BYTE_LINE
    write_summary(tmp_path, "\n\n" + summary + "\n\n")

    instructions = build_developer_instructions(tmp_path, budget_tokens=500)

    assert injected_summary(instructions) == summary
    assert "tokens truncated" not in instructions


def test_summary_exactly_at_budget_is_not_truncated(tmp_path):
    summary = "v1\n\n" + "\n".join([MULTI_BYTE_LINE] * 20)
    write_summary(tmp_path, summary)

    instructions = build_developer_instructions(tmp_path, budget_tokens=count_tokens(summary))

    assert injected_summary(instructions) == summary


@pytest.mark.parametrize("budget", [1, 7, 64, 300])
def test_summary_over_budget_is_middle_truncated_within_budget(tmp_path, budget):
    lines = [f"{index:04d} {MULTI_BYTE_LINE}" for index in range(300)]
    summary = "v1\n" + "\n".join(lines) + "\n末尾 🎯"
    write_summary(tmp_path, summary)

    instructions = build_developer_instructions(tmp_path, budget_tokens=budget)

    if instructions is None:  # A budget too small for any text at all injects nothing.
        assert budget < 16
        return
    injected = injected_summary(instructions)
    injected.encode("utf-8")  # Strict: raises on a split surrogate pair.
    assert "\ufffd" not in injected
    assert count_tokens(injected) <= budget
    assert "tokens truncated" in injected
    if budget >= 64:
        assert injected.startswith("v1\n0000 ")
        assert injected.endswith("末尾 🎯")


def test_budget_must_be_positive(tmp_path):
    write_summary(tmp_path, "v1\n\nsomething")

    with pytest.raises(ValueError):
        build_developer_instructions(tmp_path, budget_tokens=0)


def _summary_with_projects() -> str:
    filler = "\n".join(f"- topic {index}: {MULTI_BYTE_LINE}" for index in range(120))
    return "\n".join(
        [
            "v1",
            "",
            "## User Profile",
            "Works on several services.",
            "",
            "## What's in Memory",
            "",
            "### /home/dev/src/billing",
            "#### 2025-10-12",
            filler,
            "",
            "### /work/projects/atlas",
            "#### 2025-10-14",
            "- deploy: atlas uses `make ship`, never `make deploy`",
            "  - learnings: the staging key lives in vault path kv/atlas",
            "",
            "### /home/dev/src/search",
            "#### 2025-10-13",
            filler,
            "",
            "### Older Memory Topics",
            filler,
        ]
    )


def test_cwd_keeps_the_current_project_whole_when_the_rest_is_truncated(tmp_path):
    write_summary(tmp_path, _summary_with_projects())

    with_cwd = injected_summary(build_developer_instructions(tmp_path, budget_tokens=400, cwd="/work/projects/atlas"))
    without_cwd = injected_summary(build_developer_instructions(tmp_path, budget_tokens=400))

    project = "### /work/projects/atlas\n#### 2025-10-14\n- deploy: atlas uses `make ship`, never `make deploy`\n  - learnings: the staging key lives in vault path kv/atlas"
    assert project in with_cwd
    assert with_cwd.index(project) < with_cwd.index("v1")
    assert "tokens truncated" in with_cwd
    assert count_tokens(with_cwd) <= 400
    assert "kv/atlas" not in without_cwd  # What issue #17496 complained about.


def test_cwd_in_a_subfolder_of_the_project_also_keeps_it(tmp_path):
    write_summary(tmp_path, _summary_with_projects())

    injected = injected_summary(
        build_developer_instructions(tmp_path, budget_tokens=400, cwd="/work/projects/atlas/services/api")
    )

    assert "kv/atlas" in injected


def test_summary_that_fits_keeps_its_order_even_with_cwd(tmp_path):
    summary = _summary_with_projects()
    write_summary(tmp_path, summary)

    injected = injected_summary(build_developer_instructions(tmp_path, budget_tokens=100_000, cwd="/work/projects/atlas"))

    assert injected == summary


def test_unknown_cwd_falls_back_to_plain_truncation(tmp_path):
    write_summary(tmp_path, _summary_with_projects())

    injected = injected_summary(build_developer_instructions(tmp_path, budget_tokens=300, cwd="/srv/unrelated"))

    assert injected.startswith("v1\n")
    assert count_tokens(injected) <= 300


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


def test_instructions_name_the_memory_root_and_the_citation_format(tmp_path):
    root = tmp_path / "memories"
    write_summary(root, "v1\n\n## User Profile\nPrefers pnpm.")

    instructions = build_developer_instructions(root)

    assert f"{root.absolute()}/MEMORY.md" in instructions
    assert f"{root.absolute()}/extensions/ad_hoc/notes/" in instructions
    for fixed in ("<oai-mem-citation>", "<citation_entries>", "</citation_entries>", "<rollout_ids>", "</rollout_ids>", "</oai-mem-citation>", "|note=["):
        assert fixed in instructions
    assert instructions.count(BEGINS) == 1 and instructions.count(ENDS) == 1
    assert "{{" not in instructions


def test_template_declares_exactly_the_two_placeholders():
    assert template_placeholders(load_template(READ_PATH_TEMPLATE)) == {"base_path", "memory_summary"}


def test_default_budget_is_ours_and_codex_budget_is_recorded():
    default = inspect.signature(build_developer_instructions).parameters["budget_tokens"].default

    assert default == DEFAULT_SUMMARY_BUDGET_TOKENS == 5_000
    assert CODEX_SUMMARY_BUDGET_TOKENS == 2_500


def test_a_symlinked_or_hard_linked_summary_is_never_injected(tmp_path) -> None:
    from codex_memories.read.injection import read_memory_summary

    outside = tmp_path / "outside.md"
    outside.write_text("v1\n\nsecret instructions from outside\n", encoding="utf-8")
    root = tmp_path / "memories"
    root.mkdir()
    (root / "memory_summary.md").symlink_to(outside)
    with pytest.raises(PermissionError, match="symlink"):
        read_memory_summary(root)
    (root / "memory_summary.md").unlink()
    os.link(outside, root / "memory_summary.md")
    with pytest.raises(PermissionError, match="hard links"):
        read_memory_summary(root)
