"""End-to-end delivery (issues 27, 34): does the right memory reach the model's request in a later Codex session?

    .venv/bin/python -m benchmarks.delivery [--corpus dev|heldout|multilingual|PATH ...] [--versions 0.147.0 0.171.0]
                                            [--extraction heuristic oracle] [--save-report]

A corpus (`benchmarks/data/delivery/*.json`, written for this benchmark by people who did not see
the code) is a month of one developer's Codex sessions over three repositories, with facts said the
way people say them (mid-session, after an unrelated first message, in Chinese, one superseding an
older one, two meant for every repository) and later prompts, each inside one repository, each
naming the facts it needs and the look-alike facts of other repositories (and the superseded one)
it must not get. `dev` is what this code was developed against; `heldout` was measured once at the
end. `multilingual` (issue 34) is three repositories with sub-folders, 40 needed facts in five
languages (en, zh, es, de, ja) and five kinds (rule, convention, decision, environment fact,
preference), each kind said in eight phrasing families, every fact tagged with its `family` and
that family's `split` (tune / heldout: by family, never at random) and a `statement_key`, a
distinctive piece of the user's own words other than the key; later values replacing earlier ones
(across two folders of one repository, for every repository, a correction in a later turn);
one-offs; quiet prompts (`"quiet": true`, nothing applies).

Method, as a user would do it:
1. The repositories are real git checkouts (origin remotes as in the corpus) under a scratch home;
   the sessions become rollout files in a Codex home, dated so that the last day is yesterday.
2. `codex-memories run --provider heuristic --max-rollouts 128 --ignore-age-windows --local`
   (offline: no model), as a user with a month of history would run it once. With
   `--extraction oracle`, phase 1 runs instead with the `openai` provider against the test model
   server scripted to answer each session with a perfect extraction (the facts said in it, in the
   user's words, typed and scoped; nothing for a one-off or an ordinary session), then phase 2
   with the offline consolidator: every miss left is consolidation's or delivery's.
3. Per Codex version: a Codex home configured for a recording model server (Codex's own memory
   feature off), `codex-memories install` (with `--trust` when the command has it; otherwise
   `codex exec` gets `--dangerously-bypass-hook-trust`), then each prompt with plain `codex exec`
   in the prompt's checkout.
4. For each prompt's model request: a needed fact is delivered when its key is in a developer
   message our hooks added (SessionStart or UserPromptSubmit), delivered as the user's statement
   when its key and its `statement_key` are in one such message (otherwise the value only rode
   inside something else, typically a remembered command line); a look-alike or superseded key
   there is leaked / stale; a message Codex cut ("truncated output") is a cut session. Tokens our
   hooks add per turn are counted with o200k_base. Over every request, whatever the prompt needs:
   a replaced value (a superseded fact of the prompt's repository or of every repository) is a
   request carrying a replaced value; a one-off's key in its repository is a one-off served as a
   rule; any fact's key in a quiet prompt's request is a quiet prompt that was not quiet.
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
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
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
from tests.support.openai_server import RecordedRequest, ScriptedReply, is_stage1_request, running_openai_server
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

    def applies(self, fact_id: str, repo: str) -> bool:
        """A fact is meant for a prompt in its own repository, or in every one (`scope: user`)."""
        return self.facts[fact_id]["scope"] in ("user", repo)

    @property
    def replaced(self) -> set[str]:
        """The facts a later one replaced (another session, or a correction later in the same one)."""
        return {fact["supersedes"] for fact in self.data["facts"] if fact.get("supersedes")}

    @property
    def one_offs(self) -> set[str]:
        return {fact["id"] for fact in self.data["facts"] if fact["kind"] == "one-off"}

    @property
    def has_statement_keys(self) -> bool:
        return all("statement_key" in fact for fact in self.data["facts"])


@dataclass
class World:
    corpus: Corpus
    root: Path
    user_home: Path
    pipeline_home: Path
    checkouts: dict[str, Path]
    sessions_by_rollout: dict[str, dict[str, Any]] = field(default_factory=dict)  # rollout file name -> session

    def cwd(self, repo: str, folder: str | None) -> Path:
        return self.checkouts[repo] / folder if folder else self.checkouts[repo]

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
    as_statement: list[str] = field(default_factory=list)  # key and statement_key in one hook message
    replaced: list[str] = field(default_factory=list)  # replaced facts of this scope in the request, needed or not
    one_offs: list[str] = field(default_factory=list)  # one-offs of this scope in the request
    one_offs_as_statement: list[str] = field(default_factory=list)  # ... in the user's words, not only a remembered command
    quiet: bool = False
    quiet_not_quiet: list[str] = field(default_factory=list)  # facts in a quiet prompt's request
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
        for folder in repository.get("folders", []):
            (checkout / folder).mkdir(parents=True)
        subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", repository["origin"]], check=True)
        checkouts[repository["name"]] = checkout
    last_day = max(session["day"] for session in corpus.data["sessions"])
    yesterday = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    origins = {repository["name"]: repository["origin"] for repository in corpus.data["repositories"]}
    world = World(corpus, root, user_home, pipeline_home, checkouts)
    for session in corpus.data["sessions"]:
        hour, minute = (int(part) for part in session.get("time", "09:00").split(":"))
        created = yesterday - timedelta(days=last_day - session["day"]) + timedelta(hours=hour, minutes=minute)
        turns = session["turns"]
        rollout = write_rollout(
            pipeline_home,
            created_at=created,
            cwd=str(world.cwd(session["repo"], session.get("folder"))),
            user_messages=[turn["user"] for turn in turns],
            assistant_messages=[turn.get("assistant") or "Done." for turn in turns],
            tool_calls_per_turn=[
                [(step["command"], step.get("output", ""), int(step.get("exit_code", 0))) for step in turn.get("steps", [])] for turn in turns
            ],
            repository_url=origins[session["repo"]],
        )
        world.sessions_by_rollout[rollout.name] = session
    return world


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


def run_pipeline(world: World, extraction: str = "heuristic") -> str:
    """The offline run a user would do; or (`oracle`) phase 1 by a perfect model, phase 2 offline."""
    if extraction == "heuristic":
        return _cli(world, "run", "--provider", "heuristic", "--max-rollouts", "128", "--ignore-age-windows", "--local", "--force")
    with running_openai_server(oracle_handler(world)) as server:
        first = _cli(
            world, "phase1", "--provider", "openai", "--base-url", server.base_url, "--max-rollouts", "128", "--ignore-age-windows",
            extra_env={"OPENAI_API_KEY": "test-key"},
        )
        errors = list(server.handler_errors)
        if errors:
            raise RuntimeError(f"the oracle server failed on a request: {errors[0]!r}")
    return first + _cli(world, "phase2", "--provider", "heuristic", "--force")


def _cli(world: World, *args: str, extra_env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(CLI), *args], env={**cli_env(world), **(extra_env or {})}, capture_output=True, text=True, timeout=1800, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"codex-memories {args[0]} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result.stdout


ORACLE_ENTRY_TYPE = {"rule": "constraint", "convention": "constraint", "decision": "constraint", "preference": "preference", "environment": "fact"}
_ROLLOUT_PATH_LINE = re.compile(r"^\s*-?\s*rollout_path:\s*(.*?)\s*$", re.MULTILINE)


def oracle_extraction(world: World, session: dict[str, Any]) -> dict[str, Any]:
    """What a perfect extractor answers for one session: each durable fact said in it, as the user said
    it (the last turn that states it, so a correction wins), typed, scoped `user` or `project`; a
    one-off, a first statement corrected later and an ordinary session give nothing."""
    corpus = world.corpus
    said = [
        corpus.facts[fact_id] for fact_id in session["says"]
        if fact_id not in corpus.one_offs and not any(fact.get("supersedes") == fact_id and fact["id"] in session["says"] for fact in corpus.data["facts"])
    ]
    if not said:
        return {"rollout_summary": "", "rollout_slug": "", "raw_memory": "", "memory_entries": [], "task_scopes": []}
    cwd = str(world.cwd(session["repo"], session.get("folder")))
    statements = {fact["id"]: _statement_of(session, fact) for fact in said}
    blocks, scopes, entries = [], [], []
    for scope in ("project", "user"):
        facts = [fact for fact in said if (fact["scope"] == "user") == (scope == "user")]
        if not facts:
            continue
        number = len(blocks) + 1
        rules = [f"- {statements[fact['id']]}" for fact in facts if fact["kind"] != "environment"]
        knowledge = [f"- {statements[fact['id']]}" for fact in facts if fact["kind"] == "environment"]
        block = [f"### Task {number}: what the user said about working in {session['repo']}", f"task: work in {session['repo']}",
                 f"task_group: {session['repo']}", "task_outcome: success", ""]
        if rules:
            block += ["Preference signals:", *rules, ""]
        if knowledge:
            block += ["Reusable knowledge:", *knowledge, ""]
        blocks.append("\n".join(block))
        scopes.append(scope)
        entries += [
            {"text": statements[fact["id"]], "type": ORACLE_ENTRY_TYPE[fact["kind"]], "weight": 0.9, "reason": "the user said so", "expires": None}
            for fact in facts
        ]
    front = ["---", f"description: what the user said while working in {session['repo']}", f"task: work in {session['repo']}",
             f"task_group: {session['repo']}", "task_outcome: success", f"cwd: {cwd}", f"keywords: {session['repo']}", "---", ""]
    summary = "\n".join([f"# Work in {session['repo']}", "", f"Rollout context: cwd {cwd}", "", *[f"- {text}" for text in statements.values()], ""])
    return {
        "rollout_summary": summary, "rollout_slug": f"{session['repo']}-{session['id'].lower()}",
        "raw_memory": "\n".join(front) + "\n\n".join(blocks) + "\n", "memory_entries": entries, "task_scopes": scopes,
    }


def _statement_of(session: dict[str, Any], fact: dict[str, Any]) -> str:
    """The last user turn of the session that holds the fact's key, in the user's words."""
    turns = [turn["user"] for turn in session["turns"] if fact["key"].lower() in turn["user"].lower()]
    if not turns:
        raise ValueError(f"{session['id']} says {fact['id']} but no user turn holds its key {fact['key']!r}")
    return " ".join(turns[-1].split())


def oracle_handler(world: World) -> Callable[[RecordedRequest], ScriptedReply]:
    def handle(request: RecordedRequest) -> ScriptedReply:
        if not is_stage1_request(request):
            return ScriptedReply.http_error(400, "the oracle server answers stage-1 extractions only")
        match = _ROLLOUT_PATH_LINE.search(request.input_text)
        session = world.sessions_by_rollout.get(Path(match.group(1)).name) if match else None
        if session is None:
            raise LookupError(f"a stage-1 request for a rollout this corpus did not write: {match and match.group(1)}")
        return ScriptedReply.output_text(json.dumps(oracle_extraction(world, session), ensure_ascii=False))

    return handle


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
            completed = run_codex_exec(
                home, prompt["prompt"], cwd=world.cwd(prompt["repo"], prompt.get("folder")), server=server, extra_args=extra, timeout=180
            )
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
            lowered = [text.lower() for text in ours]
            for fact_id in prompt["needs"]:
                if corpus.key(fact_id).lower() in given:
                    result.delivered.append(fact_id)
                    if _as_statement(corpus.facts[fact_id], lowered):
                        result.as_statement.append(fact_id)
                else:
                    result.missed[fact_id] = lost_at(world, corpus.key(fact_id), result.cut)
            in_scope = [fact_id for fact_id in corpus.facts if corpus.applies(fact_id, prompt["repo"])]
            result.replaced = [fact_id for fact_id in in_scope if fact_id in corpus.replaced and corpus.key(fact_id).lower() in given]
            result.one_offs = [fact_id for fact_id in in_scope if fact_id in corpus.one_offs and corpus.key(fact_id).lower() in given]
            result.one_offs_as_statement = [fact_id for fact_id in result.one_offs if _as_statement(corpus.facts[fact_id], lowered)]
            if prompt.get("quiet"):
                result.quiet = True
                result.quiet_not_quiet = [fact_id for fact_id in corpus.facts if corpus.key(fact_id).lower() in given]
            for fact_id in prompt.get("must_not_contain", []):
                if corpus.key(fact_id).lower() in given:
                    superseded = any(fact.get("supersedes") == fact_id for fact in corpus.data["facts"])
                    (result.stale if superseded else result.leaked).append(fact_id)
            results.append(result)
    return results


def _as_statement(fact: dict[str, Any], messages: list[str]) -> bool:
    """The user's statement, not a value riding inside a command line: key and statement key in one message."""
    statement_key = fact.get("statement_key")
    if statement_key is None:
        return False
    return any(fact["key"].lower() in text and statement_key.lower() in text for text in messages)


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


