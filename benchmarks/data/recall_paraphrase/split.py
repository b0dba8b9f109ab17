"""Split questions.json in this folder into tune and test halves, once, before any tuning.

Deterministic (random.Random(27)), stratified by kind (paraphrase / none), language (a question
holding a CJK character is Chinese) and the project it is asked from, and grouped by the fact a
question expects: the paraphrases of
one fact land in the same half, so the test half asks about facts whose wording tuning never saw.
Within a stratum the shuffled groups go, one by one, to the half with fewer questions of that
stratum so far (ties to the half with fewer questions overall, then to test). Writes a `split`
field into every question and rewrites the file in place; running it again gives the same split.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def language(text: str) -> str:
    return "zh" if CJK.search(text) else "en"


def main() -> None:
    path = HERE / "questions.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = data["questions"]
    groups: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for question in questions:
        stratum = (question["kind"], language(question["question"]), question["cwd_project"])
        group = question["expect"] or question["id"]
        groups[stratum][group].append(question)
    rng = random.Random(27)
    totals = {"tune": 0, "test": 0}
    for stratum in sorted(groups):
        counts = {"tune": 0, "test": 0}
        names = sorted(groups[stratum])
        rng.shuffle(names)
        for name in names:
            half = min(("test", "tune"), key=lambda h: (counts[h], totals[h]))
            for question in groups[stratum][name]:
                question["split"] = half
            counts[half] += len(groups[stratum][name])
            totals[half] += len(groups[stratum][name])
    note = (
        " split: tune/test, drawn once before any tuning by split.py in this folder (random.Random(27),"
        " stratified by kind, language and project, the paraphrases of one fact kept in one half); thresholds"
        " are chosen on tune only and test is measured once at the end."
    )
    if note not in data["about"]:
        data["about"] += note
    # The file's own layout: one question per line.
    lines = ",\n".join("  " + json.dumps(question, ensure_ascii=False) for question in questions)
    path.write_text(f'{{"about": {json.dumps(data["about"], ensure_ascii=False)},\n "questions": [\n{lines}\n ]\n}}\n', encoding="utf-8")


if __name__ == "__main__":
    main()
