"""The edit a `forget --match` makes (`codex_memories.forget.text_edit`): lines, headings, names."""

from __future__ import annotations

import pytest

from codex_memories.forget.text_edit import Needle, edit_lines


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("- Project Falcon ships on Fridays", True),
        ("- PROJECT FALCON ships", True),
        ("- ran the project-falcon migration", True),
        ("- see rollout_summaries/2025-x-project_falcon.md", True),
        ("- ProjectFalcon.deploy() failed", True),
        ("- the project. Falcon is a bird", False),  # two sentences, not one name
        ("- falcon alone is another word", False),
    ],
)
def test_a_line_holds_the_text_as_written_or_as_a_name_carries_it(line: str, holds: bool) -> None:
    assert Needle("Project Falcon").in_line(line) is holds


@pytest.mark.parametrize(
    ("name", "neutral"),
    [
        ("2025-01-02T03-04-05-falcon-launch", "2025-01-02T03-04-05-launch"),
        ("falcon_deploy_fix", "deploy_fix"),
        ("fix-the-falconry-job", "fix-the-job"),  # the whole word that carries it goes
        ("falcon", ""),
        ("deploy-fal-con-now", "deploy-now"),  # carried across a separator: every word it touches
        ("unrelated-name", "unrelated-name"),
    ],
)
def test_a_neutral_name_keeps_every_word_but_those_carrying_the_text(name: str, neutral: str) -> None:
    needle = Needle("falcon")
    assert needle.neutral_name(name) == neutral
    assert not needle.in_name(needle.neutral_name(name))


def test_a_needle_with_fewer_than_three_letters_matches_no_name() -> None:
    assert not Needle("a-b").in_name("a-b-c")
    assert not Needle("a-b").in_line("the ab test")
    assert Needle("a-b").in_line("see a-b here")  # as written, it is still a line's text


def test_a_heading_whose_bullets_all_went_goes_with_its_blank_lines() -> None:
    text = "# Memory\n\n## Falcon\n- falcon ships\n- the Falcon pager\n\n## Tabs\n- keep tabs\n"
    edit = edit_lines(text, Needle("falcon"))
    assert edit.text == "# Memory\n\n## Tabs\n- keep tabs\n"
    assert edit.removed == ((3, "## Falcon"), (4, "- falcon ships"), (5, "- the Falcon pager"))
    assert edit.emptied_headings == ()  # that heading held the text itself


def test_a_heading_left_empty_is_reported_and_nested_empty_sections_go_together() -> None:
    text = "## Release\n### Notes\n- falcon ships\n\n### Steps\n- falcon first\n\n## Other\n- keep\n"
    edit = edit_lines(text, Needle("falcon"))
    assert edit.text == "## Other\n- keep\n"
    assert [number for number, _ in edit.emptied_headings] == [1, 2, 5]


def test_a_heading_keeps_its_section_when_something_is_left_and_an_untouched_empty_one_stays() -> None:
    text = "## Mixed\n- falcon ships\n- tabs\n\n## Empty already\n\n## Last\n- falcon\n"
    edit = edit_lines(text, Needle("falcon"))
    assert edit.text == "## Mixed\n- tabs\n\n## Empty already\n\n"
    assert edit.emptied_headings == ((7, "## Last"),)


def test_a_removal_never_leaves_two_blank_lines_together() -> None:
    edit = edit_lines("a\n\nfalcon\n\nb\n", Needle("falcon"))
    assert edit.text == "a\n\nb\n"


def test_hash_lines_inside_fenced_code_are_not_headings() -> None:
    text = "## Commands\n```sh\n# deploy falcon\n```\n- other\n"
    edit = edit_lines(text, Needle("falcon"))
    assert edit.text == "## Commands\n```sh\n```\n- other\n"
    assert edit.emptied_headings == ()


def test_mentions_of_renamed_files_are_rewritten_and_kept_and_line_endings_stay() -> None:
    text = "- rollout_summaries/2025-a-falcon_fix.md (cwd=/w)\r\n- falcon facts\r\n"
    edit = edit_lines(text, Needle("falcon"), {"2025-a-falcon_fix": "2025-a-fix"})
    assert edit.text == "- rollout_summaries/2025-a-fix.md (cwd=/w)\r\n"
    assert edit.references == 1 and edit.removed == ((2, "- falcon facts"),)


def test_an_edit_that_finds_nothing_changes_nothing() -> None:
    edit = edit_lines("# Memory\n- tabs\n", Needle("falcon"))
    assert not edit.changed and edit.text == "# Memory\n- tabs\n"


def test_lines_that_record_a_folder_or_a_project_keep_the_text_and_are_reported() -> None:
    text = (
        "# Task Group: github.com/acme/falcon\napplies_to: cwd=/src/falcon; project=github.com/acme/falcon\n\n"
        "## User preferences\n- falcon ships Fridays\n- keep tabs\n\n### project=github.com/acme/falcon\n- cwd: /src/falcon\n"
    )
    edit = edit_lines(text, Needle("falcon"))
    assert edit.removed == ((5, "- falcon ships Fridays"),)
    assert [number for number, _ in edit.kept] == [1, 2, 8, 9]
    assert edit.text == text.replace("- falcon ships Fridays\n", "")
