"""End-to-end delivery (issue 27): does the right memory reach the model's request in a later Codex session?

    .venv/bin/python -m benchmarks.delivery [--corpus dev|heldout|PATH ...] [--versions 0.147.0 0.171.0]
                                            [--save-report]

A corpus (`benchmarks/data/delivery/*.json`, written for this benchmark by people who did not see
the code) is a month of one developer's Codex sessions over three repositories, with facts said the
way people say them (mid-session, after an unrelated first message, in Chinese, one superseding an
older one, two meant for every repository) and later prompts, each inside one repository, each
naming the facts it needs and the look-alike facts of other repositories (and the superseded one)
it must not get. `dev` is what this code was developed against; `heldout` was measured once at the
end.

Method, as a user would do it:
1. The repositories are real git checkouts (origin remotes as in the corpus) under a scratch home;
   the sessions become rollout files in a Codex home, dated so that the last day is yesterday.
2. `codex-memories run --provider heuristic --max-rollouts 128 --ignore-age-windows --local`
   (offline: no model), as a user with a month of history would run it once.
3. Per Codex version: a Codex home configured for a recording model server (Codex's own memory
   feature off), `codex-memories install` (with `--trust` when the command has it; otherwise
   `codex exec` gets `--dangerously-bypass-hook-trust`), then each prompt with plain `codex exec`
   in the prompt's checkout.
4. For each prompt's model request: a needed fact is delivered when its key is in a developer
   message our hooks added (SessionStart or UserPromptSubmit); a look-alike or superseded key there
   is leaked / stale; a message Codex cut ("truncated output") is a cut session. Tokens our hooks
   add per turn are counted with o200k_base.
5. Codex's own read path on the same folder, for comparison: a fresh Codex home per version with
   `[features] memories = true`, `use_memories = true`, `generate_memories = false` and no hooks,
   one `codex exec --ephemeral` (no startup task): its memory developer message, its tokens, and
   which needed / forbidden keys it holds (it ignores the project).
6. Every miss is attributed to the first stage that lost it: never extracted (not in
   `raw_memories.md` nor the rollout summaries), not consolidated (not in `MEMORY.md` nor
   `memory_summary.md`), cut (Codex cut the message), not delivered (in the memory, in neither hook
   message).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.support import machine_description, markdown_table, save_report, scratch_dir
from codex_memories import paths
from codex_memories.read.injection import HEADER as SESSION_START_HEADER
from codex_memories.read.prompt_context import BLOCK_OPEN as RECALL_BLOCK_OPEN
from codex_memories.tokens import count_tokens
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    codex_binary,
    developer_texts,
    run_codex_exec,
    text_reply,
    user_turn_requests,
)
from tests.support.openai_server import running_openai_server
from tests.support.rollout_factory import write_rollout

DATA_DIR = Path(__file__).resolve().parent / "data" / "delivery"
SECTION = "delivery"
CUT_MARKERS = ("truncated output (original token count", "Full hook output saved to")
CODEX_MEMORY_MARKER = "========= MEMORY_SUMMARY BEGINS ========="
HOOK_BYPASS = "--dangerously-bypass-hook-trust"
CLI = Path(sys.executable).with_name("codex-memories")


@dataclass
class Corpus:
    name: str
    data: dict[str, Any]

    @property
    def facts(self) -> dict[str, dict[str, Any]]:
        return {fact["id"]: fact for fact in self.data["facts"]}

    def key(self, fact_id: str) -> str:
        return self.facts[fact_id]["key"]


@dataclass
class World:
    corpus: Corpus
    root: Path
    user_home: Path
    pipeline_home: Path
    checkouts: dict[str, Path]

    @property
    def memory_root(self) -> Path:
        return self.pipeline_home / paths.MEMORIES_DIR

    @property
    def db_url(self) -> str:
        return paths.default_db_url(self.pipeline_home)


@dataclass
class PromptResult:
    prompt_id: str
    version: str
    delivered: list[str] = field(default_factory=list)
    missed: dict[str, str] = field(default_factory=dict)  # fact id -> stage that lost it
    leaked: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    cut: bool = False
    session_start_tokens: int = 0
    recall_tokens: int = 0


def load_corpus(name: str) -> Corpus:
    path = Path(name) if name.endswith(".json") else DATA_DIR / f"{name}.json"
    return Corpus(path.stem, json.loads(path.read_text(encoding="utf-8")))


def build_world(corpus: Corpus, root: Path) -> World:
    """Checkouts with their origins, and the month of sessions as rollouts in a Codex home."""
    user_home = root / "user"
    pipeline_home = root / "codex-home"
    checkouts: dict[str, Path] = {}
    for repository in corpus.data["repositories"]:
        checkout = user_home / repository["checkout"]
        checkout.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(checkout)], check=True)
        subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", repository["origin"]], check=True)
        checkouts[repository["name"]] = checkout
    last_day = max(session["day"] for session in corpus.data["sessions"])
    yesterday = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    origins = {repository["name"]: repository["origin"] for repository in corpus.data["repositories"]}
    for session in corpus.data["sessions"]:
        hour, minute = (int(part) for part in session.get("time", "09:00").split(":"))
        created = yesterday - timedelta(days=last_day - session["day"]) + timedelta(hours=hour, minutes=minute)
        turns = session["turns"]
        write_rollout(
            pipeline_home,
            created_at=created,
            cwd=str(checkouts[session["repo"]]),
            user_messages=[turn["user"] for turn in turns],
            assistant_messages=[turn.get("assistant") or "Done." for turn in turns],
            tool_calls_per_turn=[
                [(step["command"], step.get("output", ""), int(step.get("exit_code", 0))) for step in turn.get("steps", [])] for turn in turns
            ],
            repository_url=origins[session["repo"]],
        )
    return World(corpus, root, user_home, pipeline_home, checkouts)


def cli_env(world: World, codex_home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
    env.update(
        {
            "CODEX_HOME": str(codex_home or world.pipeline_home),
            "CODEX_MEMORIES_DB_URL": world.db_url,
            "CODEX_MEMORIES_MEMORY_ROOT": str(world.memory_root),
            "PREFECT_HOME": str(world.root / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        }
    )
    return env


def run_pipeline(world: World) -> str:
    result = subprocess.run(
        [str(CLI), "run", "--provider", "heuristic", "--max-rollouts", "128", "--ignore-age-windows", "--local", "--force"],
        env=cli_env(world), capture_output=True, text=True, timeout=1800, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"codex-memories run exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def cli_supports(command: str, option: str) -> bool:
    result = subprocess.run([str(CLI), command, "--help"], capture_output=True, text=True, check=False)
    return option in result.stdout


def install(world: World, home: CodexHome, trust: bool) -> None:
    args = [str(CLI), "install", "--codex-home", str(home.path), "--memory-root", str(world.memory_root), "--codex-binary", str(home.codex)]
    if trust:
        args.append("--trust")
    result = subprocess.run(args, env=cli_env(world, home.path), capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"codex-memories install exited {result.returncode}:\n{result.stdout}\n{result.stderr}")


def memory_text(world: World, *names: str) -> str:
    """The text of these files and folders of the memory root, lower-cased."""
    texts = []
    for name in names:
        path = world.memory_root / name
        if path.is_dir():
            texts += [item.read_text(encoding="utf-8", errors="replace") for item in sorted(path.rglob("*.md"))]
        elif path.is_file():
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts).lower()


def lost_at(world: World, key: str, cut: bool) -> str:
    key = key.lower()
    if key not in memory_text(world, paths.RAW_MEMORIES_FILE, paths.ROLLOUT_SUMMARIES_DIR):
        return "never extracted"
    if key not in memory_text(world, paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE, paths.SKILLS_DIR):
        return "not consolidated"
    if cut:
        return "cut by Codex"
    return "not delivered"


def measure_prompts(world: World, version: str, trust: bool) -> list[PromptResult]:
    corpus = world.corpus
    results: list[PromptResult] = []
    with running_openai_server(text_reply("ok")) as server:
        home = CodexHome.create(world.root / f"codex-{version}", server, binary=codex_binary(version))
        home.write_config(features={"memories": False})
        install(world, home, trust)
        extra = [] if trust else [HOOK_BYPASS]
        for prompt in corpus.data["prompts"]:
            before = len(user_turn_requests(server))
            completed = run_codex_exec(home, prompt["prompt"], cwd=world.checkouts[prompt["repo"]], server=server, extra_args=extra, timeout=180)
            if completed.returncode != 0:
                raise RuntimeError(f"codex exec ({version}, {prompt['id']}) exited {completed.returncode}: {completed.stderr[-2000:]}")
            requests = user_turn_requests(server)[before:]
            if len(requests) != 1:
                raise RuntimeError(f"{prompt['id']} on {version}: {len(requests)} user-turn requests, expected 1")
            ours = [text for text in developer_texts(requests[0]) if _is_ours(text)]
            session_start = [text for text in ours if not text.startswith(RECALL_BLOCK_OPEN)]
            recalled = [text for text in ours if text.startswith(RECALL_BLOCK_OPEN)]
            given = "\n".join(ours).lower()
            result = PromptResult(prompt["id"], version)
            result.cut = any(marker in text for text in ours for marker in CUT_MARKERS)
            result.session_start_tokens = sum(count_tokens(text) for text in session_start)
            result.recall_tokens = sum(count_tokens(text) for text in recalled)
            for fact_id in prompt["needs"]:
                if corpus.key(fact_id).lower() in given:
                    result.delivered.append(fact_id)
                else:
                    result.missed[fact_id] = lost_at(world, corpus.key(fact_id), result.cut)
            for fact_id in prompt.get("must_not_contain", []):
                if corpus.key(fact_id).lower() in given:
                    superseded = any(fact.get("supersedes") == fact_id for fact in corpus.data["facts"])
                    (result.stale if superseded else result.leaked).append(fact_id)
            results.append(result)
    return results


def _is_ours(text: str) -> bool:
    return text.startswith(SESSION_START_HEADER.split("\n", 1)[0]) or text.startswith(RECALL_BLOCK_OPEN) or any(
        marker in text for marker in CUT_MARKERS
    )


@dataclass
class CodexReadPath:
    version: str
    tokens: int
    delivered: int
    needed: int
    leaked: int


def measure_codex_read_path(world: World, version: str) -> CodexReadPath:
    """Codex's own memory injection on a copy of the same folder (no hooks, `--ephemeral`)."""
    corpus = world.corpus
    with running_openai_server(text_reply("ok")) as server:
        home = CodexHome.create(world.root / f"codex-own-{version}", server, binary=codex_binary(version))
        home.write_config(features={"memories": True}, memories={"generate_memories": False, "use_memories": True})
        shutil.copytree(world.memory_root, home.memories_dir, ignore=shutil.ignore_patterns(".git", paths.WORKSPACE_STATE_DIR))
        some_checkout = next(iter(world.checkouts.values()))
        completed = run_codex_exec(home, "hello", cwd=some_checkout, server=server, extra_args=["--ephemeral"], timeout=180)
        if completed.returncode != 0:
            raise RuntimeError(f"codex exec --ephemeral ({version}) exited {completed.returncode}: {completed.stderr[-2000:]}")
        [request] = user_turn_requests(server)
        memory = [text for text in developer_texts(request) if CODEX_MEMORY_MARKER in text]
    text = "\n".join(memory).lower()
    needed = [fact_id for prompt in corpus.data["prompts"] for fact_id in prompt["needs"]]
    forbidden = [fact_id for prompt in corpus.data["prompts"] for fact_id in prompt.get("must_not_contain", [])]
    return CodexReadPath(
        version,
        tokens=sum(count_tokens(item) for item in memory),
        delivered=sum(corpus.key(fact_id).lower() in text for fact_id in needed),
        needed=len(needed),
        leaked=sum(corpus.key(fact_id).lower() in text for fact_id in forbidden),
    )


