"""Recall: the memory chunks that answer a question, for the session asking (issues 12, 15, 27).

Contract:
- `recall(root, query, cwd=None, limit=5)` returns at most `limit` `RecallResult`s (file
  relative to the root, 1-based inclusive line range, the chunk's text, score, scope), best
  first. `recall_explained` returns the same chunks with the reasons (`Recalled`: the gate's
  evidence and probability, and the other projects' chunks left out), for `recall --why`.
  Both open the index through `index.open_index`, which rebuilds it first when it is missing,
  damaged or stale; a query that meets a damaged file rebuilds and retries once.
- Who may see what: with a `cwd`, the chunks about the session's project (a project marker whose
  key matches `scopes.project_key_for_directory(cwd)`, or for scopes without a marker
  `scopes.scope_matches_cwd`) and the user-level ones (no scope). Other projects' chunks are
  ranked apart and never returned (issue 15: a rule of one project never reaches a session of
  another) unless `include_other_projects=True`, which returns them after the rest. Without a
  `cwd` every chunk counts as user-level.
- Ranking, over the chunks the caller may see only (so another project's lines cannot crowd the
  current one's out of a leg): SQLite FTS5 BM25 (Porter-stemmed words and CJK character pairs,
  OR of the query's content terms) and the cosine of the query to each chunk under the
  contextual encoder (`contextual`, all-MiniLM-L6-v2; the chunks' vectors are in the index, so a
  query costs one forward pass). Their ranks are fused by weighted reciprocal-rank fusion;
  `score` is that fused value (bigger is better, comparable within one query only). The current
  project's and the user-level chunks are ordered together by score: a user-level rule that
  answers beats a weak line of the project.
- Relevance gate (`gate`), once per query: it answers when one of the first `GAP_DEPTH`
  candidates contains every content word of a query of two or more words (an answer by the
  letter), or when `relevance.answer_probability` (a logistic model over the query's
  `QueryEvidence`, fitted offline on tune questions) reaches `Tuning.gate_model.threshold`;
  otherwise []. Then `shown`: the candidates in order, each reaching a contextual cosine of
  `Tuning.floor_contextual` (unless it holds every query word), one per distinct text (the same
  fact in MEMORY.md and in a rollout summary is shown once), at most `limit`.
  Within one project the candidates are few and the right one is usually among the first five
  (benchmarks/README.md, paraphrase recall): the gate's job is only "is there an answer here at
  all", and its threshold is the measured trade-off between speaking and silence.
- A missing encoder package raises `embedding.EmbedderUnavailable` (its subclass
  `contextual.EncoderUnavailable`): the caller reports it, never "no memories".
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
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codex_memories.read import contextual
from codex_memories.read.glossary import english_gloss
from codex_memories.read.chunks import is_user_level, own_words
from codex_memories.read.index import CJK_RUN, Index, IndexedChunk, build_index, cjk_bigrams, open_index
from codex_memories.read.relevance import GAP_DEPTH, GATE_MODEL, GateModel, QueryEvidence, answer_probability, gap_of
from codex_memories.scopes import marked_project_key, project_key_for_directory, project_keys_match, scope_matches_cwd

MAX_QUERY_CHARS = 4_000
MAX_QUERY_TERMS = 48
CANDIDATES_PER_LEG = 50
MIN_LEXICAL_MATCH_TERMS = 2
FULL_COVERAGE = 0.999
# How many other projects' chunks `--why` names.
OTHER_PROJECT_EXAMPLES = 3

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
    """The knobs of ranking and of the relevance gate; defaults measured by benchmarks/recall_paraphrase.py."""

    lexical_weight: float = 0.5
    semantic_weight: float = 1.0
    rrf_k: float = 30.0
    # A shown chunk must reach this contextual cosine to the query (unless it holds every query word).
    floor_contextual: float = 0.2
    # The "is there an answer at all" decision; `replace(GATE_MODEL, threshold=0.0)` turns it off.
    gate_model: GateModel = GATE_MODEL


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
    # Every content word of a query of two or more words is in this chunk: an answer by the
    # letter, whatever the encoder thinks of it (it misses short keyword prompts).
    full_lexical_match: bool = False
    # The IDF of the rarest query term this chunk contains, over the largest IDF possible (0 to 1).
    rarest_match: float = 0.0
    # What was measured about the query as a whole (shared by all its candidates), for the gate.
    evidence: QueryEvidence | None = None

    def as_result(self) -> RecallResult:
        return RecallResult(
            path=self.chunk.path, line_start=self.chunk.line_start, line_end=self.chunk.line_end,
            text=self.chunk.text, score=round(self.score, 6), scope=self.chunk.scope,
        )


@dataclass(frozen=True)
class Recalled:
    """One recall and its reasons: what is shown, and why the rest is not (`recall --why`)."""

    shown: list[ScoredChunk]
    # None: no memory folder, or no chunk the caller may see.
    evidence: QueryEvidence | None = None
    # The gate's P(answer) and threshold; None when a chunk holding every query word opened it.
    probability: float | None = None
    threshold: float = GATE_MODEL.threshold
    # Other projects' chunks that match the query better than anything the caller may see (never
    # shown without include_other_projects; named so the user learns why nothing came back).
    other_projects: list[ScoredChunk] = field(default_factory=list)


def recall(
    root: Path, query: str, *, cwd: str | None = None, limit: int = 5, include_other_projects: bool = False
) -> list[RecallResult]:
    """The chunks of the memory folder at `root` that answer `query`, for a session in `cwd`."""
    return [
        scored.as_result()
        for scored in recall_explained(root, query, cwd=cwd, limit=limit, include_other_projects=include_other_projects).shown
    ]


def recall_explained(
    root: Path,
    query: str,
    *,
    cwd: str | None = None,
    limit: int = 5,
    tuning: Tuning = DEFAULT_TUNING,
    include_other_projects: bool = False,
    rebuild_index: bool = True,
) -> Recalled:
    """`recall` with the ranking details and the reasons kept (`Recalled`). `rebuild_index=False`
    (the prompt hook) never builds the index: `index.IndexNotReady` when it is not usable as it is."""
    query = checked_request(query, limit)
    # Loaded up front (once per process): a missing encoder must fail every query the same way,
    # an empty folder included.
    contextual.require()
    for attempt in (1, 2):
        index = open_index(Path(root), rebuild=rebuild_index)
        if index is None:
            return Recalled(shown=[], threshold=tuning.gate_model.threshold)
        try:
            ranked = rank(index, query, cwd=cwd, tuning=tuning, include_other_projects=include_other_projects)
        except sqlite3.DatabaseError:
            if attempt == 2 or not rebuild_index:
                raise
            build_index(Path(root))  # Damage that verification could not see; one rebuild, then fail loudly.
            continue
        finally:
            index.close()
        return decide(ranked, limit, tuning, include_other_projects=include_other_projects)
    raise AssertionError("unreachable")


def decide(ranked: list[ScoredChunk], limit: int, tuning: Tuning = DEFAULT_TUNING, *, include_other_projects: bool = False) -> Recalled:
    """What recall shows for ranked candidates (`rank`), with the gate's reasons."""
    eligible = [scored for scored in ranked if include_other_projects or scored.scope_class != OTHER_PROJECT]
    evidence = eligible[0].evidence if eligible else None
    others = [scored for scored in ranked if scored.scope_class == OTHER_PROJECT and not include_other_projects]
    best = evidence.contextual if evidence else -1.0
    beaten_by = shown(
        sorted((scored for scored in others if scored.similarity > best), key=lambda scored: -scored.similarity),
        OTHER_PROJECT_EXAMPLES, tuning,
    )
    threshold = tuning.gate_model.threshold
    if evidence is None:
        return Recalled(shown=[], threshold=threshold, other_projects=beaten_by)
    if opened_by_letter(eligible):
        return Recalled(shown=shown(eligible, limit, tuning), evidence=evidence, threshold=threshold, other_projects=beaten_by)
    probability = answer_probability(evidence, tuning.gate_model)
    kept = shown(eligible, limit, tuning) if probability >= threshold else []
    return Recalled(shown=kept, evidence=evidence, probability=probability, threshold=threshold, other_projects=beaten_by)


