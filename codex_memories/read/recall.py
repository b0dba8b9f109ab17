"""Recall: the memory chunks that answer a question, lexical and semantic search fused (issue 12).

Contract:
- `recall(root, query, cwd=None, limit=5)` returns at most `limit` `RecallResult`s (file
  relative to the root, 1-based inclusive line range, the chunk's text, score, scope), best
  first. It opens the index through `index.open_index`, which rebuilds it first when it is
  missing, damaged or stale; a query that meets a damaged file rebuilds and retries once.
- Two legs over the same chunks: SQLite FTS5 BM25 (Porter-stemmed words, OR of the query's
  content words) and cosine similarity of static WordLlama embeddings (`embedding`). Their ranks
  are fused by weighted reciprocal-rank fusion; `score` is that fused value (bigger is better,
  comparable within one query only).
- Relevance gate (`gate`), in two steps. A chunk's relevance is its cosine similarity plus
  `Tuning.coverage_weight` times its term coverage (the share of the query's IDF mass carried by
  the query words it contains). Chunks under `Tuning.floor_relevance` are dropped; then the
  question is decided once for the whole folder: it has an answer when one of the first
  `GATE_WINDOW` survivors contains every content word of the query, or when
  `relevance.answer_probability` (a logistic model over a subset of `gate_features`: the best
  cosine among the survivors, how far the query's best cosine stands out from its other
  neighbours, term coverage, vocabulary coverage, and the best contextual cosine of the query to
  the first `GATE_WINDOW` survivors; chosen and fitted offline on the benchmark's tune split)
  reaches `Tuning.gate_model.threshold`; otherwise []. Of the first `limit` chunks that pass,
  those shown (`shown`) must also reach a contextual cosine of `Tuning.floor_contextual` to the
  query, unless they contain every content word of it (none left: []).
  The contextual cosine comes from all-MiniLM-L6-v2 (`contextual`) run on the query and on those
  few chunks at query time (they are cached per process): static embeddings cannot tell "no
  answer" from "worded differently", and encoding only the window keeps the index build as
  cheap as before. A missing encoder package raises `embedding.EmbedderUnavailable` (its
  subclass `contextual.EncoderUnavailable`): the caller reports it, never "no memories".
  A per-query decision lets weak neighbours of a clear answer through, which a per-chunk
  threshold would drop. The gate still trades some recall for silence; benchmarks/README.md has
  the measured trade-off.
- Scope order: results about `cwd` come first, then user-level ones (no scope); by score within
  each class. A chunk's scope is about `cwd` when it carries a project marker whose key matches
  the session's project key (`scopes.project_key_for_directory(cwd)`, `project_keys_match`), or,
  for scopes without a marker (folders written before scopes), when `scopes.scope_matches_cwd`
  says so. Other projects' chunks are dropped when `cwd` is given (issue 15: a rule of one
  project never reaches a session of another); `include_other_projects=True` keeps them, ranked
  last. Without `cwd` there is no current project and every chunk counts as user-level.
- Bad input: a blank query raises `EmptyQuery` (a `ValueError`); `limit < 1` raises
  `InvalidLimit`; a missing memory folder returns []; a query longer than `MAX_QUERY_CHARS` is
  cut to its head and tail (a pasted log is mostly middle).
- `results_as_json(results)` is `{"results": [{"path", "line_start", "line_end", "text",
  "score", "scope"}, ...]}`.
- Reads the memory folder; writes only the index in the bookkeeping folder. Light imports (no
  Prefect, SQLAlchemy, openai, pydantic): the prompt hook runs it in a fresh process.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codex_memories.read import contextual, embedding
from codex_memories.read.chunks import is_user_level, own_words
from codex_memories.read.index import Index, IndexedChunk, build_index, open_index
from codex_memories.read.relevance import (
    GATE_MODEL,
    MARGIN_DEPTH,
    GateModel,
    QueryEvidence,
    answer_probability,
    margin_of,
)
from codex_memories.scopes import marked_project_key, project_key_for_directory, project_keys_match, scope_matches_cwd

MAX_QUERY_CHARS = 4_000
MAX_QUERY_TERMS = 48
CANDIDATES_PER_LEG = 50
GATE_WINDOW = 5
MIN_LEXICAL_MATCH_TERMS = 2
FULL_COVERAGE = 0.999

CURRENT_PROJECT = 0
USER_LEVEL = 1
OTHER_PROJECT = 2

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words that carry no topic: BM25 would rank chunks by how often they say "how" or "the". Not
# "make" or "use": in a coding agent's memory they name tools and choices (`make -j8`, "use pnpm").
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves again also ever get
    got used using one way thing things know tell remember recall please need want made let us again
    which whats what's ok okay there's again can't dont don't im i'm we're it's""".split()
)