def summarise(corpus: Corpus, extraction: str, version: str, results: list[PromptResult], own: CodexReadPath | None) -> list[str]:
    needed = sum(len(result.delivered) + len(result.missed) for result in results)
    delivered = sum(len(result.delivered) for result in results)
    as_statement = sum(len(result.as_statement) for result in results)
    session_start = [result.session_start_tokens for result in results]
    recall = [result.recall_tokens for result in results]
    quiet = [result for result in results if result.quiet]
    return [
        corpus.name,
        extraction,
        version,
        f"{delivered}/{needed}",
        f"{as_statement}/{needed}; {delivered - as_statement} only inside other text" if corpus.has_statement_keys else "n/a",
        str(sum(len(result.leaked) for result in results)),
        str(sum(len(result.stale) for result in results)),
        f"{sum(bool(result.replaced) for result in results)}/{len(results)}",
        f"{sum(bool(result.one_offs) for result in results)}/{len(results)}; "
        f"{sum(bool(result.one_offs_as_statement) for result in results)} as the user's statement",
        f"{sum(bool(result.quiet_not_quiet) for result in quiet)}/{len(quiet)}" if quiet else "n/a",
        f"{sum(result.cut for result in results)}/{len(results)}",
        f"{statistics.median(session_start):.0f} ({min(session_start)}-{max(session_start)})",
        f"{statistics.median(recall):.0f} ({min(recall)}-{max(recall)}), {sum(1 for value in recall if value)} of {len(recall)} turns",
        f"{own.tokens}; {own.delivered}/{own.needed} needed, {own.leaked} forbidden" if own else "not measured",
    ]


