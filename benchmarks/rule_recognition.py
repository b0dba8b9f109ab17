"""Rule recognition of the offline heuristic (issue 15): how many of the test phrasings become a
rule, with the right type and expiry, and how many ordinary sentences wrongly do.

The phrases (`benchmarks/data/typed_rules/phrases.json`) were written before the recogniser and
split by position into a half the recogniser was tuned on (`tune`) and a held-out half
(`holdout`) that was not looked at while tuning; report the holdout figures.

    .venv/bin/python -m benchmarks.rule_recognition [--split tune|holdout|all] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from codex_memories.extract.rules import recognise_rule

PHRASES = Path(__file__).parent / "data" / "typed_rules" / "phrases.json"
# A Tuesday: "this week", "until Friday" and "today" all resolve to different days.
SAID_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def measure(split: str) -> dict[str, dict[str, float | int]]:
    rows = json.loads(PHRASES.read_text(encoding="utf-8"))["phrases"]
    chosen = [row for row in rows if split == "all" or row["split"] == split]
    figures: dict[str, dict[str, float | int]] = {}
    misses = []
    for lang in ("en", "zh"):
        positives = [row for row in chosen if row["lang"] == lang and row["rule"]]
        negatives = [row for row in chosen if row["lang"] == lang and not row["rule"]]
        recognised = [(row, recognise_rule(row["text"], SAID_AT)) for row in positives]
        found = [(row, rule) for row, rule in recognised if rule is not None]
        false_rules = [row for row in negatives if recognise_rule(row["text"], SAID_AT) is not None]
        misses += [("missed", row["text"]) for row, rule in recognised if rule is None]
        misses += [("wrong type", f"{row['text']} -> {rule.type} (expected {row['type']})") for row, rule in found if rule.type != row["type"]]
        misses += [("temporary", f"{row['text']} -> {rule.temporary}") for row, rule in found if rule.temporary != row["temporary"]]
        misses += [("false rule", row["text"]) for row in false_rules]
        figures[lang] = {
            "rules": len(positives),
            "recognised": len(found),
            "recall": round(len(found) / len(positives), 3) if positives else 0.0,
            "type_correct": sum(1 for row, rule in found if rule.type == row["type"]),
            "temporary_correct": sum(1 for row, rule in found if rule.temporary == row["temporary"]),
            "ordinary": len(negatives),
            "false_rules": len(false_rules),
        }
    figures["misses"] = misses  # type: ignore[assignment]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "holdout", "all"), default="holdout")
    parser.add_argument("--show-misses", action="store_true")
    arguments = parser.parse_args()
    figures = measure(arguments.split)
    misses = figures.pop("misses")
    print(json.dumps({"split": arguments.split, **figures}, indent=1, ensure_ascii=False))
    if arguments.show_misses:
        for kind, text in misses:  # type: ignore[attr-defined]
            print(f"{kind}: {text}")


if __name__ == "__main__":
    main()