class RecallError(ValueError):
    """A recall request is malformed; the CLI exits 2 on it."""


class EmptyQuery(RecallError):
    """The query is empty or whitespace."""


class InvalidLimit(RecallError):
    """`limit` must be at least 1."""


@dataclass(frozen=True)
class Tuning:
    """The knobs of ranking and of the relevance gate; defaults measured by benchmarks/recall.py."""

    lexical_weight: float = 0.5
    semantic_weight: float = 1.0
    rrf_k: float = 30.0
    coverage_weight: float = 0.0
    # Chosen with the gate model and the contextual floor by benchmarks/recall.py --tune (tune split).
    floor_relevance: float = 0.2
    # A shown chunk must also have at least this contextual cosine to the query (unless it holds
    # every query word). The tune split's best was 0.15; 0.2 is the lowest grid value that keeps
    # "The user set up pnpm workspaces." (contextual cosine 0.19; the answer 0.56) out of the
    # prompt for "How do I build atlas?" in tests/read/test_hooks.py.
    floor_contextual: float = 0.2
    # The "is there an answer at all" decision; `replace(GATE_MODEL, threshold=0.0)` turns it off.
    gate_model: GateModel = GATE_MODEL

    def relevance(self, similarity: float, coverage: float) -> float:
        return similarity + self.coverage_weight * coverage


DEFAULT_TUNING = Tuning()


@dataclass(frozen=True)
class RecallResult:
    path: str
    line_start: int
    line_end: int
    text: str
    score: float
    scope: str | None


@dataclass(frozen=True)
class ScoredChunk:
    """One candidate with everything the ranking knew about it (the benchmark and the hook read this)."""

    chunk: IndexedChunk
    score: float
    similarity: float
    coverage: float
    lexical_rank: int | None
    semantic_rank: int | None
    scope_class: int
    relevance: float = 0.0
    # Every content word of a query of two or more words is in this chunk: an answer by the
    # letter, whatever the static embeddings think of it (they miss short keyword prompts).
    full_lexical_match: bool = False
    # What was measured about the query as a whole (shared by all its candidates), for the gate.
    evidence: QueryEvidence | None = None

    def as_result(self) -> RecallResult:
        return RecallResult(
            path=self.chunk.path, line_start=self.chunk.line_start, line_end=self.chunk.line_end,
            text=self.chunk.text, score=round(self.score, 6), scope=self.chunk.scope,
        )


def recall(
    root: Path, query: str, *, cwd: str | None = None, limit: int = 5, include_other_projects: bool = False
) -> list[RecallResult]:
    """The chunks of the memory folder at `root` that answer `query`, current project first."""
    return [
        scored.as_result()
        for scored in recall_scored(root, query, cwd=cwd, limit=limit, include_other_projects=include_other_projects)
    ]


def recall_scored(
    root: Path,
    query: str,
    *,
    cwd: str | None = None,
    limit: int = 5,
    tuning: Tuning = DEFAULT_TUNING,
    include_other_projects: bool = False,
) -> list[ScoredChunk]:
    """`recall` with the ranking details kept; only chunks that pass the relevance gate."""
    query = checked_request(query, limit)
    # Loaded up front (once per process): a missing encoder must fail every query the same way,
    # not only those whose candidates reach the contextual feature.
    contextual.require()
    for attempt in (1, 2):
        index = open_index(Path(root))
        if index is None:
            return []
        try:
            ranked = rank(index, query, cwd=cwd, tuning=tuning)
        except sqlite3.DatabaseError:
            if attempt == 2:
                raise
            build_index(Path(root))  # Damage that verification could not see; one rebuild, then fail loudly.
            continue
        finally:
            index.close()
        kept = gate(ranked, tuning)
        if not include_other_projects:
            # After the gate, which asks whether the folder answers at all (its measured tuning
            # assumes every chunk); only what is shown leaves other projects out.
            kept = [scored for scored in kept if scored.scope_class != OTHER_PROJECT]
        return shown(kept, limit, tuning)
    raise AssertionError("unreachable")


def gate(ranked: list[ScoredChunk], tuning: Tuning = DEFAULT_TUNING) -> list[ScoredChunk]:
    """The ranked candidates that pass the relevance gate (module docstring), in order; [] for no answer."""
    kept = [scored for scored in ranked if scored.relevance >= tuning.floor_relevance or scored.full_lexical_match]
    window = gate_window(kept)
    if not window:
        return []
    if any(scored.full_lexical_match for scored in window):
        return kept
    if answer_probability(gate_features(kept), tuning.gate_model) < tuning.gate_model.threshold:
        return []
    return kept


