"""Rule recognition of the offline extractor (issues 15 and 34): which of a user's durable
statements it keeps in the user's words, in nine languages, and which ordinary turns it wrongly
keeps as a standing rule; beside the extractor as it was before issue 34, in the same run.

Corpus: `benchmarks/data/user_statements/corpus.json`, written for this benchmark (not copied
from tests): families of one phrasing pattern each, said in English, Chinese, Japanese, Korean,
Spanish, Portuguese, French, German and Russian. Kinds `rule`, `convention`, `decision`,
`environment`, `preference` must be kept; `question`, `request`, `chatter`, `one_off`,
`narration` must not become a rule. Split by family, never by sentence: the lexicons
(`extract/lexicons.py`) were written looking at the `tune` families only; report `holdout`.

Method, per sentence: a session of one user turn (after Codex's environment context) goes
through the whole offline extractor (`extract.heuristic.extract_heuristically`), now and at
`BASELINE_COMMIT` (loaded from git, same process). A durable statement is kept when a
`Preference signals` bullet of the raw memory quotes it (or the part of it that is not a
one-off). A must-not-keep turn is a false keep when a bullet quoting it would still be served
the next day (no expiry, or an expiry after the session's day): a one-off that expires the same
day is not served as a rule.

    .venv/bin/python -m benchmarks.rule_recognition [--split tune|holdout|all] [--show-misses]
    .venv/bin/python -m benchmarks.rule_recognition --legacy [--split ...]   # the issue-15 phrases

`--legacy` is the issue-15 measure (`data/typed_rules/phrases.json`, English and Chinese,
recogniser only), kept because `tests/extract/test_rules.py` holds its tune half.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codex_memories.extract import heuristic
from codex_memories.extract.rules import recognise_rule
from codex_memories.llm.base import ExtractionRequest
from codex_memories.prompts import RenderedPrompt
from codex_memories.typed_entries import normalise, split_entry

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).parent / "data" / "user_statements" / "corpus.json"
PHRASES = Path(__file__).parent / "data" / "typed_rules" / "phrases.json"
# The extractor before issue 34 (the commit this work started from).
BASELINE_COMMIT = "1ebc428"
# A Tuesday: "this week", "until Friday" and "today" all resolve to different days.
SAID_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
KEEP_KINDS = ("rule", "convention", "decision", "environment", "preference")
NEGATIVE_KINDS = ("question", "request", "chatter", "one_off", "narration")
_PROMPT = RenderedPrompt(text="unused", template_name="stage_one_input", sha256="0" * 64)
_ENVIRONMENT = "<environment_context>\n  <cwd>/src/shop</cwd>\n</environment_context>"

Extractor = Callable[[ExtractionRequest], Any]


def baseline_extractor(commit: str = BASELINE_COMMIT) -> Extractor:
    """`extract_heuristically` as it was at `commit`, with the rule recogniser (and, where the
    commit has them, the lexicons) of that commit."""

    def source(path: str) -> str | None:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True, check=False)
        return shown.stdout if shown.returncode == 0 else None

    # The offline extractor lived in `llm/` until the house moves of issue 38.
    heuristic_path = next(
        (path for path in ("codex_memories/extract/heuristic.py", "codex_memories/llm/heuristic.py") if source(path) is not None), None
    )
    if heuristic_path is None:
        raise SystemExit(f"cannot read the offline extractor at {commit} (a git checkout with that commit is needed)")
    modules = {}
    for name, path, swaps in (
        ("baseline_lexicons", "codex_memories/extract/lexicons.py", ()),
        ("baseline_rules", "codex_memories/extract/rules.py", (("codex_memories.extract.lexicons", "baseline_lexicons"),)),
        ("baseline_heuristic", heuristic_path, (("codex_memories.extract.rules", "baseline_rules"),)),
    ):
        text = source(path)
        if text is None:
            continue  # a commit before the lexicons had none
        for swap in swaps:
            text = text.replace(*swap)
        module = types.ModuleType(name)
        sys.modules[name] = module  # dataclasses look their module up while the class is built
        # The baseline is code from this repository's own history, run to compare against it.
        exec(compile(text, f"{commit}:{path}", "exec"), module.__dict__)  # noqa: S102
        modules[name] = module
    return modules["baseline_heuristic"].extract_heuristically


def _request(text: str) -> ExtractionRequest:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": part}]} for part in (_ENVIRONMENT, text)
    ]
    return ExtractionRequest(
        thread_id="benchmark",
        rollout_path="/sessions/benchmark.jsonl",
        cwd="/src/shop",
        model="heuristic",
        system_prompt=_PROMPT,
        user_prompt=_PROMPT,
        transcript_items=items,
        session_time=SAID_AT,
    )


def preference_bullets(raw_memory: str) -> list[tuple[str, Any]]:
    """The `Preference signals` bullets of a raw memory: (the quoted text, its entry metadata)."""
    bullets, inside = [], False
    for line in raw_memory.splitlines():
        if line.endswith(":") and not line.startswith("-"):
            inside = line == "Preference signals:"
            continue
        if inside and line.startswith("- "):
            text, meta = split_entry(line[2:])
            bullets.append((text.strip().strip('"'), meta))
    return bullets


def _quotes(bullet: str, sentence: str) -> bool:
    bullet_folded, sentence_folded = normalise(bullet), normalise(sentence)
    return bool(bullet_folded) and (bullet_folded in sentence_folded or sentence_folded in bullet_folded)


def _served_next_day(meta: Any) -> bool:
    return meta is None or meta.expires is None or meta.expires > SAID_AT.date()


def judge(extract: Extractor, kind: str, sentence: str) -> bool:
    """Kept (a durable statement) or served as a rule (a must-not-keep turn)."""
    bullets = preference_bullets(extract(_request(sentence)).raw_memory)
    quoting = [meta for text, meta in bullets if _quotes(text, sentence)]
    if kind in KEEP_KINDS:
        return bool(quoting)
    return any(_served_next_day(meta) for meta in quoting)


def measure(split: str, show_misses: bool = False, corpus_path: Path = CORPUS) -> dict[str, Any]:
    corpus = json.loads(corpus_path.read_text(encoding="utf-8"))
    families = [family for family in corpus["families"] if split == "all" or family["split"] == split]
    extractors = {"now": heuristic.extract_heuristically, "baseline": baseline_extractor()}
    results: dict[str, Any] = {}
    misses: list[str] = []
    for name, extract in extractors.items():
        by_language: dict[str, list[int]] = {language: [0, 0, 0, 0] for language in corpus["languages"]}
        by_kind: dict[str, list[int]] = {kind: [0, 0] for kind in (*KEEP_KINDS, *NEGATIVE_KINDS)}
        for family in families:
            for language, sentence in family["texts"].items():
                hit = judge(extract, family["kind"], sentence)
                positive = family["kind"] in KEEP_KINDS
                counts = by_language[language]
                counts[0 if positive else 2] += 1
                counts[1 if positive else 3] += int(hit)
                by_kind[family["kind"]][0] += 1
                by_kind[family["kind"]][1] += int(hit)
                if name == "now" and show_misses and hit != positive:
                    misses.append(f"{'missed' if positive else 'false keep'} [{family['id']} {language}] {sentence}")
        results[name] = {
            "by_language": {
                language: {"kept": f"{kept}/{wanted}", "recall": _rate(kept, wanted), "false_keeps": f"{false}/{negatives}", "false_keep_rate": _rate(false, negatives)}
                for language, (wanted, kept, negatives, false) in by_language.items()
            },
            "by_kind": {kind: f"{hit}/{count}" for kind, (count, hit) in by_kind.items()},
            "total": _totals(by_language),
        }
    return {"split": split, "families": len(families), **results, "misses": misses}


def _rate(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 3) if denominator else 0.0


def _totals(by_language: dict[str, list[int]]) -> dict[str, Any]:
    wanted, kept, negatives, false = (sum(counts[index] for counts in by_language.values()) for index in range(4))
    return {"kept": f"{kept}/{wanted}", "recall": _rate(kept, wanted), "false_keeps": f"{false}/{negatives}", "false_keep_rate": _rate(false, negatives)}


def measure_legacy(split: str) -> dict[str, Any]:
    """The issue-15 measure: the recogniser alone on `data/typed_rules/phrases.json`."""
    rows = json.loads(PHRASES.read_text(encoding="utf-8"))["phrases"]
    chosen = [row for row in rows if split == "all" or row["split"] == split]
    figures: dict[str, Any] = {}
    for language in ("en", "zh"):
        positives = [row for row in chosen if row["lang"] == language and row["rule"]]
        negatives = [row for row in chosen if row["lang"] == language and not row["rule"]]
        found = [(row, rule) for row in positives if (rule := recognise_rule(row["text"], SAID_AT)) is not None]
        figures[language] = {
            "rules": len(positives),
            "recognised": len(found),
            "type_correct": sum(1 for row, rule in found if rule.type == row["type"]),
            "temporary_correct": sum(1 for row, rule in found if rule.temporary == row["temporary"]),
            "ordinary": len(negatives),
            "false_rules": sum(1 for row in negatives if recognise_rule(row["text"], SAID_AT) is not None),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "holdout", "all"), default="holdout")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="another corpus of the same shape (e.g. data/user_statements/heldout_verbless.json)")
    parser.add_argument("--legacy", action="store_true", help="the issue-15 English and Chinese phrases, recogniser only")
    arguments = parser.parse_args()
    if arguments.legacy:
        print(json.dumps({"split": arguments.split, **measure_legacy(arguments.split)}, indent=1, ensure_ascii=False))
        return
    figures = measure(arguments.split, arguments.show_misses, arguments.corpus)
    misses = figures.pop("misses")
    print(json.dumps(figures, indent=1, ensure_ascii=False))
    for miss in misses:
        print(miss)


if __name__ == "__main__":
    main()
