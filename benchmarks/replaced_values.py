"""Replaced values (issue 34, item 3): how often does a session get a value the user replaced?

    .venv/bin/python -m benchmarks.replaced_values [--split tune|heldout|all] [--baseline-rev main] [--show-misses]

The corpus (`data/replaced_values/corpus.json`, written for this benchmark) holds replacements a
user makes: an older statement and a newer one on the same subject (a version, a port, a profile,
an alias, a region, a tool, a package manager), in nine languages, the newer one said in another
folder of the same repository or for every repository; and negatives, two statements on different
subjects that must both stay. Cases are split by phrasing family: `tune` families are what the slot
rules were developed on, `heldout` families were written before the first measurement. Report
`heldout`.

Measured, per split, with perfect (oracle) extraction, so only consolidation and reading count:
1. `contexts carrying a replaced value`: the offline pipeline (`raw_memories.md` from the two
   sessions, the heuristic consolidator, the SessionStart text of a session in the repository's
   first folder): sessions whose text holds the older statement. Also: sessions missing the newer
   statement, and sessions missing an unrelated rule said with the older one (a wrong drop).
2. The same through the read path alone, on a folder a model consolidation left both statements
   in (`MEMORY.md` written with both): the read-time guard.
3. Detection against a baseline measured in the same run: the conflict finder of `--baseline-rev`
   (loaded from git) with that revision's grouping (per working folder, preferences only), and
   the same finder given both statements in one folder (its best case), against this tree's.
   Negatives: pairs wrongly retired (a false replacement drops a fact the user still holds).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from codex_memories import paths
from codex_memories.consolidate.conflicts import DatedEntry, find_conflicts
from codex_memories.consolidate.heuristic import consolidate_heuristically
from codex_memories.extract.scope_tagging import tag_raw_memory
from codex_memories.memory_folder.inputs import rebuild_raw_memories
from codex_memories.read.injection import build_session_context
from codex_memories.state.records import Stage1Output
from codex_memories.typed_entries import normalise

CORPUS = Path(__file__).parent / "data" / "replaced_values" / "corpus.json"
ORIGIN = "git@github.com:acme/replaced.git"
PROJECT_KEY = "github.com/acme/replaced"
STANDING = "Never push directly to main."
NOW = datetime(2026, 12, 1, tzinfo=UTC)
OLD_TIME, NEW_TIME = 1_760_000_000, 1_763_200_000

Finder = Callable[[list[Any]], list[Any]]


def load_corpus(split: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    chosen = [case for case in corpus["cases"] if split == "all" or case["split"] == split]
    negatives = [case for case in corpus["negatives"] if split == "all" or case["split"] == split]
    return chosen, negatives


def holds(text: str, statement: str) -> bool:
    return normalise(statement) in normalise(text)


# -- 1. the offline pipeline -------------------------------------------------------------------------


def _front(cwd: str) -> str:
    return f"---\ndescription: work in {cwd}\ntask: work\ntask_group: work\ntask_outcome: success\ncwd: {cwd}\nkeywords: work\n---\n\n"


def _session(thread_id: str, cwd: str, statements: list[tuple[str, str]], updated: int) -> Stage1Output:
    blocks = "".join(
        f"### Task {number}: t{number}\ntask: t{number}\ntask_outcome: success\nscope: {scope}\n\nPreference signals:\n- \"{text}\"\n\n"
        for number, (text, scope) in enumerate(statements, start=1)
    )
    return Stage1Output(
        thread_id=thread_id, source_updated_at=updated,
        raw_memory=tag_raw_memory(_front(cwd) + blocks, [scope for _, scope in statements], PROJECT_KEY),
        rollout_summary="# s\n", rollout_slug=None, generated_at=updated, cwd=cwd, rollout_path=f"/r/{thread_id}.jsonl",
    )


def _checkout(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {ORIGIN}\n', encoding="utf-8")
    return path


def session_text_after_offline_pipeline(base: Path, first: str, second: str, scope: str) -> str:
    """The SessionStart text in the repository's first folder after both sessions went through
    oracle extraction and the heuristic consolidator."""
    first_folder, second_folder = _checkout(base / "src" / "app"), _checkout(base / "work" / "app-clone")
    root = base / "memories"
    root.mkdir()
    rebuild_raw_memories(root, [
        _session("new", str(second_folder / "api"), [(second, scope)], NEW_TIME),
        _session("old", str(first_folder), [(first, scope), (STANDING, "project")], OLD_TIME),
    ])
    consolidate_heuristically(root, now=NOW)
    context = build_session_context(root, cwd=str(first_folder), now=NOW)
    return context.text if context else ""


# -- 2. the read path on a folder that kept both ----------------------------------------------------------


def _group(title: str, cwd: str, day: str, bullets: list[str], project: str | None) -> str:
    applies = f"applies_to: cwd={cwd}; reuse_rule=use when working in {cwd}" + (f"; project={project}" if project else "")
    return "\n".join([
        f"# Task Group: {title}", f"scope: work in {cwd} (1 session)", applies, "",
        "## Task 1: work, outcome: success", "", "### rollout_summary_files",
        f"- rollout_summaries/{day}.md (updated_at={day}T10:00:00+00:00, thread_id=t-{day})", "",
        "## User preferences", *[f"- {bullet} [Task 1]" for bullet in bullets], "",
    ])


def session_text_from_a_folder_with_both(base: Path, first: str, second: str, scope: str) -> str:
    folder = _checkout(base / "src" / "app")
    root = base / "memories"
    root.mkdir()
    title, cwd, project = ("user-level (every project)", "any", None) if scope == "user" else (PROJECT_KEY, str(folder), PROJECT_KEY)
    (root / paths.MEMORY_FILE).write_text("\n".join([
        _group(title, cwd, "2026-10-01", [first, STANDING] if scope != "user" else [first], project),
        _group(title, cwd + ("" if scope == "user" else "-clone"), "2026-11-15", [second], project),
        *([_group(PROJECT_KEY, str(folder), "2026-10-01", [STANDING], PROJECT_KEY)] if scope == "user" else []),
    ]), encoding="utf-8")
    context = build_session_context(root, cwd=str(folder), now=NOW)
    return context.text if context else ""


def measure_sessions(cases: list[dict[str, str]], negatives: list[dict[str, str]], build: Callable[..., str]) -> dict[str, Any]:
    carrying, missing_newer, dropped_standing, misses = 0, 0, 0, []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="replaced-") as scratch:
            text = build(Path(scratch), case["older"], case["newer"], case["scope"])
        if holds(text, case["older"]):
            carrying += 1
            misses.append(f"carries replaced [{case['family']}/{case['lang']}]: {case['older']!r} -> {case['newer']!r}")
        if not holds(text, case["newer"]):
            missing_newer += 1
            misses.append(f"misses newer [{case['family']}/{case['lang']}]: {case['newer']!r}")
        if not holds(text, STANDING):
            dropped_standing += 1
    wrongly_dropped = 0
    for case in negatives:
        with tempfile.TemporaryDirectory(prefix="replaced-") as scratch:
            text = build(Path(scratch), case["first"], case["second"], "project")
        if not (holds(text, case["first"]) and holds(text, case["second"])):
            wrongly_dropped += 1
            misses.append(f"false replacement [{case['family']}/{case['lang']}]: {case['first']!r} / {case['second']!r}")
    return {
        "sessions": len(cases),
        "carrying_replaced": carrying,
        "missing_newer": missing_newer,
        "missing_unrelated_rule": dropped_standing,
        "negatives": len(negatives),
        "negatives_wrongly_dropped": wrongly_dropped,
        "misses": misses,
    }


# -- 3. detection against the baseline ------------------------------------------------------------------------


def load_baseline_finder(revision: str) -> Finder:
    source = subprocess.run(
        ["git", "show", f"{revision}:codex_memories/consolidate/conflicts.py"],
        check=True, capture_output=True, text=True, cwd=Path(__file__).parent.parent,
    ).stdout
    spec = importlib.util.spec_from_loader("baseline_conflicts", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    exec(compile(source, f"{revision}:conflicts.py", "exec"), module.__dict__)  # noqa: S102 - our own file at a git revision
    return _finder(module)


def _finder(module: ModuleType) -> Finder:
    def find(entries: list[tuple[str, str, int]]) -> list[Any]:
        return module.find_conflicts([module.DatedEntry(text, group, str(updated), datetime.fromtimestamp(updated, UTC).isoformat(), position)
                                      for position, (text, group, updated) in enumerate(entries)])
    return find


def this_tree_finder(entries: list[tuple[str, str, int]]) -> list[Any]:
    return find_conflicts([DatedEntry(text, group, str(updated), datetime.fromtimestamp(updated, UTC).isoformat(), position)
                           for position, (text, group, updated) in enumerate(entries)])


def measure_detection(cases: list[dict[str, str]], negatives: list[dict[str, str]], find: Finder, *, same_folder: bool) -> dict[str, int]:
    def group(folder: str, scope: str) -> str:
        # The baseline grouped by working folder; this tree by scope (one project key, or user).
        return "one" if same_folder else folder

    retired = sum(
        1 for case in cases
        if any(str(OLD_TIME) == conflict.loser.source for conflict in find([
            (case["older"], group("/src/app", case["scope"]), OLD_TIME),
            (case["newer"], group("/work/app-clone/api", case["scope"]), NEW_TIME),
        ]))
    )
    wrongly = sum(1 for case in negatives if find([(case["first"], "one", OLD_TIME), (case["second"], "one", NEW_TIME)]))
    return {"replacements": len(cases), "retired": retired, "negatives": len(negatives), "wrongly_retired": wrongly}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tune", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "all"), default="heldout")
    parser.add_argument("--baseline-rev", default="main", help="git revision whose conflict finder is the baseline")
    parser.add_argument("--show-misses", action="store_true")
    options = parser.parse_args(argv)
    cases, negatives = load_corpus(options.split)
    baseline = load_baseline_finder(options.baseline_rev)
    offline = measure_sessions(cases, negatives, session_text_after_offline_pipeline)
    read_guard = measure_sessions(cases, negatives, session_text_from_a_folder_with_both)
    detection = {
        f"baseline {options.baseline_rev}, across folders": measure_detection(cases, negatives, baseline, same_folder=False),
        f"baseline {options.baseline_rev}, one folder (its best case)": measure_detection(cases, negatives, baseline, same_folder=True),
        "this tree, one scope": measure_detection(cases, negatives, this_tree_finder, same_folder=True),
    }
    languages = sorted({case["lang"] for case in cases})
    families = sorted({case["family"] for case in cases})
    print(f"split {options.split}: {len(cases)} replacements ({len(families)} families, languages {', '.join(languages)}), {len(negatives)} negatives")
    for name, figures in (("offline pipeline", offline), ("read path, folder kept both", read_guard)):
        print(
            f"{name}: sessions carrying a replaced value {figures['carrying_replaced']}/{figures['sessions']}; "
            f"missing the newer statement {figures['missing_newer']}/{figures['sessions']}; "
            f"missing an unrelated rule {figures['missing_unrelated_rule']}/{figures['sessions']}; "
            f"negatives with a statement dropped {figures['negatives_wrongly_dropped']}/{figures['negatives']}"
        )
    for name, figures in detection.items():
        print(f"detection, {name}: retired {figures['retired']}/{figures['replacements']}; negatives wrongly retired {figures['wrongly_retired']}/{figures['negatives']}")
    if options.show_misses:
        for line in offline["misses"]:
            print("  offline:", line)
        for line in read_guard["misses"]:
            print("  read path:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
