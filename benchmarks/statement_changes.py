"""Changes of state, corrections and one-offs in the offline extractor (issue 34, items 1 to 3),
on a corpus written blind.

Corpus: `benchmarks/data/user_statements/heldout_changes.json`, written by a separate helper
session that saw neither the extractor, its tests nor the data it was tuned on, and never ran it;
nine languages (en, zh, ja, ko, es, pt, fr, de, ru). Nothing of the extractor was tuned on it:
the state-change, correction and retraction words of `extract/lexicons.py` were written before
it was read, from sentences in `tests/extract/`.

What is measured, through the whole offline extractor (`extract.heuristic.extract_heuristically`):

- `state_change` sentences ("we moved the monorepo to Go 1.22 last week") are kept in the user's
  words and served the next day; `edit_narration` ("I moved the helper into utils.py") and
  `status_now` ("CI is slow this morning") are not served as a rule (false keeps);
- `correction` sessions: the corrected statement is kept and the statement it corrects is not;
  `additive` sessions: both statements are kept (a later statement on a related subject does not
  wrongly retire the first);
- `one_offs`: after "just for this commit skip the hooks" and the command that did it, the
  exceptional token (`--no-verify`) is nowhere in the raw memory: neither as a rule nor as a
  command that worked.

    .venv/bin/python -m benchmarks.statement_changes [--show-misses] [--baseline REV]

`--baseline REV` also measures the extractor of another commit (its lexicons, rules and offline
extractor loaded from git, `rule_recognition.baseline_extractor`) in the same run.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.rule_recognition import Extractor, baseline_extractor, preference_bullets
from codex_memories.extract.heuristic import extract_heuristically
from codex_memories.llm.base import ExtractionRequest
from codex_memories.prompts import RenderedPrompt
from codex_memories.typed_entries import normalise

CORPUS = Path(__file__).parent / "data" / "user_statements" / "heldout_changes.json"
SAID_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
_PROMPT = RenderedPrompt(text="unused", template_name="stage_one_input", sha256="0" * 64)
_ENVIRONMENT = "<environment_context>\n  <cwd>/src/service</cwd>\n</environment_context>"


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _extract(items: list[dict[str, Any]], extract: Extractor = extract_heuristically) -> str:
    request = ExtractionRequest(
        thread_id="benchmark",
        rollout_path="/sessions/benchmark.jsonl",
        cwd="/src/service",
        model="heuristic",
        system_prompt=_PROMPT,
        user_prompt=_PROMPT,
        transcript_items=[_message("user", _ENVIRONMENT), *items],
        session_time=SAID_AT,
    )
    return extract(request).raw_memory


def _served(raw_memory: str) -> list[str]:
    """The preference bullets a session would still get the next day, folded for comparison."""
    return [
        normalise(text)
        for text, meta in preference_bullets(raw_memory)
        if meta is None or meta.expires is None or meta.expires > SAID_AT.date()
    ]


def _quoted(piece: str, served: list[str]) -> bool:
    folded = normalise(piece)
    return any(folded in bullet for bullet in served)


def _session(turns: list[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for turn in turns:
        items += [_message("user", turn), _message("assistant", "OK.")]
    return items


def _one_off(turn: str, command: str) -> list[dict[str, Any]]:
    call = {
        "type": "function_call",
        "name": "shell",
        "call_id": "c1",
        "arguments": json.dumps({"command": ["bash", "-lc", command]}),
    }
    output = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": json.dumps({"output": "done", "metadata": {"exit_code": 0}}),
    }
    return [_message("user", turn), call, output, _message("assistant", "Done.")]


def measure(show_misses: bool = False, extract: Extractor = extract_heuristically) -> dict[str, Any]:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    # class -> language -> [cases, right]
    figures: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    misses: list[str] = []

    def count(kind: str, language: str, right: bool, what: str) -> None:
        figures[kind][language][0] += 1
        figures[kind][language][1] += int(right)
        if not right and show_misses:
            misses.append(f"{kind} [{language}] {what}")

    for case in corpus["sentences"]:
        served = _served(_extract([_message("user", case["text"])], extract))
        kept = _quoted(case["text"], served) or any(
            normalise(case["text"]) in bullet or bullet in normalise(case["text"]) for bullet in served
        )
        count(case["class"], case["language"], kept == (case["expect"] == "keep"), case["text"])
    for case in corpus["sessions"]:
        served = _served(_extract(_session(case["turns"]), extract))
        right = all(_quoted(piece, served) for piece in case["kept"]) and not any(
            _quoted(piece, served) for piece in case["dropped"]
        )
        count(case["class"], case["language"], right, " / ".join(case["turns"]))
    for case in corpus["one_offs"]:
        raw_memory = _extract(_one_off(case["turn"], case["command"]), extract)
        count("one_off", case["language"], case["token"] not in raw_memory, f"{case['turn']} -> {case['command']}")

    report: dict[str, Any] = {}
    for kind, by_language in figures.items():
        cases = sum(counts[0] for counts in by_language.values())
        right = sum(counts[1] for counts in by_language.values())
        report[kind] = {
            "right": f"{right}/{cases}",
            "by_language": {language: f"{r}/{c}" for language, (c, r) in sorted(by_language.items())},
        }
    return {"corpus": CORPUS.name, "classes": report, "misses": misses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--baseline", metavar="REV", help="also measure the offline extractor of this commit, in the same run")
    arguments = parser.parse_args()
    result = measure(arguments.show_misses)
    if not arguments.show_misses:
        result.pop("misses")
    if arguments.baseline:
        result["baseline"] = {"commit": arguments.baseline, "classes": measure(extract=baseline_extractor(arguments.baseline))["classes"]}
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