def gate(ranked: list[ScoredChunk], tuning: Tuning = DEFAULT_TUNING) -> list[ScoredChunk]:
    """The candidates in order when the relevance gate opens for them (module docstring), else []."""
    if not ranked or ranked[0].evidence is None:
        return []
    if opened_by_letter(ranked) or answer_probability(ranked[0].evidence, tuning.gate_model) >= tuning.gate_model.threshold:
        return ranked
    return []


def opened_by_letter(ranked: list[ScoredChunk]) -> bool:
    """One of the first GAP_DEPTH candidates holds every content word of the query."""
    return any(scored.full_lexical_match for scored in ranked[:GAP_DEPTH])


def shown(kept: list[ScoredChunk], limit: int, tuning: Tuning = DEFAULT_TUNING) -> list[ScoredChunk]:
    """The first `limit` distinct chunks of `kept` that reach `Tuning.floor_contextual`, in order."""
    chosen: list[ScoredChunk] = []
    seen: set[str] = set()
    for scored in kept:
        if not (scored.full_lexical_match or scored.similarity >= tuning.floor_contextual):
            continue
        text = distinct_text(scored.chunk.text)
        if text in seen:
            continue
        seen.add(text)
        chosen.append(scored)
        if len(chosen) == limit:
            break
    return chosen


