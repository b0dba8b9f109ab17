"""Experiment (issue 12, gate features): does any new answerability feature beat the shipped gate under cross-validation inside the tune split?

Method:
- The recall benchmark's folder, questions and ranking (`benchmarks/recall.py`), tune split only:
  the test split is never ranked here, so this script cannot choose anything on it.
- Per tune question and chunk floor (0.1, 0.2; the library's floor rule): the survivors, the
  gate's window (`recall.gate_window`), the shipped features (`recall.gate_features`) and new ones
  over the window, each with the cost it would add to the prompt hook:
  - window-relative contextual cosines (no extra forward pass): `ctx_second` (the second best),
    `ctx_mean` (mean of the window), `ctx_gap` (best minus the mean of the other four);
  - background-normalised (12 fixed sentences, `BACKGROUND`, 12 more forward passes per process
    unless shipped as constants): `bg_mean` (the query's mean cosine to them), `ctx_bg` (best
    window cosine minus `bg_mean`), `ctx_bgmax` (minus the query's best background cosine);
  - soft term coverage with the static embeddings (no forward pass): for each query content word,
    its best WordLlama cosine to a word of the chunk, IDF-weighted mean (`soft`), its minimum
    (`soft_min`), and `soft` of the window chunk with the best contextual cosine (`soft_ctxtop`);
  - word match with all-MiniLM-L6-v2 token states (late interaction; the forward pass the gate
    already runs, token states kept instead of only their mean, so no extra pass): for each
    content word of the query (`recall.query_terms`' rule), its best token cosine in the chunk (a
    word of several pieces: the mean of its pieces' best); mean over words (`ms_mean`), the
    weakest word (`ms_min`), the second weakest (`ms_min2`), mean over all query tokens
    (`ms_all`), `ms_mean` of the best-contextual chunk (`ms_top`), best of `ms_mean + contextual`
    over the window (`ms_pair`); each the best over the window.
- Models: logistic regression (`recall.logistic_fit`) with the threshold at the lowest probability
  that keeps `recall.GATE_NO_ANSWER_TARGET` of the training part's unanswerable questions empty
  (`recall.no_answer_threshold`), the full-match rule and the shown chunks' contextual floor as
  the library applies them (`recall.shown`, `DEFAULT_TUNING`). Three estimates, each on held-out
  tune questions only:
  1. repeated stratified 5-fold CV (`recall.cross_validated`, its 6 repeats; 20 for the re-checks): hit@5 of all answerable, of paraphrases, and
     the no-answer rate, thresholds fitted on the 4 training folds;
  2. pooled out-of-fold probabilities: hit@5 where the threshold leaves 80 % / 85 % of the
     unanswerable questions empty (the trade-off at equal silence) and the out-of-fold AUC;
  3. paired random halves (`HALVES` times): each candidate against the shipped form on the same
     halves; how often it does better or worse.
  4. the model fitted on the whole tune split, on the folder of tests/read/test_prompt_context.py:
     does "how do I release to prod?" from atlas still get its answer (that test requires it)?
  Every subset of up to three features is run through (1) and the best are listed: that list is
  a maximum over many noisy estimates, so (2) to (4) re-check a few pre-declared candidates.

Command: `.venv/bin/python benchmarks/recall_gate_features.py`
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support: the prompt-context test's folder

from _recall_common import auc, fit, print_candidates, survivors, tune_row, tune_rows  # noqa: E402
from recall import (  # noqa: E402
    TuneRow,
    cross_validated,
)

from codex_memories.read import contextual, embedding  # noqa: E402
from codex_memories.read import index as recall_index  # noqa: E402
from codex_memories.read.chunks import own_words  # noqa: E402
from codex_memories.read.recall import (  # noqa: E402
    ScoredChunk,
    clean_query,
    gate_features,
    query_terms,
)

FLOORS = (0.1, 0.2)
# Checked by the paired halves besides the best of the exhaustive search (declared before it ran).
DECLARED = [
    (0.2, ("contextual",)), (0.2, ("contextual", "ctx_second")), (0.2, ("contextual", "ctx_bg")),
    (0.2, ("contextual", "soft")), (0.2, ("contextual", "ms_mean")), (0.1, ("contextual", "ms_mean")),
    (0.2, ("contextual", "ms_min")), (0.1, ("contextual", "ms_min")), (0.2, ("ms_pair",)),
]
BACKGROUND = [
    "How do I do this?", "What is the best way to handle it?", "Can you help me with this task?",
    "Write some code for me.", "Explain how this works.", "What should I use here?",
    "The user prefers short answers.", "Run the tests before committing.", "The build uses a configuration file.",
    "Fix the bug in the function.", "Which version do we use?", "Where is the documentation?",
]
NEW_FEATURES = (
    "ctx_second", "ctx_mean", "ctx_gap", "bg_mean", "ctx_bg", "ctx_bgmax", "soft", "soft_min", "soft_ctxtop",
    "ms_mean", "ms_min", "ms_min2", "ms_all", "ms_top", "ms_pair",
)
SHIPPED_FEATURES = ("top_similarity", "margin", "coverage", "vocabulary", "contextual")
ALL_FEATURES = SHIPPED_FEATURES + NEW_FEATURES


# ---- encoders -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoded:
    """A text under all-MiniLM-L6-v2: its sentence vector (as `contextual.encode`), its unit token
    states without [CLS] and [SEP] (from the same forward pass), and its words as the tokenizer
    splits them (lower-cased), each with the rows of `tokens` that are its pieces."""

    pooled: np.ndarray
    tokens: np.ndarray
    words: tuple[tuple[str, tuple[int, ...]], ...]


_encoded: dict[str, Encoded] = {}


def encoded(text: str) -> Encoded:
    if text not in _encoded:
        model = contextual._model()
        encoding = model.tokenizer.encode(text)
        hidden, _mask = model.hidden_states([encoding.ids])
        states = hidden[0]
        pooled = states.mean(axis=0)
        pooled /= max(float(np.linalg.norm(pooled)), 1e-12)
        own = states[1:-1]
        tokens = own / np.maximum(np.linalg.norm(own, axis=1, keepdims=True), 1e-12)
        pieces: dict[int, list[int]] = {}
        spans: dict[int, tuple[int, int]] = {}
        for row, (word, (start, end)) in enumerate(zip(encoding.word_ids[1:-1], encoding.offsets[1:-1], strict=True)):
            if word is not None:
                pieces.setdefault(word, []).append(row)
                spans[word] = (spans.get(word, (start, end))[0], end)
        words = tuple((text[spans[w][0] : spans[w][1]].lower(), tuple(rows)) for w, rows in pieces.items())
        _encoded[text] = Encoded(pooled.astype(np.float32), tokens.astype(np.float32), words)
    return _encoded[text]


_word_vectors: dict[str, np.ndarray] = {}


def word_vector(word: str) -> np.ndarray:
    if word not in _word_vectors:
        _word_vectors[word] = embedding.embed_texts([word])[0]
    return _word_vectors[word]


def chunk_words(chunk: ScoredChunk) -> str:
    return own_words(chunk.chunk.text) or chunk.chunk.text


# ---- features -------------------------------------------------------------------------------


def late_interaction(query_text: str, query: Encoded, chunk: Encoded) -> tuple[float, float, float, float]:
    """Each content word of the query (`recall.query_terms`' rule) takes its best token cosine in
    the chunk (a word of several pieces: the mean of its pieces' best). Returns the mean over the
    words, the weakest word (`ms_min`), the second weakest, and the mean over all query tokens."""
    if not len(chunk.tokens) or not len(query.tokens):
        return 0.0, 0.0, 0.0, 0.0
    best = (query.tokens @ chunk.tokens.T).max(axis=1)
    wanted = set(query_terms(query_text))
    per_word = sorted(float(best[list(rows)].mean()) for word, rows in query.words if word in wanted)
    if not per_word:
        return 0.0, 0.0, 0.0, float(best.mean())
    return float(np.mean(per_word)), per_word[0], per_word[min(1, len(per_word) - 1)], float(best.mean())


def soft_coverage(terms: list[str], weights: list[float], text: str) -> tuple[float, float]:
    """IDF-weighted mean and minimum over query terms of the best static cosine to a chunk word."""
    words = sorted({word for word in query_terms(text)})
    if not terms or not words:
        return 0.0, 0.0
    matrix = np.stack([word_vector(word) for word in words])
    best = [float((matrix @ word_vector(term)).max()) for term in terms]
    return sum(w * b for w, b in zip(weights, best, strict=True)) / sum(weights), min(best)


def idf_weights(index: recall_index.Index, terms: list[str]) -> list[float]:
    """BM25's IDF of each term over the index (as `recall.term_coverage` weighs them)."""
    total = index.chunk_count
    weights = []
    for term in terms:
        (frequency,) = index.connection.execute("SELECT count(*) FROM chunk_text WHERE chunk_text MATCH ?", (f'"{term}"',)).fetchone()
        weights.append(math.log(1 + (total - frequency + 0.5) / (frequency + 0.5)))
    return weights


def window_features(index: recall_index.Index, question: str, cwd: str | None, floor: float, background: np.ndarray) -> tuple[dict[str, float] | None, bool, list[ScoredChunk]]:
    """The shipped and the new features of one question at chunk floor `floor` (None: no
    survivor), whether the full-match rule opens the gate, and the survivors."""
    kept, window = survivors(index, question, cwd, floor)
    if not window:
        return None, False, kept
    query_text = clean_query(question)
    query = encoded(query_text)
    terms = query_terms(query_text)
    weights = idf_weights(index, terms)
    features = gate_features(kept)
    chunks = [encoded(chunk_words(c)) for c in window]
    cosines = [float(query.pooled @ chunk.pooled) for chunk in chunks]
    ordered = sorted(cosines, reverse=True)
    late = [late_interaction(query_text, query, chunk) for chunk in chunks]
    soft = [soft_coverage(terms, weights, chunk_words(c)) for c in window]
    best_chunk = int(np.argmax(cosines))
    background_cosines = background @ query.pooled
    features.update(
        ctx_second=ordered[1] if len(ordered) > 1 else 0.0, ctx_mean=float(np.mean(ordered)),
        ctx_gap=ordered[0] - (float(np.mean(ordered[1:])) if len(ordered) > 1 else 0.0),
        bg_mean=float(background_cosines.mean()), ctx_bg=ordered[0] - float(background_cosines.mean()),
        ctx_bgmax=ordered[0] - float(background_cosines.max()),
        soft=max(x[0] for x in soft), soft_min=max(x[1] for x in soft), soft_ctxtop=soft[best_chunk][0],
        ms_mean=max(m[0] for m in late), ms_min=max(m[1] for m in late), ms_min2=max(m[2] for m in late),
        ms_all=max(m[3] for m in late), ms_top=late[best_chunk][0],
        ms_pair=max(m[0] + c for m, c in zip(late, cosines, strict=True)),
    )
    return features, any(c.full_lexical_match for c in window), kept


def question_row(index: recall_index.Index, question: dict[str, Any], key: str | None, cwd: str | None, floor: float, background: np.ndarray) -> TuneRow:
    features, by_letter, kept = window_features(index, question["question"], cwd, floor, background)
    return tune_row(question, key, features, by_letter, kept)


# ---- models and estimates -------------------------------------------------------------------


# ---- main -----------------------------------------------------------------------------------


def main() -> None:
    background: list[np.ndarray] = []  # the background sentences' vectors, encoded once the encoder is loaded

    def row_of(index: recall_index.Index, question: dict[str, Any], key: str | None, cwd: str | None, floor: float) -> TuneRow:
        if not background:
            background.append(np.stack([encoded(sentence).pooled for sentence in BACKGROUND]))
        return question_row(index, question, key, cwd, floor, background[0])

    def window_of(index: recall_index.Index, prompt: str, cwd: str | None, floor: float) -> tuple[dict[str, float] | None, bool]:
        return window_features(index, prompt, cwd, floor, background[0])[:2]

    _, rows_by_floor, fixture = tune_rows(row_of, window_of, FLOORS, "recall-gate-features-")
    print("\nAUC of each feature for 'answerable' (tune, floor 0.2):")
    for name in ALL_FEATURES:
        print(f"  {name:15s} {auc(rows_by_floor[0.2], name):.3f}")

    searched = []
    for floor in FLOORS:
        for size in (1, 2, 3):
            for names in itertools.combinations(ALL_FEATURES, size):
                searched.append((cross_validated(rows_by_floor[floor], names, fit)[0], floor, names))
    searched.sort(key=lambda item: -item[0][0])
    print(f"\n(1) repeated 5-fold CV, best 10 of {len(searched)} (floor, subset); a maximum over noisy estimates:")
    for (all_hit, paraphrase_hit, no_answer), floor, names in searched[:10]:
        print(f"  all hit@5 {all_hit:.3f}  paraphrase {paraphrase_hit:.3f}  no-answer {no_answer:.3f}  floor {floor}  {names}")

    print("\n(2) and (3): the shipped form, the declared candidates and the CV search's best:")
    print_candidates(rows_by_floor, fixture, [*DECLARED, *[(floor, names) for _, floor, names in searched[:3]]])


if __name__ == "__main__":
    main()
