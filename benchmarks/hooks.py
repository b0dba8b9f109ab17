"""Wall time of one Codex hook call, per event, against `python -c pass` in the same run.

A hook is on the user's critical path: Codex waits for SessionStart before the first request and
for UserPromptSubmit before every turn. Each call is a fresh process, exactly as Codex spawns
it (stdin = the hook JSON Codex sends, stdout read to the end), for:

* the baseline, `<venv python> -c pass` (interpreter start-up, `site`, the editable finder);
* `$CODEX_HOME/codex-memories/codex-memories-hook <Event>`, the launcher `install` writes and
  hooks.json names (a `sh` script that runs `<venv python> -P -m codex_memories.read.hooks`);
* `codex-memories-hook <Event>`, the console script (`codex_memories.read.hooks:main`, no typer),
  which the launcher falls back to;
* `codex-memories hook <Event>`, the same code behind the typer CLI.

Each call gets only the event and, as from Codex, `CODEX_HOME` in its environment: the hook
resolves its settings (memory root, budgets, DB URL) itself, as the CLI does.

The Codex home holds a memory folder written the way phase 2 writes it: a summary that fits the
budget (`small`) or one that must be cut (`large`, 60 KB: the tokenizer's decoder is loaded),
a MEMORY.md of 400 lines, 50 rollout summaries, a rollout with one citation for Stop, whose
state DB holds the cited memory (SQLite, our default location), and the map of 1,000 recorded
folders phase 1 writes (the session's folder has no git config, so the hooks look it up there).

    .venv/bin/python -m benchmarks.hooks --repeats 15 --save-report
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.support import REPO_ROOT, machine_description, markdown_table, median, save_report, scratch_dir, spread
from codex_memories.codex.launcher import launcher_path

VENV_BIN = Path(sys.executable).parent
VARIANTS = ("launcher", "codex-memories-hook", "codex-memories hook")
CITED = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"


def build_home(root: Path, summary_kind: str) -> tuple[Path, Path]:
    from codex_memories import paths
    from codex_memories.codex.launcher import current_target, launcher_script
    from codex_memories.local_files import write_text_atomically
    from codex_memories.scopes import write_recorded_project_keys
    from codex_memories.state.store import MemoryStore
    from tests.support.memory_home import remember
    from tests.support.rollout_factory import write_rollout

    home = root / f"codex-home-{summary_kind}"
    memories = home / "memories"
    (memories / "rollout_summaries").mkdir(parents=True)
    scope = "\n".join(f"- note {index}: the atlas build uses make -j8 and tabs in Makefiles" for index in range(60))
    filler = "\n".join(f"- unrelated project {index} keeps its own conventions for logging and tests" for index in range(1000))
    summary = f"# Memory summary\n\n## What's in Memory\n\n### atlas\n{scope}\n"
    if summary_kind == "large":
        summary += f"\n### elsewhere\n{filler}\n"
    (memories / "memory_summary.md").write_text(summary, encoding="utf-8")
    (memories / "MEMORY.md").write_text(
        "\n".join(f"- handbook line {index}: deploy service {index} with ./ship.sh" for index in range(400)) + "\n- build atlas with make -j8\n",
        encoding="utf-8",
    )
    for index in range(50):
        (memories / "rollout_summaries" / f"2026-11-{index:02d}-session.md").write_text(
            f"thread_id: {index}\n\nThe user worked on service {index} and its tests.\n" * 5, encoding="utf-8"
        )
    store = MemoryStore.open(f"sqlite:///{home / 'codex-memories' / 'state.sqlite'}")
    remember(store, CITED)
    store.close()
    folders = {f"/work/project-{index}": f"github.com/acme/project-{index}" for index in range(999)}
    write_recorded_project_keys(paths.recorded_project_keys_path(home), {**folders, "/work/atlas": "github.com/acme/atlas"})
    write_text_atomically(launcher_path(home), launcher_script(current_target(home, [], pinned=False)), mode=0o755)  # no `install`: nothing pinned
    reply = f"As before.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-1|note=[x]\n</citation_entries>\n<rollout_ids>\n{CITED}\n</rollout_ids>\n</oai-mem-citation>"
    rollout = write_rollout(home, created_at=datetime(2026, 11, 30, tzinfo=UTC), user_messages=["build atlas"], assistant_messages=[reply])
    return home, rollout


def stdin_for(event: str, rollout: Path) -> str:
    base = {"session_id": "s", "transcript_path": str(rollout), "cwd": "/work/atlas", "hook_event_name": event, "model": "m", "permission_mode": "default"}
    if event == "SessionStart":
        base["source"] = "startup"
    if event == "UserPromptSubmit":
        base.update(turn_id="t", prompt="How do I build atlas with make?")
    if event == "Stop":
        base.update(turn_id="t", stop_hook_active=False, last_assistant_message="As before.")
    return json.dumps(base)


def time_call(argv: list[str], stdin: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    completed = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, cwd=REPO_ROOT, env=env)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {completed.returncode}: {completed.stderr[-2000:]}")
    return seconds, completed.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--save-report", action="store_true")
    args = parser.parse_args()

    work = scratch_dir("hooks-")
    homes = {kind: build_home(work, kind) for kind in ("small", "large")}
    cases: list[tuple[str, str, str]] = [
        ("SessionStart", "small", "summary fits the budget"),
        ("SessionStart", "large", "summary cut to the budget"),
        ("UserPromptSubmit", "small", "hybrid recall over MEMORY.md + 50 summaries (index up to date)"),
        ("Stop", "small", "hands the harvest to a detached process"),
        ("Stop --inline", "small", "harvests one rollout into SQLite itself"),
    ]
    samples: dict[tuple[str, str, str], list[float]] = {}
    outputs: dict[tuple[str, str, str], str] = {}
    python = str(VENV_BIN / "python")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("CODEX_", "OPENAI_"))}
    for _ in range(args.repeats):  # interleaved, so load changes hit every variant alike
        samples.setdefault(("baseline", "", ""), []).append(time_call([python, "-c", "pass"], "")[0])
        for event, kind, _why in cases:
            home, rollout = homes[kind]
            options = event.split()
            stdin = stdin_for(event.split()[0], rollout)
            for variant, argv in (
                ("launcher", [str(launcher_path(home)), *options]),
                ("codex-memories-hook", [str(VENV_BIN / "codex-memories-hook"), *options]),
                ("codex-memories hook", [str(VENV_BIN / "codex-memories"), "hook", *options]),
            ):
                seconds, out = time_call(argv, stdin, {**environment, "CODEX_HOME": str(home)})
                samples.setdefault((variant, event, kind), []).append(seconds)
                outputs[(variant, event, kind)] = out
    baseline = median(samples[("baseline", "", "")])
    rows = [["`python -c pass` (baseline)", "", spread(samples[("baseline", "", "")], 3, " s"), "1.0"]]
    for event, kind, why in cases:
        for variant in VARIANTS:
            values = samples[(variant, event, kind)]
            answer = outputs[(variant, event, kind)].strip()
            printed = "context" if "additionalContext" in answer else answer
            rows.append([f"`{variant} {event}`", f"{why} → `{printed[:20]}`", spread(values, 3, " s"), f"{median(values) / baseline:.1f}"])
    body = "\n".join(
        [
            "## Hook wall time (`hooks.py`)",
            "",
            "One hook call as Codex makes it (a fresh process, the hook JSON on stdin, `CODEX_HOME` in the",
            "environment, settings resolved by the hook), per event, against `python -c pass` with the same",
            "interpreter in the same run, calls interleaved. hooks.json names the launcher `install` writes",
            "(`$CODEX_HOME/codex-memories/codex-memories-hook`, a `sh` script running the recorded Python);",
            "`codex-memories-hook` is the console script it falls back to; `codex-memories hook` the typer CLI.",
            "",
            f"Command: `.venv/bin/python -m benchmarks.hooks --repeats {args.repeats} --save-report`",
            "",
            f"Machine: {machine_description()}",
            "",
            markdown_table(["command", "case → stdout", "wall time, median (range)", "× baseline"], rows),
            "",
            "What the numbers rest on: the launcher adds one `sh` start and two file tests before it `exec`s",
            "Python. The hook script imports only the standard library (settings: `tomllib` and the",
            "environment, `settings_sources`; the folder's project: its git config, else the recorded map), `read.injection`",
            "(prompts; it counts as Codex does, bytes / 4, no tokenizer) for SessionStart and the recall index (sqlite3, numpy, tokenizers, the packaged all-MiniLM-L6-v2 encoder, one forward pass of the prompt) for UserPromptSubmit",
            "(`tests/read/test_hooks.py` checks that no Prefect, SQLAlchemy, openai, typer, rich or pydantic",
            "module is loaded). `codex_memories.tokens` loads `bpe_openai`'s Rust binding without the",
            "package's `__init__`, whose tiktoken-compatible rank tables cost 0.6-1.2 s, and decodes cut",
            "pieces with the binding too. Stop hands the harvest (SQLAlchemy, our settings: about a second",
            "of imports) to a detached `codex-memories-hook Stop --inline` process, so the turn does not",
            "wait; `--inline` rows show what that process costs. The typer path (`codex-memories hook`)",
            "pays typer, rich and our settings on every call, which is why `install` writes the script.",
        ]
    )
    print(body)
    if args.save_report:
        save_report("hooks", body)


if __name__ == "__main__":
    main()