def distinct_text(text: str) -> str:
    """What two chunks saying the same thing share: their own words, lower-case, spaces folded."""
    return " ".join((own_words(text) or text).lower().split())


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
    """Distinct lower-case content terms of the query, in order, at most MAX_QUERY_TERMS: its words,
    and for a run of CJK characters its character pairs (`index.cjk_bigrams`, as indexed)."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        pieces = cjk_bigrams(word) if CJK_RUN.search(word) else [word]
        for piece in pieces:
            if piece in STOPWORDS or (len(piece) < 2 and not piece.isdigit() and not CJK_RUN.match(piece)) or piece in terms:
                continue
            terms.append(piece)
            if len(terms) == MAX_QUERY_TERMS:
                return terms
    return terms


def searched_text(query: str) -> str:
    """The query as both legs search it: the user's words, then the English words of the coding
    concepts it names in another language (`glossary`), since most memories and the encoder are
    English."""
    gloss = english_gloss(query)
    return f"{query}\n{gloss}" if gloss else query


def cjk_share(query: str) -> float:
    """The share of the query's letters that are CJK characters."""
    letters = sum(1 for character in query if character.isalpha())
    if not letters:
        return 0.0
    return sum(len(run) for run in CJK_RUN.findall(query)) / letters


def rank(
    index: Index, query: str, *, cwd: str | None, tuning: Tuning = DEFAULT_TUNING, include_other_projects: bool = False
) -> list[ScoredChunk]:
    """Every candidate: those the caller may see by fused score, then other projects' by theirs.

    Each group is ranked on its own (both legs, their fusion), so another project cannot push the
    current one's lines out of a leg. The query's evidence is measured over the chunks the caller
    may see (all of them with `include_other_projects`)."""
    searched = searched_text(query)
    terms = query_terms(searched)
    session_key = project_key_for_directory(cwd) if cwd else None
    classes = np.array([scope_class(scope, cwd, session_key) for scope in index.scopes()], dtype=np.int8)
    similarities = semantic_similarities(index, searched)
    own = np.ones(len(classes), dtype=bool) if include_other_projects else classes != OTHER_PROJECT
    groups = [own, ~own] if (~own).any() else [own]
    ranked: list[ScoredChunk] = []
    for number, members in enumerate(groups):
        candidates = _ranked_group(index, terms, similarities, members, classes, tuning)
        if number == 0:
            evidence = _evidence(query, terms, similarities, own, candidates)
            candidates = [_with_evidence(scored, evidence) for scored in candidates]
        ranked.extend(candidates)
    return ranked


