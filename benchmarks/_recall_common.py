"""What the gate experiments (`recall_*_gate.py`, `recall_gate_*.py`, `recall_cross_encoder.py`)
share: the tune split's rows per chunk floor with the prompt-context fixture's window, the AUC of a
feature, and the table of declared candidates. Tune split only: nothing here ranks the test split."""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support: the prompt-context test's folder

from _common import scratch_dir  # noqa: E402
from recall import (  # noqa: E402
    GATE_NO_ANSWER_TARGET,
    TOP,
    TuneRow,
    cross_validated,
    cwd_of,
    fact_keys,
    hybrid_candidates,
    load_corpus,
    load_questions,
    logistic_fit,
    no_answer_threshold,
    opens,
    project_cwds,
    render_folder,
    tune_figures,
)

from codex_memories.read import index as recall_index  # noqa: E402
from codex_memories.read.recall import DEFAULT_TUNING, ScoredChunk, gate_window, shown  # noqa: E402
from tests.support.memory_folder import ATLAS, write_memory_folder  # noqa: E402

SHIPPED_FORM = (0.2, ("top_similarity", "contextual"))
FIXTURE_PROMPT = "how do I release to prod?"
HALVES = 300

# (index, question, its fact key or None, its cwd, chunk floor) -> the question's row
RowOf = Callable[[recall_index.Index, dict[str, Any], str | None, str | None, float], TuneRow]
# (index, prompt, cwd, chunk floor) -> (features or None, whether the full-match rule opens the gate)
WindowOf = Callable[[recall_index.Index, str, str | None, float], tuple[dict[str, float] | None, bool]]


def survivors(index: recall_index.Index, question: str, cwd: str | None, floor: float) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
    """The candidates that pass chunk floor `floor` (the library's floor rule) and the gate's window."""
    candidates = hybrid_candidates(index, question, cwd, DEFAULT_TUNING)
    kept = [c for c in candidates if c.relevance >= floor or c.full_lexical_match]
    return kept, gate_window(kept)


def tune_row(question: dict[str, Any], key: str | None, features: dict[str, float] | None, by_letter: bool, kept: list[ScoredChunk]) -> TuneRow:
    """A tune question's row: a hit when a chunk the library would show holds the fact's key."""
    texts = [c.chunk.text for c in shown(kept, TOP, DEFAULT_TUNING)] if features else []
    hit = key is not None and any(key.lower() in text.lower() for text in texts)
    return TuneRow(features, by_letter, key is not None, question["kind"] == "paraphrase", hit)


def built_index(corpus: dict[str, Any], root: Path) -> recall_index.Index:
    """The benchmark's memory folder written at `root`, indexed and opened."""
    render_folder(corpus, root)
    recall_index.build_index(root)
    index = recall_index.open_index(root)
    assert index is not None
    return index


def tune_rows(
    row_of: RowOf, window_of: WindowOf, floors: Iterable[float], scratch_prefix: str
) -> tuple[list[dict[str, Any]], dict[float, list[TuneRow]], dict[float, tuple[dict[str, float] | None, bool]]]:
    """The tune questions, their rows per chunk floor, and per floor the window of the
    prompt-context test's folder (tests/read/test_prompt_context.py) for its "how do I release to
    prod?" from atlas, which a model fitted on all of tune must still answer."""
    floors = tuple(floors)
    corpus = load_corpus()
    questions = [q for q in load_questions() if q["split"] == "tune"]
    keys, cwds = fact_keys(corpus), project_cwds(corpus)
    work = scratch_dir(scratch_prefix)
    try:
        index = built_index(corpus, work / "memories")
        rows_by_floor = {
            floor: [row_of(index, q, keys[q["expect"]] if q["expect"] else None, cwd_of(q, cwds), floor) for q in questions]
            for floor in floors
        }
        index.close()
        fixture_root = write_memory_folder(work / "fixture")
        recall_index.build_index(fixture_root)
        fixture_index = recall_index.open_index(fixture_root)
        assert fixture_index is not None
        fixture = {floor: window_of(fixture_index, FIXTURE_PROMPT, ATLAS, floor) for floor in floors}
        fixture_index.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    answerable = sum(q["expect"] is not None for q in questions)
    print(f"tune split: {answerable} answerable, {len(questions) - answerable} unanswerable; no-answer target {GATE_NO_ANSWER_TARGET}")
    return questions, rows_by_floor, fixture


def auc(rows: list[TuneRow], name: str) -> float:
    """AUC of feature `name` for "answerable" (questions without survivors left out)."""
    positives = [r.features[name] for r in rows if r.answerable and r.features]
    negatives = [r.features[name] for r in rows if not r.answerable and r.features]
    return float(np.mean([(a > b) + 0.5 * (a == b) for a in positives for b in negatives]))


