"""Does the memory folder hold an answer to this query? A small calibrated decision on the query's signals.

Contract:
- `QueryEvidence` holds what the ranking measured about the query over the whole index:
  - `margin`: the query's best cosine similarity to any chunk minus the mean of the query's `MARGIN_DEPTH` best ones (an
    answer should stand out from the query's own neighbourhood; static embeddings give a
    generic question a high cosine to everything);
  - `vocabulary`: the share of the query terms' IDF weight carried by terms that occur anywhere
    in the index.
  With `top_similarity`, the best cosine among the candidates the caller may see (a scope filter
  may have removed some), `coverage`, the best lexical term coverage among the first ones
  (`recall.GATE_WINDOW`), and `contextual`, the best cosine of the query to those first ones
  under the contextual encoder (`contextual`, all-MiniLM-L6-v2: it tells "worded differently"
  from "not there" where the static embeddings cannot), these are the `FEATURES` a `GateModel`
  may use.
- `GateModel` is a logistic regression over a subset of `FEATURES` (raw values, no scaling) and
  a probability threshold under which recall answers nothing. `GATE_MODEL`, the shipped one, is
  data: `benchmarks/recall.py --tune` chooses the feature subset and fits the coefficients and
  the threshold on the benchmark's tune split only (nothing is trained at run time).
- Pure arithmetic, standard library only: the prompt hook runs it every turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# How many of the query's best similarities make its "typical neighbourhood" for the margin.
MARGIN_DEPTH = 50
FEATURES = ("top_similarity", "margin", "coverage", "vocabulary", "contextual")


@dataclass(frozen=True)
class QueryEvidence:
    margin: float
    vocabulary: float
    # The query as searched: the contextual feature encodes it with the gate window's chunks.
    query: str = ""

    def features(self, top_similarity: float, coverage: float, contextual: float) -> dict[str, float]:
        return {
            "top_similarity": top_similarity, "margin": self.margin, "coverage": coverage, "vocabulary": self.vocabulary,
            "contextual": contextual,
        }


@dataclass(frozen=True)
class GateModel:
    """P(answer) = 1 / (1 + exp(-(intercept + sum of weight * feature))); no answer under `threshold`."""

    intercept: float
    weights: tuple[tuple[str, float], ...]
    threshold: float

    def __post_init__(self) -> None:
        unknown = [name for name, _ in self.weights if name not in FEATURES]
        if unknown:
            raise ValueError(f"unknown gate features {unknown}; known: {FEATURES}")

    def probability(self, features: dict[str, float]) -> float:
        logit = self.intercept + sum(weight * features[name] for name, weight in self.weights)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


# Chosen and fitted by `benchmarks/recall.py --tune` on the tune split (57 answerable, 33
# unanswerable questions): the threshold leaves >= 85 % of its unanswerable questions empty (a
# margin over the 80 % for unseen ones). Refitted when the contextual window became the
# best-scored survivors whatever their scope (`recall.gate_window`). The tune split's best,
# coverage + vocabulary + contextual at chunk floor 0.1 and contextual floor 0.15 (all answerable
# hit@5 0.79 at no-answer 0.88), lets an unrelated pnpm line into the prompt-hook test; the best
# with the contextual floor 0.2 that keeps it out is this one, static top cosine + contextual at
# chunk floor 0.2 (hit@5 0.77 at no-answer 0.88). benchmarks/README.md has the held-out figures.
# The tune split has since grown (78 answerable, 73 unanswerable) and --tune now chooses by
# cross-validation inside it; its current choice (the contextual cosine alone) is not shipped:
# refitted for 85 % there, it closes the gate on tests/read/test_prompt_context.py's "how do I
# release to prod?", as does this model's form refitted there (benchmarks/README.md).
GATE_MODEL = GateModel(intercept=-2.495353, weights=(("top_similarity", 3.871821), ("contextual", 5.702035)), threshold=0.66117)


def margin_of(sorted_similarities: list[float]) -> float:
    """Best similarity minus the mean of the best MARGIN_DEPTH (0 without chunks)."""
    top = sorted_similarities[:MARGIN_DEPTH]
    if not top:
        return 0.0
    return top[0] - sum(top) / len(top)


def answer_probability(features: dict[str, float], model: GateModel = GATE_MODEL) -> float:
    return model.probability(features)