def _ranked_group(
    index: Index, terms: list[str], similarities: np.ndarray, members: np.ndarray, classes: np.ndarray, tuning: Tuning
) -> list[ScoredChunk]:
    if not members.any():
        return []
    lexical = lexical_ranking(index, terms, allowed=members)
    ids = np.flatnonzero(members)
    semantic = [int(i) + 1 for i in ids[np.argsort(-similarities[ids], kind="stable")[:CANDIDATES_PER_LEG]]]
    candidates = list(dict.fromkeys([*lexical, *semantic]))
    coverage, rarest = term_coverage(index, terms, set(candidates))
    lexical_rank = {chunk_id: position for position, chunk_id in enumerate(lexical, start=1)}
    semantic_rank = {chunk_id: position for position, chunk_id in enumerate(semantic, start=1)}
    chunks = index.chunks(candidates)
    scored: list[ScoredChunk] = []
    for chunk_id in candidates:
        fused = 0.0
        if chunk_id in lexical_rank:
            fused += tuning.lexical_weight / (tuning.rrf_k + lexical_rank[chunk_id])
        if chunk_id in semantic_rank:
            fused += tuning.semantic_weight / (tuning.rrf_k + semantic_rank[chunk_id])
        covered = coverage.get(chunk_id, 0.0)
        scored.append(
            ScoredChunk(
                chunk=chunks[chunk_id], score=fused, similarity=float(similarities[chunk_id - 1]), coverage=covered,
                lexical_rank=lexical_rank.get(chunk_id), semantic_rank=semantic_rank.get(chunk_id),
                scope_class=int(classes[chunk_id - 1]),
                full_lexical_match=len(terms) >= MIN_LEXICAL_MATCH_TERMS and covered >= FULL_COVERAGE,
                rarest_match=rarest.get(chunk_id, 0.0),
            )
        )
    scored.sort(key=lambda item: (-item.score, item.chunk.id))
    return scored


def _evidence(query: str, terms: list[str], similarities: np.ndarray, own: np.ndarray, candidates: list[ScoredChunk]) -> QueryEvidence:
    mine = np.sort(similarities[own])[::-1][: GAP_DEPTH + 1].tolist()
    best = mine[0] if mine else 0.0
    others = similarities[~own]
    other_margin = min(0.0, best - float(others.max())) if len(others) else 0.0
    agreement = _agreement(candidates)
    return QueryEvidence(
        contextual=best, contextual_gap=gap_of(mine), other_margin=other_margin,
        coverage=max((scored.coverage for scored in candidates[:GAP_DEPTH]), default=0.0), cjk=cjk_share(query),
        rare_match=max((scored.rarest_match for scored in candidates[:GAP_DEPTH]), default=0.0), agreement=agreement, query=query,
    )


# A chunk is a copy of the leader when its own words and the leader's share this much of the
# smaller set: a memory folder says one fact in several places (its MEMORY.md line, the task
# heading, the summary, the rollout summary), and each leg may put a different copy first.
COPY_OVERLAP = 0.8
MIN_COPY_WORDS = 3
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# What a file adds around a fact: typed-entry markup `{memory: ...}`, a citation `[Task 1]`, a
# scope `(project=...; cwd=...)`. Not the fact's words.
_FACT_MARKUP = re.compile(r"\{[^{}\n]*\}|\[[^\[\]\n]*\]|\([^()\n]*=[^()\n]*\)")


def _copy_words(chunk: IndexedChunk) -> frozenset[str]:
    words = _WORD.findall(_FACT_MARKUP.sub(" ", own_words(chunk.text)).casefold())
    return frozenset(words) | frozenset(cjk_bigrams(" ".join(words)))