def print_candidates(
    rows_by_floor: dict[float, list[TuneRow]],
    fixture: dict[float, tuple[dict[str, float] | None, bool]],
    candidates: Iterable[tuple[float, tuple[str, ...]]],
) -> dict[tuple[float, tuple[str, ...]], Any]:
    """The shipped form and each candidate: repeated 5-fold CV, pooled out-of-fold hit@5 at equal
    silence, paired halves against the shipped form, and the fixture prompt under the model fitted
    on all of tune. Returns those fitted models, by candidate."""
    print("  floor  features | CV all / paraphrase / no-answer | pooled OOF hit@5 at 80 % / 85 % silence, AUC | paired halves vs shipped form: hit@5 diff, better, worse, no-answer diff | fitted on all tune: fixture prompt answered (P - threshold)")
    fitted = {}
    for floor, names in [SHIPPED_FORM, *candidates]:
        (all_hit, paraphrase_hit, no_answer), probabilities = cross_validated(rows_by_floor[floor], names, fit, repeats=20)
        at80 = np.mean([at_equal_silence(rows_by_floor[floor], p, 0.80) for p in probabilities], axis=0)
        at85 = np.mean([at_equal_silence(rows_by_floor[floor], p, 0.85) for p in probabilities], axis=0)
        paired = paired_halves(rows_by_floor, (floor, names)) if (floor, names) != SHIPPED_FORM else (0.0, 0.0, 0.0, 0.0)
        whole = fitted[(floor, names)] = fit(rows_by_floor[floor], names)
        features, by_letter = fixture[floor]
        margin = whole.probability(features) - whole.threshold if features else -1.0
        answered = features is not None and (by_letter or margin >= 0)
        print(
            f"  {floor}  {names} | {all_hit:.3f} / {paraphrase_hit:.3f} / {no_answer:.3f} | {at80[0]:.3f} / {at85[0]:.3f}, {at85[1]:.3f} | "
            f"{paired[0]:+.3f}, {paired[1]:.0%}, {paired[2]:.0%}, {paired[3]:+.3f} | {'yes' if answered else 'no'} ({margin:+.3f})"
        )
    return fitted


@dataclass(frozen=True)
class Fitted:
    """`recall.fit_gate_model`'s fit over any feature names (GateModel accepts only the shipped ones)."""

    names: tuple[str, ...]
    intercept: float
    weights: np.ndarray
    threshold: float

    def probability(self, features: dict[str, float]) -> float:
        logit = self.intercept + float(sum(w * features[n] for n, w in zip(self.names, self.weights, strict=True)))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def fit(rows: list[TuneRow], names: tuple[str, ...]) -> Fitted:
    features = np.array([[row.features[n] if row.features else 0.0 for n in names] for row in rows])
    answerable = np.array([row.answerable for row in rows], dtype=float)
    weights, mean, deviation = logistic_fit(features, answerable)
    raw = weights[1:] / deviation
    model = Fitted(names, float(weights[0] - (raw * mean).sum()), raw, 0.0)
    probabilities = np.array([model.probability(row.features) if row.features else 0.0 for row in rows])
    threshold = no_answer_threshold(probabilities, answerable, np.array([row.by_letter for row in rows]))
    return Fitted(names, model.intercept, raw, threshold)


def at_equal_silence(rows: list[TuneRow], probabilities: np.ndarray, silence: float) -> tuple[float, float]:
    """All-answerable hit@5 where the pooled out-of-fold threshold leaves `silence` of the
    unanswerable questions empty, and the out-of-fold AUC."""
    answerable = np.array([row.answerable for row in rows])
    by_letter = np.array([row.by_letter for row in rows])
    negatives = np.sort(probabilities[~answerable & ~by_letter])
    needed = int(np.ceil(silence * (~answerable).sum()))
    threshold = negatives[needed - 1] + 1e-9 if needed <= len(negatives) else 1.0
    opened = [row.features is not None and (row.by_letter or p >= threshold) for row, p in zip(rows, probabilities, strict=True)]
    positives, negatives_all = probabilities[answerable], probabilities[~answerable]
    auc = float(np.mean([(a > b) + 0.5 * (a == b) for a in positives for b in negatives_all]))
    return tune_figures(rows, opened)[0], auc


def paired_halves(rows_by_floor: dict[float, list[TuneRow]], candidate: tuple[float, tuple[str, ...]], halves: int = HALVES) -> tuple[float, float, float, float]:
    """Candidate minus the shipped form on the same random halves (fit on one, score the other):
    mean all-answerable hit@5 difference, share of halves better, share worse, mean no-answer difference."""
    generator = np.random.default_rng(5)
    reference = rows_by_floor[SHIPPED_FORM[0]]
    differences = []
    for _ in range(halves):
        train = set()
        for wanted in (True, False):
            members = [i for i, row in enumerate(reference) if row.answerable == wanted]
            generator.shuffle(members)
            train.update(members[: len(members) // 2])
        scored = []
        for floor, names in (SHIPPED_FORM, candidate):
            rows = rows_by_floor[floor]
            model = fit([rows[i] for i in sorted(train)], names)
            held_out = [rows[i] for i in range(len(rows)) if i not in train]
            scored.append(np.array(tune_figures(held_out, [opens(model, row) for row in held_out])))
        differences.append(scored[1] - scored[0])
    array = np.array(differences)
    return float(array[:, 0].mean()), float((array[:, 0] > 0).mean()), float((array[:, 0] < 0).mean()), float(array[:, 2].mean())
