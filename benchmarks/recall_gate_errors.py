"""Where the shipped recall gate goes wrong (issue 12), tune split only: the answerable questions
it closes and the unanswerable ones it opens, each with the best contextual cosine of the question
to its gate window (the feature that carries the gate) and the chunk that gives it.

The point is the two distributions side by side: if the near misses the gate lets through score
as high as, or higher than, the paraphrases it shuts out, no threshold on this encoder's cosine
separates them, and no refit of the gate will either.

    .venv/bin/python benchmarks/recall_gate_errors.py [--floor 0.2] [--examples 8]
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_dir  # noqa: E402
from _recall_common import built_index, survivors  # noqa: E402
from recall import cwd_of, fact_keys, load_corpus, load_questions, project_cwds  # noqa: E402

from codex_memories.read.chunks import own_words  # noqa: E402
from codex_memories.read.recall import DEFAULT_TUNING, contextual_similarity, gate_features  # noqa: E402
from codex_memories.read.relevance import answer_probability  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--floor", type=float, default=DEFAULT_TUNING.floor_relevance, help="chunk floor")
    parser.add_argument("--examples", type=int, default=8, help="examples printed per kind of error")
    args = parser.parse_args()

    corpus = load_corpus()
    keys, cwds = fact_keys(corpus), project_cwds(corpus)
    questions = [q for q in load_questions() if q["split"] == "tune"]
    model = DEFAULT_TUNING.gate_model
    work = scratch_dir("recall-gate-errors-")
    rows: list[tuple[bool, bool, float, str, str]] = []  # answerable, opened, best cosine, question, best chunk
    try:
        index = built_index(corpus, work / "memories")
        for question in questions:
            kept, window = survivors(index, question["question"], cwd_of(question, cwds), args.floor)
            answerable = question["expect"] is not None
            if not window:
                rows.append((answerable, False, float("nan"), question["question"], ""))
                continue
            opened = answer_probability(gate_features(kept), model) >= model.threshold
            query = window[0].evidence.query if window[0].evidence else question["question"]
            best = max((contextual_similarity(query, [c.chunk.text]), own_words(c.chunk.text) or c.chunk.text) for c in window)
            rows.append((answerable, opened, best[0], question["question"], best[1].replace("\n", " ")))
        index.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    groups = {
        "answerable, gate open (right)": [r for r in rows if r[0] and r[1]],
        "answerable, gate closed (a miss)": [r for r in rows if r[0] and not r[1]],
        "unanswerable, gate closed (right)": [r for r in rows if not r[0] and not r[1]],
        "unanswerable, gate open (a wrong answer)": [r for r in rows if not r[0] and r[1]],
    }
    print(f"tune split, chunk floor {args.floor}, shipped gate (threshold {model.threshold}): {len(rows)} questions")
    print("| group | questions | best contextual cosine: median (range) |")
    print("|---|---|---|")
    for name, members in groups.items():
        cosines = [r[2] for r in members if not math.isnan(r[2])]
        figure = f"{statistics.median(cosines):.2f} ({min(cosines):.2f}-{max(cosines):.2f})" if cosines else "-"
        print(f"| {name} | {len(members)} | {figure} |")
    for name in ("answerable, gate closed (a miss)", "unanswerable, gate open (a wrong answer)"):
        print(f"\n{name}, highest cosine first:")
        for _, _, cosine, question, chunk in sorted(groups[name], key=lambda r: math.inf if math.isnan(r[2]) else -r[2])[: args.examples]:
            print(f"  {cosine:.2f}  {question!r}  ->  {chunk[:100]!r}")


if __name__ == "__main__":
    main()