BREAKDOWNS = ("language", "kind", "split")


def breakdown(corpus: Corpus, extraction: str, version: str, results: list[PromptResult]) -> list[list[str]]:
    """Needed facts delivered as the user's statement (and at all), per language, kind and family split."""
    rows = []
    for attribute in BREAKDOWNS:
        groups: dict[str, list[int]] = {}
        for result in results:
            for fact_id in [*result.delivered, *result.missed]:
                value = str(corpus.facts[fact_id].get(attribute, "-"))
                counts = groups.setdefault(value, [0, 0, 0])
                counts[0] += fact_id in result.as_statement
                counts[1] += fact_id in result.delivered
                counts[2] += 1
        for value, (statement, delivered, needed) in sorted(groups.items()):
            rows.append([corpus.name, extraction, version, attribute, value, f"{statement}/{needed}", f"{delivered}/{needed}"])
    return rows


def problems(corpus: Corpus, extraction: str, version: str, results: list[PromptResult]) -> list[list[str]]:
    """One row per miss (with the stage that lost it), value only inside other text, leak, replaced value, one-off."""
    rows = []
    for result in results:
        head = [corpus.name, extraction, version, result.prompt_id]
        for fact_id, stage in result.missed.items():
            rows.append([*head, fact_id, _describe(corpus, fact_id), stage])
        for fact_id in result.delivered:
            if corpus.has_statement_keys and fact_id not in result.as_statement:
                rows.append([*head, fact_id, _describe(corpus, fact_id), "delivered only inside other text (a command line)"])
        for fact_id in result.leaked:
            rows.append([*head, fact_id, "(another repository's)", "leaked into the request"])
        for fact_id in sorted(set(result.replaced) | set(result.stale)):
            rows.append([*head, fact_id, _describe(corpus, fact_id), "replaced value in the request"])
        for fact_id in result.one_offs:
            how = "in the user's words" if fact_id in result.one_offs_as_statement else "inside a remembered command line"
            rows.append([*head, fact_id, _describe(corpus, fact_id), f"one-off served as a rule ({how})"])
        for fact_id in result.quiet_not_quiet:
            rows.append([*head, fact_id, _describe(corpus, fact_id), "served on a quiet prompt"])
    return rows