def summarise(corpus: Corpus, version: str, results: list[PromptResult], own: CodexReadPath) -> list[str]:
    needed = sum(len(result.delivered) + len(result.missed) for result in results)
    delivered = sum(len(result.delivered) for result in results)
    session_start = [result.session_start_tokens for result in results]
    recall = [result.recall_tokens for result in results]
    return [
        corpus.name,
        version,
        f"{delivered}/{needed}",
        str(sum(len(result.leaked) for result in results)),
        str(sum(len(result.stale) for result in results)),
        f"{sum(result.cut for result in results)}/{len(results)}",
        f"{statistics.median(session_start):.0f} ({min(session_start)}-{max(session_start)})",
        f"{statistics.median(recall):.0f} ({min(recall)}-{max(recall)}), {sum(1 for value in recall if value)} of {len(recall)} turns",
        f"{own.tokens}; {own.delivered}/{own.needed} needed, {own.leaked} forbidden",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", nargs="+", default=["dev"])
    parser.add_argument("--versions", nargs="+", default=list(CODEX_VERSIONS))
    parser.add_argument("--save-report", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders (printed)")
    args = parser.parse_args()

    trust = cli_supports("install", "--trust")
    rows: list[list[str]] = []
    misses: list[list[str]] = []
    details: dict[str, Any] = {}
    for name in args.corpus:
        corpus = load_corpus(name)
        root = scratch_dir(f"delivery-{corpus.name}-")
        world = build_world(corpus, root)
        report = run_pipeline(world)
        print(report)
        for version in args.versions:
            results = measure_prompts(world, version, trust)
            own = measure_codex_read_path(world, version)
            rows.append(summarise(corpus, version, results, own))
            for result in results:
                for fact_id, stage in result.missed.items():
                    fact = corpus.facts[fact_id]
                    misses.append([corpus.name, version, result.prompt_id, fact_id, fact["kind"], fact["how_said"], stage])
                for fact_id in result.leaked + result.stale:
                    misses.append([corpus.name, version, result.prompt_id, fact_id, "(forbidden)", "leaked" if fact_id in result.leaked else "stale", "reached the request"])
            details[f"{corpus.name}/{version}"] = [result.__dict__ for result in results]
            print(markdown_table(HEADERS, rows[-1:]))
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    (scratch_dir("delivery-results-") / "results.json").write_text(json.dumps(details, indent=1), encoding="utf-8")
    table = markdown_table(HEADERS, rows)
    miss_table = markdown_table(["corpus", "Codex", "prompt", "fact", "kind", "how said", "lost at"], misses) if misses else "No misses, leaks or stale facts."
    print(table)
    print(miss_table)
    if args.save_report:
        trust_note = "`install --trust`, plain `codex exec`" if trust else f"`codex exec {HOOK_BYPASS}`"
        save_report(
            SECTION,
            "\n\n".join(
                [
                    "## End-to-end delivery (`delivery.py`)",
                    f"Command: `.venv/bin/python -m benchmarks.delivery --corpus {' '.join(args.corpus)} --save-report`; "
                    f"hooks run through {trust_note}. {machine_description()}.",
                    table,
                    "Tokens are o200k_base. \"Codex's own read path\" is Codex's memory developer message on a copy of "
                    "the same folder (memories feature on, no hooks, `codex exec --ephemeral`): its tokens, and how many of "
                    "the prompts' needed and forbidden keys it holds (it is the same text in every repository).",
                    miss_table,
                ]
            ),
        )


HEADERS = [
    "corpus",
    "Codex",
    "delivered",
    "leaked",
    "stale",
    "cut sessions",
    "SessionStart tokens per turn",
    "prompt recall tokens per turn",
    "Codex's own read path: tokens; keys",
]


if __name__ == "__main__":
    main()
