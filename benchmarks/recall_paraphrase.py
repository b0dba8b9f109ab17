"""Paraphrase recall (issue 27): does prompt recall speak when the project holds the answer, and stay silent otherwise?

Data: `benchmarks/data/recall_paraphrase/` (8 projects, 83 facts of which 9 Chinese, user-level
facts, two skills; 150 paraphrase questions, 15 Chinese, and 75 unanswerable ones: near misses in
the same project, ordinary coding asks, other projects' topics), written for this issue by
someone who did not tune on it, split in half before any tuning (`split.py` beside the data:
seeded, stratified by kind, language and project, a fact's paraphrases in one half). Each
question is asked from its project's folder (`cwd_project`), as the prompt hook would.

Method: the corpus is rendered into a memory folder in Codex's layout by `recall.render_folder`
and indexed. A question is answered when a shown chunk holds its fact's key (case-insensitive).
- `prompt hook`: `prompt_context.memory_context_for_prompt` at the shipped settings (what the
  model receives); `recall`: the library at the shipped gate, 5 results; `gate off`: the same
  ranking without the gate (what the ranking alone finds); `literal`: one case-insensitive
  substring search per content word, lines ranked by how many they contain (what a model does
  with a search tool).
- `--tune` fits the gate (`relevance.GATE_MODEL`) on tune questions only: this set's tune half
  and every question of the older set (`benchmarks/data/recall/`, used as extra tune data).
  For each subset of `relevance.FEATURES`: repeated 5-fold cross-validation over this set's
  tune half (the older set always in training), a logistic regression (L2, standardised) with
  the threshold at a target silence on the training folds' unanswerable questions. It prints
  the cross-validated curve of hit@5 against silence for the chosen subset, and the fit on all
  tune data. The test half is not ranked with `--tune`.
- The trade-off table: the shipped model at several thresholds, on each half, with what the
  prompt hook would inject (facts delivered, tokens, facts per 1,000 tokens), so the operating
  point can be read off held-out data.
- Speed, in the same run, against `python -c pass`: the prompt hook as Codex runs it
  (`codex-memories-hook UserPromptSubmit`, a fresh process, on this folder) and the CLI
  (`codex-memories recall ...`, a fresh process).

Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python -m benchmarks.recall_paraphrase [--tune] [--save-report]`
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.recall import Ranked, Scores, folder_lines, literal_ranked, render_folder
from benchmarks.support import machine_description, markdown_table, save_report, scratch_dir, spread
from codex_memories.read import index as recall_index
from codex_memories.read.prompt_context import MAX_ENTRIES, estimate_tokens, render_block
from codex_memories.read.recall import DEFAULT_TUNING, ScoredChunk, Tuning, clean_query, decide, rank
from codex_memories.read.relevance import FEATURES, GateModel

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "recall_paraphrase"
OLDER_DATA = HERE / "data" / "recall"
SECTION = "recall_paraphrase"
TOP = 5
HIT_GOAL = 0.9
SILENCE_GOAL = 0.8
CV_FOLDS = 5
CV_REPEATS = 10
SILENCE_TARGETS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9)
TRADE_OFF_THRESHOLDS = (0.0, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
FRESH_REPEATS = 9


# ---- data -----------------------------------------------------------------------------------


def load(folder: Path, questions_file: Path | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    corpus = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((questions_file or folder / "questions.json").read_text(encoding="utf-8"))["questions"]
    return corpus, questions


def fact_keys(corpus: dict[str, Any]) -> dict[str, str]:
    keys = {fact["id"]: fact["key"] for fact in corpus["user_facts"]}
    keys.update({fact["id"]: fact["key"] for skill in corpus["skills"] for fact in skill["facts"]})
    keys.update({fact["id"]: fact["key"] for project in corpus["projects"] for task in project["tasks"] for fact in task["facts"]})
    return keys


@dataclass
class Asked:
    """One question, ranked once: everything a gate setting needs to decide it."""

    question: dict[str, Any]
    key: str | None
    cwd: str | None
    ranked: list[ScoredChunk]

    @property
    def answerable(self) -> bool:
        return self.key is not None

    def holds_key(self, chunks: list[ScoredChunk]) -> bool:
        return self.key is not None and any(self.key.lower() in scored.chunk.text.lower() for scored in chunks)


class Folder:
    """A corpus rendered, indexed and open, with its questions ranked."""

    def __init__(self, folder: Path, work: Path, name: str, splits: set[str] | None, questions_file: Path | None = None) -> None:
        self.corpus, questions = load(folder, questions_file)
        self.root = work / name
        render_folder(json.loads((folder / "corpus.json").read_text(encoding="utf-8")), self.root)
        self.built = recall_index.build_index(self.root)
        keys = fact_keys(self.corpus)
        cwds = {project["name"]: project["cwd"] for project in self.corpus["projects"]}
        index = recall_index.open_index(self.root)
        assert index is not None
        self.asked: list[Asked] = []
        self.warm_seconds: list[float] = []
        try:
            for question in questions:
                if splits is not None and question.get("split") not in splits:
                    continue
                cwd = cwds[question["cwd_project"]] if question["cwd_project"] else None
                started = time.perf_counter()
                ranked = rank(index, clean_query(question["question"]), cwd=cwd)
                self.warm_seconds.append(time.perf_counter() - started)
                self.asked.append(Asked(question, keys[question["expect"]] if question["expect"] else None, cwd, ranked))
        finally:
            index.close()

    def where(self, split: str | None = None, kind: str | None = None) -> list[Asked]:
        return [
            asked for asked in self.asked
            if (split is None or asked.question.get("split") == split) and (kind is None or asked.question["kind"] == kind)
        ]


# ---- figures --------------------------------------------------------------------------------


@dataclass
class Figures(Scores):
    """`recall.Scores` plus the tokens the prompt hook injected."""

    tokens: int = 0

    @property
    def facts_per_thousand_tokens(self) -> float:
        return 1000 * self.hits_at_5 / self.tokens if self.tokens else 0.0


def figures(asked: list[Asked], tuning: Tuning, limit: int = TOP) -> Figures:
    """hit@5 and silence of the library's decision, and the prompt block's tokens, under `tuning`."""
    result = Figures()
    for one in asked:
        chosen = decide(one.ranked, limit, tuning).shown
        result.tokens += estimate_tokens(render_block(chosen)) if chosen else 0
        if one.answerable:
            result.answerable += 1
            result.hits_at_5 += one.holds_key(chosen)
        else:
            result.unanswerable += 1
            result.empty += not chosen
    return result


def method_figures(asked: list[Asked], answers: dict[str, Ranked]) -> Figures:
    result = Figures()
    for one in asked:
        texts = answers[one.question["id"]].texts
        if one.answerable:
            result.answerable += 1
            result.hits_at_5 += any(one.key.lower() in text.lower() for text in texts)  # type: ignore[union-attr]
        else:
            result.unanswerable += 1
            result.empty += not texts
    return result


# ---- tuning ---------------------------------------------------------------------------------


def logistic_fit(features: np.ndarray, answerable: np.ndarray, l2: float = 1.0) -> tuple[float, np.ndarray]:
    """Newton's method for an L2-penalised logistic regression on standardised features; the
    intercept and weights on the raw features."""
    mean, deviation = features.mean(axis=0), features.std(axis=0) + 1e-9
    design = np.c_[np.ones(len(features)), (features - mean) / deviation]
    penalty = np.diag([0.0] + [l2] * features.shape[1])
    weights = np.zeros(design.shape[1])
    for _ in range(50):
        probability = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (probability - answerable) + penalty @ weights
        hessian = design.T @ (design * (probability * (1 - probability))[:, None]) + penalty
        weights -= np.linalg.solve(hessian, gradient)
    raw = weights[1:] / deviation
    return float(weights[0] - (raw * mean).sum()), raw


def feature_rows(asked: list[Asked], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    rows = [[getattr(one.ranked[0].evidence, name) for name in names] if one.ranked else [0.0] * len(names) for one in asked]
    return np.array(rows, dtype=float), np.array([one.answerable for one in asked], dtype=float)


def fit_model(asked: list[Asked], names: tuple[str, ...], silence: float) -> GateModel:
    """The logistic model over `names`, its threshold leaving `silence` of the unanswerable
    questions that the gate decides (not opened by the letter) empty."""
    features, answerable = feature_rows(asked, names)
    intercept, weights = logistic_fit(features, answerable)
    model = GateModel(round(intercept, 6), tuple((name, round(float(weight), 6)) for name, weight in zip(names, weights, strict=True)), 0.0)
    negatives = sorted(model.probability(dict(zip(names, row, strict=True))) for row, label in zip(features, answerable, strict=True) if not label)
    position = min(len(negatives) - 1, int(np.ceil(silence * len(negatives))) - 1)
    return replace(model, threshold=round(negatives[position] + 1e-6, 6) if negatives else 0.5)


def cross_validated_curve(tune: list[Asked], extra: list[Asked], names: tuple[str, ...]) -> list[tuple[float, float, float]]:
    """Per silence target: (target, mean out-of-fold hit@5, mean out-of-fold silence) over this
    set's tune half, each fold's model fitted on the other folds and all of `extra`."""
    generator = np.random.default_rng(27)
    outcome = {target: [] for target in SILENCE_TARGETS}
    for _ in range(CV_REPEATS):
        order = generator.permutation(len(tune))
        folds = [order[fold::CV_FOLDS] for fold in range(CV_FOLDS)]
        for target in SILENCE_TARGETS:
            held_out: list[Figures] = []
            for fold in folds:
                inside = set(fold.tolist())
                training = [one for position, one in enumerate(tune) if position not in inside] + extra
                model = fit_model(training, names, target)
                held_out.append(figures([tune[position] for position in fold], replace(DEFAULT_TUNING, gate_model=model)))
            total = Figures(
                answerable=sum(f.answerable for f in held_out), hits_at_5=sum(f.hits_at_5 for f in held_out),
                unanswerable=sum(f.unanswerable for f in held_out), empty=sum(f.empty for f in held_out),
            )
            outcome[target].append((total.hit5, total.no_answer))
    return [(target, float(np.mean([h for h, _ in pairs])), float(np.mean([s for _, s in pairs]))) for target, pairs in outcome.items()]


def balanced(curve: list[tuple[float, float, float]]) -> float:
    """A subset's score: its best mean of hit@5 and silence along the curve (both goals alike)."""
    return max((hit + silence) / 2 for _target, hit, silence in curve)


