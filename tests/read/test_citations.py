"""Table-driven tests for the citation parser (spec 5.2, 5.4)."""

from __future__ import annotations

import pytest

from codex_memories.read.citations import (
    CitationEntry,
    find_citation_blocks,
    parse_citation_block,
    record_citation_usage,
)

ID_A = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"
ID_B = "00000000-0000-4000-8000-000000000002"

WELL_FORMED = f"""Deployed as before.

<oai-mem-citation>
<citation_entries>
MEMORY.md:40-44|note=[deploy checklist]
rollout_summaries/2025-10-14T09-12-03-Ab3x-webhook_retry.md:5-9|note=[jitter fix]
</citation_entries>
<rollout_ids>
{ID_A}
  {ID_A.upper()}
{ID_B}
</rollout_ids>
</oai-mem-citation>"""

LEGACY_THREAD_IDS = f"""<oai-mem-citation>
<citation_entries>
skills/deploy/SKILL.md:1-3|note=[steps]
</citation_entries>
<thread_ids>
{ID_B}
</thread_ids>
</oai-mem-citation>"""

LEGACY_MEMORY_USED = "All done.\n\nMemory used: `MEMORY.md:10-12`, `skills/x/SKILL.md:3-3`"

UNCLOSED = f"""<oai-mem-citation>
<citation_entries>
MEMORY.md:1-2|note=[x]
</citation_entries>
<rollout_ids>
{ID_A}
</rollout_ids>"""

BAD_RANGE = f"""<oai-mem-citation>
<citation_entries>
MEMORY.md:9-3|note=[backwards]
MEMORY.md:abc|note=[words]
MEMORY.md:5-6|note=[fine]
</citation_entries>
<rollout_ids>
{ID_A}
</rollout_ids>
</oai-mem-citation>"""

NO_IDS = """<oai-mem-citation>
<citation_entries>
MEMORY.md:1-2|note=[x]
</citation_entries>
</oai-mem-citation>"""

GARBAGE_IDS = f"""<oai-mem-citation>
<citation_entries>
MEMORY.md:1-2|note=[x]
</citation_entries>
<rollout_ids>
not-a-uuid
{ID_A}
{{{ID_B}}}
</rollout_ids>
</oai-mem-citation>"""

EMPTY_IDS = """<oai-mem-citation>
<citation_entries>
MEMORY.md:1-2|note=[x]
</citation_entries>
<rollout_ids>
</rollout_ids>
</oai-mem-citation>"""

UNCLOSED_IDS = f"""<oai-mem-citation>
<citation_entries>
MEMORY.md:1-2|note=[x]
</citation_entries>
<rollout_ids>
{ID_A}
</oai-mem-citation>"""


@pytest.mark.parametrize(
    ("text", "entries", "rollout_ids", "has_problems"),
    [
        pytest.param(
            WELL_FORMED,
            [
                CitationEntry("MEMORY.md", 40, 44, "deploy checklist"),
                CitationEntry("rollout_summaries/2025-10-14T09-12-03-Ab3x-webhook_retry.md", 5, 9, "jitter fix"),
            ],
            [ID_A, ID_B],
            False,
            id="well-formed block, ids trimmed and de-duplicated",
        ),
        pytest.param(
            LEGACY_THREAD_IDS,
            [CitationEntry("skills/deploy/SKILL.md", 1, 3, "steps")],
            [ID_B],
            False,
            id="legacy thread_ids section",
        ),
        pytest.param(
            LEGACY_MEMORY_USED,
            [CitationEntry("MEMORY.md", 10, 12, ""), CitationEntry("skills/x/SKILL.md", 3, 3, "")],
            [],
            False,
            id="legacy Memory used line names files but no ids",
        ),
        pytest.param(UNCLOSED, [], [], True, id="unclosed block changes nothing"),
        pytest.param(
            BAD_RANGE,
            [CitationEntry("MEMORY.md", 5, 6, "fine")],
            [ID_A],
            True,
            id="bad ranges are dropped and reported",
        ),
        pytest.param(NO_IDS, [], [], True, id="block without an ids section changes nothing"),
        pytest.param(
            GARBAGE_IDS,
            [CitationEntry("MEMORY.md", 1, 2, "x")],
            [ID_A],
            True,
            id="garbage ids are dropped and reported",
        ),
        pytest.param(
            EMPTY_IDS,
            [CitationEntry("MEMORY.md", 1, 2, "x")],
            [],
            False,
            id="an empty ids section is allowed",
        ),
        pytest.param(UNCLOSED_IDS, [], [], True, id="unclosed ids section changes nothing"),
    ],
)
def test_parse_citation_block_reads_entries_ids_and_problems(text, entries, rollout_ids, has_problems):
    parsed = parse_citation_block(text)

    assert parsed.entries == entries
    assert parsed.rollout_ids == rollout_ids
    assert bool(parsed.problems) is has_problems
    assert parsed.found is True