def _describe(corpus: Corpus, fact_id: str) -> str:
    fact = corpus.facts[fact_id]
    parts = [fact["kind"], fact.get("family"), fact.get("language"), fact.get("split")]
    return ", ".join(part for part in parts if part) if fact.get("family") else f"{fact['kind']}, {fact['how_said']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", nargs="+", default=["dev"])
    parser.add_argument("--versions", nargs="+", default=list(CODEX_VERSIONS))
    parser.add_argument(
        "--extraction", nargs="+", choices=["heuristic", "oracle"], default=["heuristic"],
        help="heuristic: the offline run a user does; oracle: phase 1 by a perfect model, phase 2 offline",
    )
    parser.add_argument("--no-codex-read-path", action="store_true", help="skip Codex's own read path (step 5)")
    parser.add_argument("--save-report", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders (printed)")
    args = parser.parse_args()

    trust = cli_supports("install", "--trust")
    rows: list[list[str]] = []
    split_rows: list[list[str]] = []
    problem_rows: list[list[str]] = []
    details: dict[str, Any] = {}
    for name in args.corpus:
        corpus = load_corpus(name)
        for extraction in args.extraction:
            root = scratch_dir(f"delivery-{corpus.name}-{extraction}-")
            world = build_world(corpus, root)
            print(run_pipeline(world, extraction))
            for version in args.versions:
                results = measure_prompts(world, version, trust)
                own = None if args.no_codex_read_path else measure_codex_read_path(world, version)
                rows.append(summarise(corpus, extraction, version, results, own))
                split_rows += breakdown(corpus, extraction, version, results)
                problem_rows += problems(corpus, extraction, version, results)
                details[f"{corpus.name}/{extraction}/{version}"] = [result.__dict__ for result in results]
                print(markdown_table(HEADERS, rows[-1:]))
            if args.keep:
                print(f"kept: {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
    results_path = scratch_dir("delivery-results-") / "results.json"
    results_path.write_text(json.dumps(details, indent=1, ensure_ascii=False), encoding="utf-8")
    table = markdown_table(HEADERS, rows)
    split_table = markdown_table(["corpus", "extraction", "Codex", "by", "value", "as the user's statement", "delivered"], split_rows)
    problem_table = (
        markdown_table(["corpus", "extraction", "Codex", "prompt", "fact", "what", "what happened"], problem_rows)
        if problem_rows else "No misses, leaks, replaced values or one-offs."
    )
    print(table)
    print(split_table)
    print(problem_table)
    print(f"per-prompt results: {results_path}")
    if args.save_report:
        trust_note = "`install --trust`, plain `codex exec`" if trust else f"`codex exec {HOOK_BYPASS}`"
        save_report(
            SECTION,
            "\n\n".join(
                [
                    "## End-to-end delivery (`delivery.py`)",
                    f"Command: `.venv/bin/python -m benchmarks.delivery --corpus {' '.join(args.corpus)} "
                    f"--extraction {' '.join(args.extraction)} --versions {' '.join(args.versions)} --save-report`; "
                    f"hooks run through {trust_note}. {machine_description()}.",
                    table,
                    "Tokens are o200k_base. \"Codex's own read path\" is Codex's memory developer message on a copy of "
                    "the same folder (memories feature on, no hooks, `codex exec --ephemeral`): its tokens, and how many of "
                    "the prompts' needed and forbidden keys it holds (it is the same text in every repository).",
                    split_table,
                    problem_table,
                ]
            ),
        )


HEADERS = [
    "corpus",
    "extraction",
    "Codex",
    "delivered",
    "as the user's statement",
    "leaked",
    "stale",
    "requests carrying a replaced value",
    "one-offs served as rules (requests)",
    "quiet prompts served a fact",
    "cut sessions",
    "SessionStart tokens per turn",
    "prompt recall tokens per turn",
    "Codex's own read path: tokens; keys",
]


if __name__ == "__main__":
    main()
