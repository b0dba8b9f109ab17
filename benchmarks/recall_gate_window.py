"""Experiment (issue 12, gate window): does the gate do better when it is shown more chunks, or the chunks the user sees?

Method (tune split only: the test split is never ranked here, so nothing is chosen on it):
- The recall benchmark's folder, questions and ranking (`benchmarks/recall.py`).
- (1) Where the answer sits. Per answerable tune question with survivors at chunk floor 0.2: is a
  chunk holding the fact's key among the gate's window (`recall.gate_window`, the 5 survivors with
  the best fused score)? If not: its rank among the survivors by fused score, whether it is among
  the first 5 in scope order or among what `recall.shown` shows, or whether the chunk floor
  dropped it (a candidate under the floor) or neither leg ranked it.
- (2) Gate windows built differently, everything else as the library does it (the full-match rule
  and the coverage feature read the same window; the contextual feature is the best cosine of the
  query to the window's chunks; `shown` decides what a hit is):
  `top5` (shipped), `top8`, `top10` by fused score; `union`: the top 5 by fused score and the
  first 5 survivors in scope order (what `shown` looks at first).
  For each window, `recall.tune`'s procedure: chunk floor {0, 0.1, 0.2} x every non-empty subset
  of `relevance.FEATURES`, repeated stratified 5-fold CV (`recall.cross_validated`, 6 repeats),
  threshold per fold for `recall.GATE_NO_ANSWER_TARGET` (85 %) empty answers on the training
  folds; its choice (fewest features within `recall.CV_TOLERANCE` of the best). Then for that
  choice and for the shipped form (static top cosine + contextual, floor 0.2) under each window:
  CV with 20 repeats, hit@5 at 80 % / 85 % empty answers from pooled out-of-fold probabilities
  (`recall_gate_features.at_equal_silence`), 300 paired random halves against the shipped form
  under the shipped window (fit on one half, score the other), whether the model fitted on all of
  tune answers tests/read/test_prompt_context.py's "how do I release to prod?", and the mean
  number of chunks encoded per query (window plus what `shown` looks at, when the gate opens)
  against the shipped window's: each extra one is one forward pass (~50 ms at one BLAS thread).

- `--fresh`: wall time of a fresh process running `recall` (one BLAS thread) with each window
  patched in (`recall.gate_window` replaced; the shipped gate model kept, so only the encoding
  differs), for one answerable and one unanswerable tune question, interleaved.

Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/recall_gate_window.py [--fresh]`
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support: the prompt-context test's folder

from _common import scratch_dir  # noqa: E402
from _recall_common import at_equal_silence  # noqa: E402
from recall import (  # noqa: E402
    CHUNK_FLOORS,
    CV_TOLERANCE,
    GATE_NO_ANSWER_TARGET,
    TOP,
    TuneRow,
    cross_validated,
    cwd_of,
    fact_keys,
    fit_rows,
    fresh_process_seconds,
    hybrid_candidates,
    load_corpus,
    load_questions,
    opens,
    project_cwds,
    render_folder,
    tune_figures,
)

from codex_memories.read import index as recall_index  # noqa: E402
from codex_memories.read.recall import (  # noqa: E402
    DEFAULT_TUNING,
    GATE_WINDOW,
    ScoredChunk,
    contextual_similarity,
    gate_window,
    shown,
)
from codex_memories.read.relevance import FEATURES, QueryEvidence  # noqa: E402
from tests.support.memory_folder import ATLAS, write_memory_folder  # noqa: E402

HALVES = 300
SHIPPED_FORM = (0.2, ("top_similarity", "contextual"))
FIXTURE_PROMPT = "how do I release to prod?"


def by_score(kept: list[ScoredChunk], k: int) -> list[ScoredChunk]:
    return sorted(kept, key=lambda s: (-s.score, s.chunk.id))[:k]


def union_window(kept: list[ScoredChunk]) -> list[ScoredChunk]:
    """The top 5 by fused score, then the first 5 survivors in scope order not already in it."""
    window = by_score(kept, GATE_WINDOW)
    ids = {s.chunk.id for s in window}
    return window + [s for s in kept[:GATE_WINDOW] if s.chunk.id not in ids]


WINDOWS: dict[str, Callable[[list[ScoredChunk]], list[ScoredChunk]]] = {
    "top5": gate_window, "top8": lambda kept: by_score(kept, 8), "top10": lambda kept: by_score(kept, 10), "union": union_window,
}


def features_of(kept: list[ScoredChunk], window: list[ScoredChunk]) -> dict[str, float]:
    """`recall.gate_features` over an arbitrary window."""
    evidence = window[0].evidence or QueryEvidence(margin=0.0, vocabulary=0.0)
    return evidence.features(
        max(s.similarity for s in kept), max(s.coverage for s in window),
        contextual_similarity(evidence.query, [s.chunk.text for s in window]) if evidence.query else 0.0,
    )


def examined_by_shown(kept: list[ScoredChunk]) -> set[int]:
    """The chunk ids `recall.shown` encodes (the walk it makes at limit TOP)."""
    ids, chosen = set(), 0
    query = kept[0].evidence.query if kept and kept[0].evidence else ""
    for s in kept[: TOP + GATE_WINDOW]:
        ids.add(s.chunk.id)
        if s.full_lexical_match or contextual_similarity(query, [s.chunk.text]) >= DEFAULT_TUNING.floor_contextual:
            chosen += 1
            if chosen == TOP:
                break
    return ids


def rows_for(candidates: dict[str, list[ScoredChunk]], questions: list[dict[str, Any]], keys: dict[str, str], window_of: Callable, floor: float, show_floor: float | None = None) -> tuple[list[TuneRow], list[int]]:
    """As `recall.tune_rows`, with the window built by `window_of`; and the chunks each query encodes.
    `show_floor` (aside): `shown` reads the survivors of this lower chunk floor, the gate those of `floor`."""
    rows, encoded = [], []
    for question in questions:
        kept = [c for c in candidates[question["id"]] if c.relevance >= floor or c.full_lexical_match]
        window = window_of(kept)
        key = keys[question["expect"]] if question["expect"] else None
        visible = kept if show_floor is None else [c for c in candidates[question["id"]] if c.relevance >= show_floor or c.full_lexical_match]
        texts = [c.chunk.text for c in shown(visible, TOP, DEFAULT_TUNING)]
        rows.append(TuneRow(
            features_of(kept, window) if window else None, any(c.full_lexical_match for c in window), key is not None,
            question["kind"] == "paraphrase", key is not None and any(key.lower() in text.lower() for text in texts),
        ))
        encoded.append((len(window), len({s.chunk.id for s in window} | examined_by_shown(kept))) if window else (0, 0))
    return rows, encoded


def where_answers_sit(candidates: dict[str, list[ScoredChunk]], questions: list[dict[str, Any]], keys: dict[str, str], floor: float = 0.2) -> None:
    outside: Counter[str] = Counter()
    inside = with_survivors = 0
    details = []
    for question in questions:
        if not question["expect"]:
            continue
        key = keys[question["expect"]].lower()
        everything = candidates[question["id"]]
        kept = [c for c in everything if c.relevance >= floor or c.full_lexical_match]
        if not kept:
            continue
        with_survivors += 1
        holds = [s.chunk.id for s in kept if key in s.chunk.text.lower()]
        window_ids = {s.chunk.id for s in gate_window(kept)}
        if any(i in window_ids for i in holds):
            inside += 1
            continue
        fused = [s.chunk.id for s in by_score(kept, len(kept))]
        scope_first = {s.chunk.id for s in kept[:GATE_WINDOW]}
        shown_ids = {s.chunk.id for s in shown(kept, TOP, DEFAULT_TUNING)}
        if holds:
            rank = min(fused.index(i) + 1 for i in holds)
            place = "in the first 5 in scope order" if any(i in scope_first for i in holds) else "not in the first 5 in scope order"
            where = f"survivor, fused rank {'6-10' if rank <= 10 else '>10'}, {place}"
            if any(i in shown_ids for i in holds):
                where += ", shown"
            query = kept[0].evidence.query
            answer_cosine = max(contextual_similarity(query, [s.chunk.text]) for s in kept if s.chunk.id in holds)
            window_cosine = contextual_similarity(query, [s.chunk.text for s in gate_window(kept)])
            details_cosines = f"contextual: answer {answer_cosine:.2f}, window best {window_cosine:.2f}"
        else:
            dropped = [c for c in everything if key in c.chunk.text.lower()]
            where = f"dropped by the chunk floor (best static cosine {max(c.similarity for c in dropped):.2f})" if dropped else "not ranked by either leg"
            rank = None
            details_cosines = ""
        outside[where] += 1
        details.append((question["id"], question["kind"], rank, where + (f"; {details_cosines}" if details_cosines else ""), question["question"]))
    print(f"(1) chunk floor {floor}: {with_survivors} answerable tune questions with survivors; answer chunk in the gate window (top 5 by fused score): {inside}")
    for where, count in outside.most_common():
        print(f"  {count:3d}  {where}")
    for qid, kind, rank, where, text in details:
        print(f"    {qid} [{kind}] fused rank {rank}: {where} | {text}")


def paired_halves(rows: dict[tuple[str, float], list[TuneRow]], candidate: tuple[str, float, tuple[str, ...]], reference: tuple[str, float, tuple[str, ...]]) -> tuple[float, float, float, float]:
    """Candidate minus reference on the same random halves: mean all-answerable hit@5 difference,
    share better, share worse, mean no-answer difference (as recall_gate_features.paired_halves)."""
    generator = np.random.default_rng(5)
    base = rows[reference[:2]]
    differences = []
    for _ in range(HALVES):
        train = set()
        for wanted in (True, False):
            members = [i for i, row in enumerate(base) if row.answerable == wanted]
            generator.shuffle(members)
            train.update(members[: len(members) // 2])
        scored = []
        for window, floor, names in (reference, candidate):
            these = rows[(window, floor)]
            model = fit_rows([these[i] for i in sorted(train)], names)
            held_out = [these[i] for i in range(len(these)) if i not in train]
            scored.append(np.array(tune_figures(held_out, [opens(model, row) for row in held_out])))
        differences.append(scored[1] - scored[0])
    array = np.array(differences)
    return float(array[:, 0].mean()), float((array[:, 0] > 0).mean()), float((array[:, 0] < 0).mean()), float(array[:, 2].mean())


WINDOW_CODE = {
    "top5": "",
    "top8": "recall.gate_window = lambda kept: sorted(kept, key=lambda s: (-s.score, s.chunk.id))[:8]\n",
    "top10": "recall.gate_window = lambda kept: sorted(kept, key=lambda s: (-s.score, s.chunk.id))[:10]\n",
    "union": (
        "def window(kept):\n"
        "    top = sorted(kept, key=lambda s: (-s.score, s.chunk.id))[:5]\n"
        "    ids = {s.chunk.id for s in top}\n"
        "    return top + [s for s in kept[:5] if s.chunk.id not in ids]\n"
        "recall.gate_window = window\n"
    ),
}


def fresh(questions: list[dict[str, Any]], cwds: dict[str, str], repeats: int = 7) -> None:
    corpus = load_corpus()
    work = scratch_dir("recall-gate-window-fresh-")
    try:
        root = work / "memories"
        render_folder(corpus, root)
        recall_index.build_index(root)
        picked = [next(q for q in questions if q["kind"] == "paraphrase"), next(q for q in questions if q["expect"] is None)]
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        timings: dict[tuple[str, str], list[float]] = {}
        baseline: list[float] = []
        for _ in range(repeats):
            baseline += fresh_process_seconds("pass", 1)
            for name, patch in WINDOW_CODE.items():
                for question in picked:
                    code = (
                        "from pathlib import Path\nfrom codex_memories.read import recall\n" + patch
                        + f"recall.recall(Path({str(root)!r}), {question['question']!r}, cwd={cwd_of(question, cwds)!r})\n"
                    )
                    timings.setdefault((name, question["id"]), []).extend(fresh_process_seconds(code, 1))
        print(f"fresh process, {repeats} runs each, interleaved; `python -c pass` median {statistics.median(baseline):.3f} s")
        for (name, qid), seconds in timings.items():
            print(f"  {name:6s} {qid:16s} median {statistics.median(seconds):.3f} s ({min(seconds):.3f}-{max(seconds):.3f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    corpus = load_corpus()
    questions = [q for q in load_questions() if q["split"] == "tune"]
    keys = fact_keys(corpus)
    cwds = project_cwds(corpus)
    if "--fresh" in sys.argv[1:]:
        fresh(questions, cwds)
        return
    work = scratch_dir("recall-gate-window-")
    try:
        root = work / "memories"
        render_folder(corpus, root)
        recall_index.build_index(root)
        index = recall_index.open_index(root)
        assert index is not None
        candidates = {q["id"]: hybrid_candidates(index, q["question"], cwd_of(q, cwds), DEFAULT_TUNING) for q in questions}
        index.close()
        fixture_root = write_memory_folder(work / "fixture")
        recall_index.build_index(fixture_root)
        fixture_index = recall_index.open_index(fixture_root)
        assert fixture_index is not None
        fixture_candidates = hybrid_candidates(fixture_index, FIXTURE_PROMPT, ATLAS, DEFAULT_TUNING)
        fixture_index.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    answerable = sum(q["expect"] is not None for q in questions)
    print(f"tune split: {answerable} answerable, {len(questions) - answerable} unanswerable; no-answer target {GATE_NO_ANSWER_TARGET}\n")
    where_answers_sit(candidates, questions, keys)

    rows: dict[tuple[str, float], list[TuneRow]] = {}
    encoded: dict[tuple[str, float], list[int]] = {}
    for name, window_of in WINDOWS.items():
        for floor in CHUNK_FLOORS:
            rows[(name, floor)], encoded[(name, floor)] = rows_for(candidates, questions, keys, window_of, floor)

    print("\n    ceiling: all-answerable hit@5 with the gate always open (survivors through `shown`), by chunk floor:")
    for floor in CHUNK_FLOORS:
        these = rows[("top5", floor)]
        print(f"      floor {floor}: {np.mean([r.hit for r in these if r.answerable]):.3f}")
    print("\n    the contextual feature (best cosine over the window) at floor 0.2, median for answerable / unanswerable questions with survivors:")
    for name in WINDOWS:
        these = rows[(name, 0.2)]
        positives = [r.features["contextual"] for r in these if r.features and r.answerable]
        negatives = [r.features["contextual"] for r in these if r.features and not r.answerable]
        print(f"      {name:6s} {np.median(positives):.3f} / {np.median(negatives):.3f}")

    def fixture_answered(window: str, floor: float, names: tuple[str, ...]) -> str:
        kept = [c for c in fixture_candidates if c.relevance >= floor or c.full_lexical_match]
        chunks = WINDOWS[window](kept)
        if not chunks:
            return "no (no survivor)"
        if any(c.full_lexical_match for c in chunks):
            return "yes (full match)"
        model = fit_rows(rows[(window, floor)], names)
        margin = model.probability(features_of(kept, chunks)) - model.threshold
        return f"{'yes' if margin >= 0 else 'no'} ({margin:+.3f})"

    print("\n(2) per window: recall.tune's CV search (floor x feature subset, 6 repeats), then the re-checks (20 repeats)")
    print("  window  floor  features | CV all / paraphrase / no-answer | OOF hit@5 at 80 % / 85 %, AUC | paired halves vs shipped window+form: hit@5 diff, better, worse, no-answer diff | fixture prompt | chunks encoded per query, mean: by the gate alone, by the gate and `shown` (extra vs top5 at the same floor)")
    reference = ("top5", *SHIPPED_FORM)
    for name in WINDOWS:
        outcomes = []
        for floor in CHUNK_FLOORS:
            for size in range(1, len(FEATURES) + 1):
                for names in itertools.combinations(FEATURES, size):
                    outcomes.append((cross_validated(rows[(name, floor)], names)[0], floor, names))
        outcomes.sort(key=lambda item: (-item[0][0], len(item[2]), -item[0][2]))
        best = outcomes[0][0][0]
        chosen = min((o for o in outcomes if o[0][0] >= best - CV_TOLERANCE), key=lambda o: (len(o[2]), -o[0][0], -o[0][2], -o[1]))
        print(f"  [{name}] best CV {best:.3f}; --tune's choice: floor {chosen[1]} {chosen[2]} ({chosen[0][0]:.3f} / {chosen[0][1]:.3f} / {chosen[0][2]:.3f})")
        for floor in CHUNK_FLOORS:
            (all_hit, paraphrase_hit, no_answer), _floor, names = next(o for o in outcomes if o[1] == floor)
            print(f"    best at floor {floor}: {all_hit:.3f} / {paraphrase_hit:.3f} / {no_answer:.3f} {names}")
        for floor, names in dict.fromkeys([SHIPPED_FORM, (chosen[1], chosen[2])]):
            these = rows[(name, floor)]
            (all_hit, paraphrase_hit, no_answer), probabilities = cross_validated(these, names, repeats=20)
            at80 = np.mean([at_equal_silence(these, p, 0.80) for p in probabilities], axis=0)
            at85 = np.mean([at_equal_silence(these, p, 0.85) for p in probabilities], axis=0)
            paired = paired_halves(rows, (name, floor, names), reference) if (name, floor, names) != reference else (0.0, 0.0, 0.0, 0.0)
            mean_encoded = np.mean(encoded[(name, floor)], axis=0)
            extra = mean_encoded - np.mean(encoded[("top5", floor)], axis=0)
            print(
                f"  {name:6s} {floor}  {names} | {all_hit:.3f} / {paraphrase_hit:.3f} / {no_answer:.3f} | {at80[0]:.3f} / {at85[0]:.3f}, {at85[1]:.3f} | "
                f"{paired[0]:+.3f}, {paired[1]:.0%}, {paired[2]:.0%}, {paired[3]:+.3f} | {fixture_answered(name, floor, names)} | "
                f"gate {mean_encoded[0]:.2f} ({extra[0]:+.2f}), gate + shown {mean_encoded[1]:.2f} ({extra[1]:+.2f})"
            )
        model = fit_rows(rows[(name, chosen[1])], chosen[2])
        print(f"    fitted on all of tune: floor {chosen[1]} {model}")

    # Aside, not a window: 9 of the 16 answers outside the window were dropped by the chunk floor,
    # which no window can show. The gate as shipped (top 5 at floor 0.2) with `shown` reading the
    # survivors of floor 0.1 (the pnpm line stays out by the contextual floor, not the chunk floor).
    print("\n(aside) gate on the top-5 window at floor 0.2, shown chunks from the survivors of floor 0.1:")
    rows[("split", 0.2)], _ = rows_for(candidates, questions, keys, gate_window, 0.2, show_floor=0.1)
    print(f"    ceiling (gate always open): {np.mean([r.hit for r in rows[('split', 0.2)] if r.answerable]):.3f}")
    for names in (SHIPPED_FORM[1], ("contextual",)):
        these = rows[("split", 0.2)]
        (all_hit, paraphrase_hit, no_answer), probabilities = cross_validated(these, names, repeats=20)
        at80 = np.mean([at_equal_silence(these, p, 0.80) for p in probabilities], axis=0)
        at85 = np.mean([at_equal_silence(these, p, 0.85) for p in probabilities], axis=0)
        paired = paired_halves(rows, ("split", 0.2, names), reference)
        print(
            f"  split  0.2  {names} | {all_hit:.3f} / {paraphrase_hit:.3f} / {no_answer:.3f} | {at80[0]:.3f} / {at85[0]:.3f}, {at85[1]:.3f} | "
            f"{paired[0]:+.3f}, {paired[1]:.0%}, {paired[2]:.0%}, {paired[3]:+.3f}"
        )


if __name__ == "__main__":
    main()