def tune(new: Folder, older: Folder | None, subsets: list[tuple[str, ...]] | None = None) -> None:
    tune_half = new.where(split="tune")
    extra = older.asked if older else []
    results = []
    for names in subsets or [names for size in range(1, len(FEATURES) + 1) for names in itertools.combinations(FEATURES, size)]:
        if True:
            curve = cross_validated_curve(tune_half, extra, names)
            results.append((balanced(curve), names, curve))
            print(f"  {balanced(curve):.3f} {names}", flush=True)
    results.sort(key=lambda item: (-item[0], len(item[1])))
    best_score, names, curve = results[0]
    print(f"chosen features {names} (cross-validated balanced {best_score:.3f}); its curve (silence target: hit@5 / silence):")
    for target, hit, silence in curve:
        print(f"  {target:.2f}: {hit:.3f} / {silence:.3f}")
    for target in (0.5, 0.6, 0.7, 0.8):
        print(f"fitted on all tune data at silence {target}: {fit_model(tune_half + extra, names, target)}")


# ---- speed ----------------------------------------------------------------------------------


def fresh_seconds(argv: list[str], stdin: str = "", repeats: int = FRESH_REPEATS) -> list[float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        completed = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        timings.append(time.perf_counter() - started)
        if completed.returncode != 0:
            raise RuntimeError(f"{argv} exited {completed.returncode}: {completed.stderr[-2000:]}")
    return timings


def speed(root: Path, cwd: str, prompt: str) -> list[list[str]]:
    """Fresh-process wall time of the hook and of the CLI on `root`, interleaved with `python -c pass`."""
    bin_dir = Path(sys.executable).parent
    home = root.parent / "codex-home"
    home.mkdir(exist_ok=True)
    hook = [str(bin_dir / "codex-memories-hook"), "UserPromptSubmit", "--codex-home", str(home), "--memory-root", str(root)]
    stdin = json.dumps({"session_id": "s", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "turn_id": "t", "prompt": prompt, "model": "m"})
    cli = [str(bin_dir / "codex-memories"), "recall", "--query", prompt, "--cwd", cwd, "--memory-root", str(root), "--codex-home", str(home)]
    samples: dict[str, list[float]] = {"pass": [], "hook": [], "cli": []}
    environment = {**os.environ}
    for _ in range(FRESH_REPEATS):
        samples["pass"] += fresh_seconds([sys.executable, "-c", "pass"], repeats=1)
        samples["hook"] += fresh_seconds(hook, stdin, repeats=1)
        samples["cli"] += fresh_seconds(cli, repeats=1)
    del environment
    baseline = statistics.median(samples["pass"])
    return [
        ["`python -c pass` (baseline)", spread(samples["pass"], 3, " s"), "1.0", ""],
        ["`codex-memories-hook UserPromptSubmit` (fresh process, index up to date)", spread(samples["hook"], 3, " s"),
         f"{statistics.median(samples['hook']) / baseline:.1f}", "< 10"],
        ["`codex-memories recall --query ...` (fresh process)", spread(samples["cli"], 3, " s"),
         f"{statistics.median(samples['cli']) / baseline:.1f}", "< 12"],
    ]


# ---- report ---------------------------------------------------------------------------------


def trade_off(new: Folder, splits: tuple[str, ...]) -> list[list[str]]:
    rows = []
    model = DEFAULT_TUNING.gate_model
    thresholds = sorted({*TRADE_OFF_THRESHOLDS, model.threshold})
    for threshold in thresholds:
        tuning = replace(DEFAULT_TUNING, gate_model=replace(model, threshold=threshold))
        row = [f"{threshold:.3f}" + (" (shipped)" if threshold == model.threshold else "")]
        for split in splits:
            asked = new.where(split=split)
            prompt = figures(asked, tuning, MAX_ENTRIES)
            paraphrase = figures([one for one in asked if one.question["kind"] == "paraphrase"], tuning)
            row += [f"{paraphrase.hit5:.2f}", f"{prompt.no_answer:.2f}", f"{prompt.hits_at_5}", f"{prompt.tokens:,}", f"{prompt.facts_per_thousand_tokens:.1f}"]
        rows.append(row)
    return rows


def verdict(value: float, goal: float) -> str:
    return "met" if value >= goal else f"missed by {goal - value:.2f}"


def report(new: Folder, splits: tuple[str, ...]) -> str:
    lines_of_folder = folder_lines(new.root)
    methods: dict[str, dict[str, Ranked]] = {"recall (shipped gate)": {}, "gate off": {}, "literal": {}}
    hook: dict[str, Ranked] = {}
    for one in new.asked:
        question_id = one.question["id"]
        methods["recall (shipped gate)"][question_id] = Ranked([s.chunk.text for s in decide(one.ranked, TOP).shown])
        methods["gate off"][question_id] = Ranked(
            [s.chunk.text for s in decide(one.ranked, TOP, replace(DEFAULT_TUNING, gate_model=replace(DEFAULT_TUNING.gate_model, threshold=0.0))).shown]
        )
        methods["literal"][question_id] = literal_ranked(lines_of_folder, one.question["question"])
        hook[question_id] = Ranked([s.chunk.text for s in decide(one.ranked, MAX_ENTRIES).shown])
    methods = {"prompt hook (what the model gets)": hook, **methods}
    rows = []
    for split in splits:
        for label, kind in (("paraphrase", "paraphrase"), ("unanswerable", "none")):
            asked = new.where(split=split, kind=kind)
            for name, answers in methods.items():
                found = method_figures(asked, answers)
                rows.append([f"{label} ({len(asked)})", split, name, f"{found.hit5:.2f}" if kind == "paraphrase" else "–",
                             f"{found.no_answer:.2f}" if kind == "none" else "–"])
    chinese = [one for one in new.asked if one.question["kind"] == "paraphrase" and one.ranked and one.ranked[0].evidence.cjk > 0]  # type: ignore[union-attr]
    headline = {split: figures(new.where(split=split), DEFAULT_TUNING) for split in splits}
    paraphrase = {split: figures(new.where(split=split, kind="paraphrase"), DEFAULT_TUNING) for split in splits}
    body = [
        "## Paraphrase recall (`recall_paraphrase.py`)",
        "",
        "Issue 27: prompt recall asked from the project's own folder, on a question set written for the issue "
        "(`benchmarks/data/recall_paraphrase/`: 8 projects, 83 facts, 150 paraphrases, 75 unanswerable; "
        "split in half before any tuning). The gate was fitted on the tune half and the older set only. "
        "Method in the script's docstring.",
        "",
        "Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python -m benchmarks.recall_paraphrase --save-report`",
        "",
        f"Machine: {machine_description()}",
        "",
        f"Tuning in force: `{DEFAULT_TUNING}`; prompt hook: at most {MAX_ENTRIES} entries.",
        "",
        markdown_table(["questions", "half", "method", "hit@5", "silence"], rows),
        "",
        "Trade-off along the shipped model's threshold (paraphrase hit@5; silence on unanswerable; what the prompt "
        "hook injects over the half's questions: facts delivered, tokens, facts per 1,000 tokens):",
        "",
        markdown_table(
            ["threshold", *[f"{split}: {name}" for split in splits for name in ("hit@5", "silence", "facts", "tokens", "facts/1k tokens")]],
            trade_off(new, splits),
        ),
        "",
        f"Chinese paraphrases ({len(chinese)}, both halves): hit@5 {figures(chinese, DEFAULT_TUNING).hit5:.2f}.",
        "",
        "Goals (paraphrase hit@5 ≥ 0.9, silence ≥ 0.8 on unanswerable):",
        *[
            f"- {split}: hit@5 {paraphrase[split].hit5:.2f} ({verdict(paraphrase[split].hit5, HIT_GOAL)}), "
            f"silence {headline[split].no_answer:.2f} ({verdict(headline[split].no_answer, SILENCE_GOAL)})."
            for split in splits
        ],
        "",
        markdown_table(["speed", "wall time, median (range)", "× baseline", "goal"], speed(new.root, new.asked[0].cwd or "/", "how do we ship a release here?")),
        "",
        f"Warm process, ranking one question: {statistics.median(new.warm_seconds) * 1000:.1f} ms median; "
        f"index build of this folder ({new.built.chunks} chunks, every one encoded): {new.built.seconds:.1f} s.",
    ]
    return "\n".join(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tune", action="store_true", help="Fit the gate on the tune half and the older set; the test half is not ranked.")
    parser.add_argument("--without-older", action="store_true", help="With --tune: fit on this set's tune half alone.")
    parser.add_argument("--features", help="With --tune: only these comma-separated feature subsets, joined by '+' (default: every subset).")
    parser.add_argument("--tune-only", action="store_true", help="Report the tune half alone (while designing: the test half stays unseen).")
    parser.add_argument("--save-report", action="store_true", help="Also write the report to benchmarks/.work/reports/.")
    arguments = parser.parse_args()
    work = scratch_dir("recall-paraphrase-")
    try:
        if arguments.tune:
            new = Folder(DATA, work, "memories", {"tune"})
            older = None if arguments.without_older else Folder(OLDER_DATA, work, "older", None)
            subsets = [tuple(group.split("+")) for group in arguments.features.split(",")] if arguments.features else None
            tune(new, older, subsets)
            return
        splits = ("tune",) if arguments.tune_only else ("tune", "test")
        new = Folder(DATA, work, "memories", set(splits))
        body = report(new, splits)
        print(body)
        if arguments.save_report:
            if arguments.tune_only:
                raise SystemExit("--save-report needs both halves")
            save_report(SECTION, body)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
