"""Does the memory folder hold an answer to this query, for the session asking? A small calibrated decision.

Contract:
- `QueryEvidence` holds what the ranking measured about one query over the chunks the caller
  may see (`recall.rank`: the current project's and the user-level ones):
  - `contextual`: the query's best cosine to one of them under the contextual encoder
    (`contextual`, all-MiniLM-L6-v2);
  - `contextual_gap`: that best cosine minus the mean of the next `GAP_DEPTH` (an answer stands
    out from the query's other neighbours; a generic ask is a little similar to everything);
  - `other_margin`: how far the best chunk of another project beats the best one the caller may
    see, as a number <= 0 (0 when none does): a question about another project's topic, asked
    here, finds its answer there and only look-alikes here;
  - `coverage`: the best lexical term coverage among the first `GAP_DEPTH` candidates (the share
    of the query's IDF mass carried by the query words a chunk contains);
  - `cjk`: the share of the query's letters written in CJK scripts (the encoder was trained on
    English: a Chinese query is close to every Chinese line, whatever it says).
  These are `FEATURES`; `features()` gives them by name.
- `GateModel` is a logistic regression over a subset of `FEATURES` (raw values, no scaling) and
  a probability threshold under which recall answers nothing. `GATE_MODEL`, the shipped one, is
  data: `python -m benchmarks.recall_paraphrase --tune` fits it on tune questions only (nothing is
  trained at run time).
- Pure arithmetic, standard library only: the prompt hook runs it every turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# How many of the query's next-best neighbours make its "typical neighbourhood" for the gap.
GAP_DEPTH = 5
FEATURES = ("contextual", "contextual_gap", "other_margin", "coverage", "cjk")


@dataclass(frozen=True)
class QueryEvidence:
    contextual: float
    contextual_gap: float
    other_margin: float
    coverage: float
    cjk: float
    # The query as searched (what `--why` and the benchmark report).
    query: str = ""

    def features(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in FEATURES}


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


# Fitted by `python -m benchmarks.recall_paraphrase --tune` on the issue-27 set's tune half and the older
# set (112 + 242 questions). The subset is the one with the best cross-validated mean of hit@5 and
# silence on the tune half; the contextual cosine adds nothing once these two are in (the
# encoder cannot tell a near miss from a paraphrase). The threshold leaves half of the tune
# data's unanswerable questions silent: along the threshold the prompt block's facts per
# injected token stay flat (2.3-2.4 per 1,000 tokens on the tune half from 0.45 to 0.75), and
# this is the point of that plateau that delivers the most facts (benchmarks/README.md).
GATE_MODEL = GateModel(intercept=-0.566222, weights=(("other_margin", 9.736716), ("coverage", 4.164494)), threshold=0.497268)


def gap_of(best_first: list[float]) -> float:
    """The best value minus the mean of the next GAP_DEPTH (0 with fewer than two values)."""
    if len(best_first) < 2:
        return 0.0
    following = best_first[1 : 1 + GAP_DEPTH]
    return best_first[0] - sum(following) / len(following)


def answer_probability(evidence: QueryEvidence, model: GateModel = GATE_MODEL) -> float:
    return model.probability(evidence.features())
