"""A real Codex 0.171 TUI rollout (paginated: `ordinal` on every line, `item_completed` events,
`token_usage_record`, `thread_settings_applied`), recorded by `tests/support/record_rollout_fixture.py`:
discovery, the phase-1 transcript and the citation harvest read it as they read 0.147's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from codex_memories.ingest.rollout_scan import scan_rollout
from codex_memories.ingest.transcript import build_memory_transcript
from codex_memories.read.harvest import harvest_citations
from codex_memories.settings import INTERACTIVE_SESSION_SOURCES
from codex_memories.state.store import MemoryStore
from tests.support.memory_home import remember
from tests.support.record_rollout_fixture import AGENTS_CANARY, CITED_THREAD, SKILL_CANARY, USER_WORDS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "rollouts" / "codex-0.171-tui.jsonl"


def test_the_fixture_is_a_paginated_0171_rollout() -> None:
    lines = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    assert [line["ordinal"] for line in lines] == list(range(len(lines)))
    kinds = {(line["type"], line["payload"].get("type")) for line in lines}
    assert {("token_usage_record", None), ("event_msg", "item_completed"), ("event_msg", "thread_settings_applied")} <= kinds
    assert ("event_msg", "user_message") not in kinds and ("event_msg", "agent_message") not in kinds
    assert lines[0]["payload"]["cli_version"] == "0.171.0"


def test_discovery_finds_what_the_user_said_and_the_citation() -> None:
    scan = scan_rollout(FIXTURE)

    assert scan.cli_version == "0.171.0"
    # 0.171's TUI runs through the app server and records `source: "vscode"`: still interactive.
    assert scan.source == "vscode" and scan.source in INTERACTIVE_SESSION_SOURCES
    assert scan.originator == "codex-tui"
    assert scan.has_user_message and scan.first_user_message == USER_WORDS
    assert [citation.text.count(CITED_THREAD) for citation in scan.citations] == [1]
    assert scan.stats.lines_skipped == 0


def test_the_phase1_transcript_keeps_the_users_words_and_drops_the_harness() -> None:
    transcript = build_memory_transcript(FIXTURE, token_budget=20_000)

    assert USER_WORDS in transcript.text
    assert "fixture-shell-0171" in transcript.text  # the tool output the model saw
    assert "Deployed with the canary flag." in transcript.text
    for harness in (AGENTS_CANARY, SKILL_CANARY, "<skills_instructions>", "You are a coding agent"):
        assert harness not in transcript.text, harness
    assert all(item.get("role") not in ("developer", "system") for item in transcript.items)
    assert {item["type"] for item in transcript.items} == {"message", "function_call", "function_call_output"}


def test_the_citation_harvest_counts_the_cited_memory_once(tmp_path: Path) -> None:
    rollout = tmp_path / FIXTURE.name
    shutil.copyfile(FIXTURE, rollout)
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        remember(store, CITED_THREAD)
        first = harvest_citations(store, [rollout])
        again = harvest_citations(store, [rollout])
        assert (first.citation_blocks, first.usage_recorded, again.usage_recorded) == (1, 1, 0)
        assert store.get_stage1_output(CITED_THREAD).usage_count == 1
    finally:
        store.close()


FORK_FOLDER = Path(__file__).parents[1] / "fixtures" / "rollouts" / "codex-0.171-fork"


def test_a_0171_fork_points_at_its_parent_and_holds_only_its_own_turns() -> None:
    from tests.support.record_rollout_fixture import CHILD_WORDS, PARENT_WORDS

    parent_path, child_path = sorted(FORK_FOLDER.glob("rollout-*.jsonl"))
    parent, child = scan_rollout(parent_path), scan_rollout(child_path)

    # 0.171 does not copy the parent's lines into the fork: `forked_from_id` (and
    # `forked_from_ordinal_exclusive`) point at them, and the fork's ordinals continue the parent's.
    assert child.forked_from_id == parent.thread_id and child.thread_id != parent.thread_id
    assert child.first_user_message == CHILD_WORDS and parent.first_user_message == PARENT_WORDS
    first = json.loads(child_path.read_text(encoding="utf-8").splitlines()[0])
    assert first["payload"]["forked_from_ordinal_exclusive"] == first["ordinal"] > 0
    transcript = build_memory_transcript(child_path, token_budget=20_000)
    assert CHILD_WORDS in transcript.text and PARENT_WORDS not in transcript.text