def test_problems_say_why_a_block_was_rejected():
    assert any("unclosed" in problem for problem in parse_citation_block(UNCLOSED).problems)
    assert any("rollout_ids" in problem for problem in parse_citation_block(NO_IDS).problems)
    assert any("not-a-uuid" in problem for problem in parse_citation_block(GARBAGE_IDS).problems)
    assert any("9-3" in problem for problem in parse_citation_block(BAD_RANGE).problems)


def test_text_without_citation_is_not_found_and_not_a_problem():
    parsed = parse_citation_block("Just an answer, no memory used.")

    assert parsed.found is False
    assert parsed.entries == [] and parsed.rollout_ids == [] and parsed.problems == []


def test_note_is_split_on_the_last_separator_and_path_on_the_last_colon():
    text = f"""<oai-mem-citation>
<citation_entries>
notes/a:b.md:7-8|note=[ratio 1:2]
</citation_entries>
<rollout_ids>
{ID_A}
</rollout_ids>
</oai-mem-citation>"""

    parsed = parse_citation_block(text)

    assert parsed.entries == [CitationEntry("notes/a:b.md", 7, 8, "ratio 1:2")]
    assert parsed.problems == []


def test_a_bare_block_body_is_parsed_like_a_block():
    body = f"<citation_entries>\nMEMORY.md:1-1|note=[x]\n</citation_entries>\n<rollout_ids>\n{ID_A}\n</rollout_ids>"

    assert parse_citation_block(body).rollout_ids == [ID_A]


def test_find_citation_blocks_returns_complete_blocks_only():
    text = f"intro\n{WELL_FORMED}\nmiddle\n{LEGACY_THREAD_IDS}\n<oai-mem-citation>\nnever closed"

    blocks = find_citation_blocks(text)

    assert blocks == [WELL_FORMED[WELL_FORMED.index("<oai-mem-citation>") :], LEGACY_THREAD_IDS]


def test_two_blocks_in_one_message_are_merged():
    parsed = parse_citation_block(WELL_FORMED + "\n" + LEGACY_THREAD_IDS)

    assert parsed.rollout_ids == [ID_A, ID_B]
    assert len(parsed.entries) == 3


class FakeUsageRecorder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def record_stage1_output_usage(self, thread_ids: list[str]) -> int:
        self.calls.append(list(thread_ids))
        return len(thread_ids)


def test_record_citation_usage_passes_the_cited_ids_to_the_store():
    recorder = FakeUsageRecorder()

    usage = record_citation_usage(recorder, WELL_FORMED)

    assert recorder.calls == [[ID_A, ID_B]]
    assert usage.rows_updated == 2
    assert usage.citation.rollout_ids == [ID_A, ID_B]


@pytest.mark.parametrize("text", [UNCLOSED, NO_IDS, EMPTY_IDS, LEGACY_MEMORY_USED, "no citation here"])
def test_record_citation_usage_touches_nothing_without_usable_ids(text):
    recorder = FakeUsageRecorder()

    usage = record_citation_usage(recorder, text)

    assert recorder.calls == []
    assert usage.rows_updated == 0