def shown(kept: list[ScoredChunk], limit: int, tuning: Tuning = DEFAULT_TUNING) -> list[ScoredChunk]:
    """The first `limit` chunks that passed the gate and reach `Tuning.floor_contextual`, in order.

    A dropped chunk is replaced from further down, but at most `GATE_WINDOW` more are looked at:
    each one costs a forward pass of the encoder unless the gate already encoded it."""
    if tuning.floor_contextual <= 0.0 or not kept or not kept[0].evidence or not kept[0].evidence.query:
        return kept[:limit]
    query = kept[0].evidence.query
    chosen: list[ScoredChunk] = []
    for scored in kept[: limit + GATE_WINDOW]:
        if scored.full_lexical_match or contextual_similarity(query, [scored.chunk.text]) >= tuning.floor_contextual:
            chosen.append(scored)
            if len(chosen) == limit:
                break
    return chosen


def gate_window(kept: list[ScoredChunk]) -> list[ScoredChunk]:
    """The `GATE_WINDOW` survivors with the best fused score, whatever their scope. The gate asks
    whether the folder answers at all: a current project's weak chunks, first in scope order,
    must not hide the answer a user-level chunk holds (tests/flows/test_scopes_end_to_end.py)."""
    return sorted(kept, key=lambda scored: (-scored.score, scored.chunk.id))[:GATE_WINDOW]


def gate_features(kept: list[ScoredChunk]) -> dict[str, float]:
    """The gate's `relevance.FEATURES` for the surviving candidates of one query (at least one).

    Over the survivors, not the index: chunks a caller filtered out must not open the gate."""
    window = gate_window(kept)
    evidence = window[0].evidence or QueryEvidence(margin=0.0, vocabulary=0.0)
    return evidence.features(
        max(scored.similarity for scored in kept), max(scored.coverage for scored in window),
        contextual_similarity(evidence.query, [scored.chunk.text for scored in window]) if evidence.query else 0.0,
    )


def contextual_similarity(query: str, texts: list[str]) -> float:
    """The best cosine of `query` to `texts` under the contextual encoder (their own words, as indexed)."""
    query_vector = _contextual_vector(query)
    return max(float(query_vector @ _contextual_vector(own_words(text) or text)) for text in texts)


@lru_cache(maxsize=2048)
def _contextual_vector(text: str) -> np.ndarray:
    # A warm process (the MCP server, the benchmark) meets the same chunks again and again.
    return contextual.encode([text])[0]


def results_as_json(results: list[RecallResult]) -> dict[str, Any]:
    return {
        "results": [
            {
                "path": result.path, "line_start": result.line_start, "line_end": result.line_end,
                "text": result.text, "score": result.score, "scope": result.scope,
            }
            for result in results
        ]
    }


def checked_request(query: str, limit: int) -> str:
    """The query as searched, or `EmptyQuery` / `InvalidLimit`. A caller that may answer without
    searching (no memory folder) checks first: a bad request is an error whatever the folder."""
    query = clean_query(query)
    if limit < 1:
        raise InvalidLimit("limit must be at least 1")
    return query


def clean_query(query: str) -> str:
    """The query as searched: EmptyQuery when blank, head and tail kept when very long."""
    if not query or not query.strip():
        raise EmptyQuery("the query must not be empty")
    query = query.strip()
    if len(query) > MAX_QUERY_CHARS:
        half = MAX_QUERY_CHARS // 2
        query = f"{query[:half]}\n{query[-half:]}"
    return query


