"""Run reports and log lines say what happened, and nothing that did not (issue 28.6)."""

from __future__ import annotations

from codex_memories.extract.extraction import ExtractionResult
from codex_memories.outcomes import Outcome
from codex_memories.reports.phase1 import ExtractionLine, Phase1Report, describe_extraction, render_phase1_markdown


def result(**fields) -> ExtractionResult:
    values = {
        "thread_id": "t1", "ownership_token": "token", "source_updated_at": 1, "rollout_path": "/r.jsonl",
        "outcome": Outcome.succeeded, "provider": "openai", "model": "gpt-5.4-mini", "transcript_tokens": 1200,
    }
    return ExtractionResult(**(values | fields))


def test_the_heuristic_provider_is_reported_without_a_model_name() -> None:
    markdown = render_phase1_markdown(Phase1Report(provider="heuristic", model="gpt-5.4-mini", provider_reason="asked for"))
    assert "gpt-5.4-mini" not in markdown
    assert "offline heuristic extractor (rule-based, no model)" in markdown
    assert "Provider: `openai`, model `gpt-5.4-mini`." in render_phase1_markdown(Phase1Report(provider="openai", model="gpt-5.4-mini"))


def test_a_truncated_transcript_is_reported_against_its_budget_and_the_cut_as_an_estimate() -> None:
    report = Phase1Report(
        provider="openai", model="m", token_budget=150_000, claimed=1,
        extractions=[ExtractionLine("t1", Outcome.succeeded, transcript_tokens=149_870, truncated_tokens=4_079_004)],
    )
    markdown = render_phase1_markdown(report)
    assert "## Truncated transcripts (budget 150000 tokens per transcript)" in markdown
    assert "- `t1`: 149870 tokens sent, the start and the end; about 4079004 left out of the middle (an estimate)" in markdown


def test_an_extraction_task_says_its_outcome_what_it_sent_and_whose_answer_it_used() -> None:
    assert describe_extraction(result(), token_budget=150_000) == (
        "succeeded; 1200 transcript tokens sent (budget 150000); openai model gpt-5.4-mini"
    )
    reused = describe_extraction(result(reused_arrived_result=True, truncated_tokens=50), token_budget=1000)
    assert reused.endswith("about 50 left out of the middle; openai model gpt-5.4-mini, its answer reused from an earlier run")
    failed = describe_extraction(result(outcome=Outcome.failed_model_request, reason="Connection refused"), token_budget=1)
    assert failed.startswith("failed_model_request: Connection refused; ")
    assert describe_extraction(result(provider="heuristic"), token_budget=1).endswith("offline heuristic extractor, no model")
