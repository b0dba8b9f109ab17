"""Scope at extraction (issue 15): the heuristic's phrases, the model's `task_scopes`, the scope
lines written into the raw memory, the project key, and what the store keeps of them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from codex_memories.extract.extraction import claim_project_key, extract_memory, finalize_extraction
from codex_memories.extract.heuristic import HeuristicProvider, preference_scope
from codex_memories.extract.scope_tagging import (
    block_scopes,
    front_matter_project_key,
    row_scope,
    split_raw_memory_by_scope,
    tag_raw_memory,
)
from codex_memories.llm.base import ExtractionResponse, TokenUsage
from codex_memories.llm.schema import Stage1Extraction
from codex_memories.outcomes import Outcome
from codex_memories.state.records import Stage1Claim, ThreadRecord
from codex_memories.state.store import MemoryStore
from tests.support.rollout_factory import write_rollout

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

TWO_BLOCKS = """---
description: tabs and English
task: style
task_group: style
task_outcome: success
cwd: /work/a
keywords: tabs
---

### Task 1: indentation
task: indentation
task_group: style
task_outcome: success

Preference signals:
- in this repo use tabs

### Task 2: language
task: language
task_group: style
task_outcome: success
scope: project

Preference signals:
- in all my projects, answer in English
"""


@pytest.mark.parametrize(
    ("sentence", "scope"),
    [
        ("In every repo of mine, run ruff before committing.", "user"),
        ("In all my projects, answer in English.", "user"),
        ("Globally, prefer pytest over unittest.", "user"),
        ("For all projects use uv.", "user"),
        ("Always, everywhere: no emojis in commit messages.", "user"),
        ("所有项目都用中文回答", "user"),
        ("全局使用 black 格式化", "user"),
        ("每个仓库都要写测试", "user"),
        ("In this repo use tabs.", "project"),
        ("For this project, keep lines under 100 characters.", "project"),
        ("Here, use pnpm.", "project"),
        ("这个项目用 tabs 缩进", "project"),
        ("本仓库统一用四个空格", "project"),
        ("Always run the tests with `uv run pytest`.", "project"),  # no scope said: the repository's
        ("In this repo, and in all my projects, use httpx.", "project"),  # the narrower reading wins
    ],
)
def test_the_heuristic_reads_the_scope_a_user_gives(sentence, scope):
    assert preference_scope(sentence) == scope


def _request(*messages: str):
    from codex_memories.llm.base import ExtractionRequest
    from codex_memories.prompts import RenderedPrompt

    prompt = RenderedPrompt(text="unused", template_name="stage_one_input", sha256="0" * 64)
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]} for text in messages]
    return ExtractionRequest(
        thread_id="t", rollout_path="/r.jsonl", cwd="/work/a", model="m", system_prompt=prompt, user_prompt=prompt, transcript_items=items
    )


def test_a_user_level_preference_gets_its_own_block_and_the_rest_stays_with_the_project():
    extraction = HeuristicProvider().extract(_request("In this repo use tabs.", "In all my projects, answer in English.")).extraction

    assert extraction.task_scopes == ["project", "user"]
    assert block_scopes(extraction.raw_memory) == ["project", "user"]
    parts = split_raw_memory_by_scope(extraction.raw_memory)
    tabs, english = '- "In this repo use tabs."', '- "In all my projects, answer in English."'
    assert tabs in parts["project"] and tabs not in parts["user"]
    assert english in parts["user"] and english not in parts["project"]


def test_a_session_without_a_scope_phrase_is_project_level_only():
    extraction = HeuristicProvider().extract(_request("Never push to main.")).extraction

    assert extraction.task_scopes == ["project"]
    assert row_scope(extraction.raw_memory) == "project"


def test_tagging_sets_one_scope_line_per_block_and_the_project_key_and_is_idempotent():
    tagged = tag_raw_memory(TWO_BLOCKS, ["project", "user"], "github.com/acme/a")

    assert block_scopes(tagged) == ["project", "user"]  # the field wins over the block's own line
    assert tagged.count("scope: ") == 3  # two blocks and the front matter
    assert "scope: mixed" in tagged.split("---")[1]
    assert front_matter_project_key(tagged) == "github.com/acme/a"
    assert tag_raw_memory(tagged, ["project", "user"], "github.com/acme/a") == tagged
    # What a reader that knows nothing of scopes relies on is unchanged.
    assert "### Task 1: indentation\ntask: indentation\ntask_group: style\ntask_outcome: success\nscope: project\n" in tagged


def test_without_task_scopes_every_block_keeps_its_own_valid_line_or_is_project_level():
    tagged = tag_raw_memory(TWO_BLOCKS.replace("scope: project", "scope: user"), [], None)

    assert block_scopes(tagged) == ["project", "user"]
    assert front_matter_project_key(tagged) is None
    assert tag_raw_memory("", ["user"], "k") == ""


@pytest.mark.parametrize(
    ("origin", "cwd", "expected"),
    [
        ("https://dana:[REDACTED_SECRET]@github.com/Acme/App.git", "/nowhere/app", "github.com/Acme/App"),
        ("git@github.com:acme/app.git", None, "github.com/acme/app"),
        (None, "/nowhere/app/", "/nowhere/app"),
        (None, None, None),
        (None, "unknown", None),
    ],
)
def test_the_project_key_of_a_claim_comes_from_its_origin_else_its_cwd(origin, cwd, expected):
    claim = Stage1Claim(thread_id="t", ownership_token="x", source_updated_at=1, rollout_path="/r", cwd=cwd, git_origin_url=origin)
    assert claim_project_key(claim) == expected


def test_the_project_key_of_a_local_repository_without_origin_is_its_root(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src").mkdir()
    claim = Stage1Claim(thread_id="t", ownership_token="x", source_updated_at=1, rollout_path="/r", cwd=str(tmp_path / "repo" / "src"))
    assert claim_project_key(claim) == str(tmp_path / "repo")


class _ScriptedProvider:
    name = "scripted"

    def __init__(self, extraction: Stage1Extraction) -> None:
        self.extraction = extraction

    def extract(self, request):
        return ExtractionResponse(extraction=self.extraction, usage=TokenUsage(), provider=self.name, model="m")


def test_the_models_task_scopes_reach_the_raw_memory_and_the_store_redacted(tmp_path):
    rollout = write_rollout(tmp_path / "codex", created_at=datetime(2026, 11, 1, tzinfo=UTC), cwd="/work/a", user_messages=["style"])
    memory = TWO_BLOCKS.replace("in this repo use tabs", f"in this repo use tabs; token {SECRET}")
    provider = _ScriptedProvider(
        Stage1Extraction(rollout_summary="# Style\n", rollout_slug="style", raw_memory=memory, task_scopes=["project", "user"])
    )
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        store.upsert_threads(
            [ThreadRecord(id="t1", rollout_path=str(rollout), created_at_ms=1, updated_at_ms=100_000, source="cli", cwd="/work/a",
                          git_origin_url="https://dana:[REDACTED_SECRET]@github.com/acme/a.git")]
        )
        token = store.try_claim_stage1_job(thread_id="t1", worker_id="w", source_updated_at=100, lease_seconds=60, max_running_jobs=8).ownership_token
        claim = Stage1Claim(thread_id="t1", ownership_token=token, source_updated_at=100, rollout_path=str(rollout), cwd="/work/a",
                            git_origin_url="https://dana:[REDACTED_SECRET]@github.com/acme/a.git")

        result = extract_memory(claim, provider, model="m", token_budget=10_000)

        assert result.outcome is Outcome.succeeded
        assert (result.scope, result.project_key) == ("mixed", "github.com/acme/a")
        assert SECRET not in result.raw_memory and "[REDACTED_SECRET]" in result.raw_memory
        assert block_scopes(result.raw_memory) == ["project", "user"]
        assert finalize_extraction(store, result, failed_expectations=[], retry_delay_seconds=60)[0] is Outcome.succeeded

        stored = store.get_stage1_output("t1")
        assert (stored.scope, stored.project_key) == ("mixed", "github.com/acme/a")
        assert "dana" not in stored.project_key
        assert [output.thread_id for output in store.stage1_outputs_for_project("github.com/acme/a")] == ["t1"]
        assert store.stage1_outputs_for_project("github.com/acme/b") == []
    finally:
        store.close()


def test_a_tagged_heuristic_extraction_passes_the_quality_check():
    from codex_memories.extract.quality import QualityRow, check_extraction_batch

    extraction = HeuristicProvider().extract(_request("In this repo use tabs.", "In all my projects, answer in English.")).extraction
    tagged = tag_raw_memory(extraction.raw_memory, extraction.task_scopes, "github.com/acme/a")
    report = check_extraction_batch(
        [QualityRow(thread_id="t", raw_memory=tagged, rollout_summary=extraction.rollout_summary, rollout_slug=extraction.rollout_slug)]
    )
    assert report.success, report.rows