def _is_copy(first: frozenset[str], second: frozenset[str]) -> bool:
    smaller = min(len(first), len(second))
    return smaller >= MIN_COPY_WORDS and len(first & second) >= COPY_OVERLAP * smaller


def _agreement(candidates: list[ScoredChunk]) -> float:
    """1 / the worse of the best ranks the two legs gave the leading answer, any copy of it
    counting for it (`COPY_OVERLAP`: a copy of the leader, or of the smallest such copy); 0 when
    one leg found no copy of it."""
    if not candidates:
        return 0.0
    words = [_copy_words(scored.chunk) for scored in candidates]
    copies = [0] + [position for position in range(1, len(candidates)) if _is_copy(words[position], words[0])]
    # The fact itself is the smallest copy (the leader may be its task heading, with more words):
    # whatever holds it is a copy too (the rollout summary's "Preference signals" line).
    core = min((words[position] for position in copies), key=len)
    copies += [position for position in range(1, len(candidates)) if position not in copies and _is_copy(words[position], core)]
    copies = [candidates[position] for position in copies]
    lexical = [copy.lexical_rank for copy in copies if copy.lexical_rank is not None]
    semantic = [copy.semantic_rank for copy in copies if copy.semantic_rank is not None]
    return 1.0 / max(min(lexical), min(semantic)) if lexical and semantic else 0.0


def _with_evidence(scored: ScoredChunk, evidence: QueryEvidence) -> ScoredChunk:
    return ScoredChunk(
        chunk=scored.chunk, score=scored.score, similarity=scored.similarity, coverage=scored.coverage,
        lexical_rank=scored.lexical_rank, semantic_rank=scored.semantic_rank, scope_class=scored.scope_class,
        full_lexical_match=scored.full_lexical_match, rarest_match=scored.rarest_match, evidence=evidence,
    )


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


def lexical_ranking(index: Index, terms: list[str], *, allowed: np.ndarray | None = None, limit: int = CANDIDATES_PER_LEG) -> list[int]:
    """Chunk ids by FTS5 BM25, best first (any query term matches), among `allowed` (a mask by id - 1)."""
    if not terms:
        return []
    expression = " OR ".join(f'"{term}"' for term in terms)
    rows = index.connection.execute(
        "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ? ORDER BY bm25(chunk_text), rowid", (expression,)
    )
    found: list[int] = []
    for (chunk_id,) in rows:
        if allowed is None or allowed[chunk_id - 1]:
            found.append(chunk_id)
            if len(found) == limit:
                break
    return found


def semantic_similarities(index: Index, query: str) -> np.ndarray:
    """Cosine similarity of the query to every chunk under the contextual encoder (chunk id i is row i - 1)."""
    if index.chunk_count == 0:
        return np.zeros(0, dtype=np.float32)
    return index.vectors @ contextual.encode([query])[0]


def term_coverage(index: Index, terms: list[str], candidates: set[int]) -> tuple[dict[int, float], dict[int, float]]:
    """For each candidate, the share of the query terms' IDF weight that the chunk contains, and
    the IDF of the rarest query term it contains over the largest IDF possible in the index."""
    if not terms or not candidates or index.chunk_count == 0:
        return {}, {}
    total = index.chunk_count
    listed = ",".join(str(int(chunk_id)) for chunk_id in candidates)
    weights: list[tuple[float, list[int]]] = []
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
        weights.append((inverse_frequency(total, frequency), containing))
    mass = sum(weight for weight, _ in weights)
    largest = inverse_frequency(total, 1)
    coverage: dict[int, float] = {}
    rarest: dict[int, float] = {}
    for weight, containing in weights:
        for chunk_id in containing:
            coverage[chunk_id] = coverage.get(chunk_id, 0.0) + weight / mass
            rarest[chunk_id] = max(rarest.get(chunk_id, 0.0), weight / largest)
    return coverage, rarest


def inverse_frequency(total: int, frequency: int) -> float:
    """BM25's IDF of a term found in `frequency` of `total` chunks."""
    return math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