def query_terms(query: str) -> list[str]:
    """Distinct lower-case content words of the query, in order, at most MAX_QUERY_TERMS."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word in STOPWORDS or (len(word) < 2 and not word.isdigit()) or word in terms:
            continue
        terms.append(word)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def rank(index: Index, query: str, *, cwd: str | None, tuning: Tuning = DEFAULT_TUNING) -> list[ScoredChunk]:
    """Every candidate of either leg, gated and ordered (scope class, then fused score)."""
    terms = query_terms(query)
    lexical = lexical_ranking(index, terms)
    similarities = semantic_similarities(index, query)
    semantic = [int(i) + 1 for i in np.argsort(-similarities, kind="stable")[:CANDIDATES_PER_LEG]] if len(similarities) else []
    coverage, vocabulary = term_coverage(index, terms, set(lexical) | set(semantic))
    evidence = QueryEvidence(margin=similarity_margin(similarities), vocabulary=vocabulary, query=query)

    lexical_rank = {chunk_id: position for position, chunk_id in enumerate(lexical, start=1)}
    semantic_rank = {chunk_id: position for position, chunk_id in enumerate(semantic, start=1)}
    candidates = list(dict.fromkeys([*lexical, *semantic]))
    chunks = index.chunks(candidates)
    session_key = project_key_for_directory(cwd) if cwd else None
    scored: list[ScoredChunk] = []
    for chunk_id in candidates:
        fused = 0.0
        if chunk_id in lexical_rank:
            fused += tuning.lexical_weight / (tuning.rrf_k + lexical_rank[chunk_id])
        if chunk_id in semantic_rank:
            fused += tuning.semantic_weight / (tuning.rrf_k + semantic_rank[chunk_id])
        similarity = float(similarities[chunk_id - 1])
        covered = coverage.get(chunk_id, 0.0)
        chunk = chunks[chunk_id]
        scored.append(
            ScoredChunk(
                chunk=chunk, score=fused, similarity=similarity, coverage=covered,
                lexical_rank=lexical_rank.get(chunk_id), semantic_rank=semantic_rank.get(chunk_id),
                scope_class=scope_class(chunk.scope, cwd, session_key), relevance=tuning.relevance(similarity, covered),
                full_lexical_match=len(terms) >= MIN_LEXICAL_MATCH_TERMS and covered >= FULL_COVERAGE,
                evidence=evidence,
            )
        )
    scored.sort(key=lambda item: (item.scope_class, -item.score, item.chunk.id))
    return scored


@lru_cache(maxsize=4096)
def scope_class(scope: str | None, cwd: str | None, session_key: str | None = None) -> int:
    """CURRENT_PROJECT, USER_LEVEL or OTHER_PROJECT (without a cwd every scope is USER_LEVEL).

    `session_key` is the session's project key; a scope with a project marker is judged by it."""
    if is_user_level(scope):
        return USER_LEVEL
    marked = marked_project_key(scope or "")
    if marked is not None:
        if not cwd:
            return USER_LEVEL
        return CURRENT_PROJECT if project_keys_match(marked, session_key) else OTHER_PROJECT
    if cwd and scope_matches_cwd(scope or "", cwd):
        return CURRENT_PROJECT
    return OTHER_PROJECT if cwd else USER_LEVEL


def lexical_ranking(index: Index, terms: list[str], limit: int = CANDIDATES_PER_LEG) -> list[int]:
    """Chunk ids by FTS5 BM25, best first (any query term matches)."""
    if not terms:
        return []
    expression = " OR ".join(f'"{term}"' for term in terms)
    rows = index.connection.execute(
        "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ? ORDER BY bm25(chunk_text), rowid LIMIT ?",
        (expression, limit),
    )
    return [row[0] for row in rows]


def semantic_similarities(index: Index, query: str) -> np.ndarray:
    """Cosine similarity of the query to every chunk (chunk id i is row i - 1)."""
    if index.chunk_count == 0:
        return np.zeros(0, dtype=np.float32)
    query_vector = embedding.embed_texts([query])[0]
    return index.vectors @ query_vector


def similarity_margin(similarities: np.ndarray) -> float:
    """`relevance.margin_of` over the query's MARGIN_DEPTH best similarities."""
    if len(similarities) == 0:
        return 0.0
    depth = min(MARGIN_DEPTH, len(similarities))
    best = np.partition(similarities, len(similarities) - depth)[len(similarities) - depth :]
    return margin_of(sorted(best.tolist(), reverse=True))


def term_coverage(index: Index, terms: list[str], candidates: set[int]) -> tuple[dict[int, float], float]:
    """For each candidate, the share of the query terms' IDF weight that the chunk contains; and the
    share carried by terms found anywhere in the index (the query's vocabulary coverage)."""
    if not terms or not candidates or index.chunk_count == 0:
        return {}, 0.0
    total = index.chunk_count
    listed = ",".join(str(int(chunk_id)) for chunk_id in candidates)
    weights: list[tuple[float, list[int]]] = []
    present: list[bool] = []
    for term in terms:
        expression = f'"{term}"'
        # Counted inside SQLite: a common word can match most of a large index.
        (frequency,) = index.connection.execute("SELECT count(*) FROM chunk_text WHERE chunk_text MATCH ?", (expression,)).fetchone()
        containing = [] if frequency == 0 else [
            row[0]
            for row in index.connection.execute(
                f"SELECT rowid FROM chunk_text WHERE chunk_text MATCH ? AND rowid IN ({listed})", (expression,)
            )
        ]
        weights.append((math.log(1 + (total - frequency + 0.5) / (frequency + 0.5)), containing))
        present.append(frequency > 0)
    mass = sum(weight for weight, _ in weights)
    coverage: dict[int, float] = {}
    for weight, containing in weights:
        for chunk_id in containing:
            coverage[chunk_id] = coverage.get(chunk_id, 0.0) + weight / mass
    vocabulary = sum(weight for (weight, _), found in zip(weights, present, strict=True) if found) / mass
    return coverage, vocabulary
