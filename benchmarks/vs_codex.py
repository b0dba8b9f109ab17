"""Side by side: Codex 0.147's built-in memory pipeline and ours, on one corpus, one test server.

    .venv/bin/python -m benchmarks.vs_codex [--sessions 4] [--keep] [--no-report]

1. Corpus. Real interactive Codex sessions (the TUI, `source: cli`), one project each, against the
   recording test server on 127.0.0.1. Every planted secret format of `tests/support/secrets.py`
   is in the corpus once: typed by the user, printed by a scripted `exec_command` call (the tool
   output), or said by the scripted assistant. Harness canaries: developer instructions
   (`developer_instructions` in config.toml), an AGENTS.md block, a skill block (`$canary-skill`),
   a reasoning item (summary, content and encrypted content) and an event-only message. The last
   two are hand-added to the rollouts because the test server cannot make Codex write them.
2. The Codex home is copied, so both systems read the same rollouts.
3. Codex: `[features] memories = true`, `generate_memories = true`, `max_rollouts_per_startup =
   16`; the corpus threads' times in Codex's state DB (`state_5.sqlite`, `threads`) are set back two
   days, past the idle window. One `codex exec` session starts Codex's memory startup task (phase
   1 and the phase-2 consolidation agent); its own turn is held open until the memory requests
   stop, so the process lives long enough.
4. Ours: `codex-memories run --provider openai --base-url <same server> --ignore-age-windows
   --max-rollouts 16 --force` on the copy.

Both consolidation agents get the same answer, a plain message with no tool calls (the scripted
server is not a model), so phase 2 changes nothing in either system; what is compared is what each
pipeline sends to the model and what it writes. Request bodies are searched after JSON decoding
(every string leaf), so an escaped secret still counts. The prompts Codex sends are measured here,
never stored: nothing from the request log is written to disk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.support import save_report
from tests.support.codex_cli import (
    SHELL_TOOL_NAME,
    CodexHome,
    append_rollout_lines,
    codex_version,
    is_codex_stage1_request,
    reasoning_item,
    run_codex_exec,
    run_codex_tui,
    session_meta,
    thread_source,
    turn_metadata,
    write_skill,
)
from tests.support.openai_server import (
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    ToolCall,
    default_handler,
    is_stage1_request,
    running_openai_server,
    stage1_extraction_for,
)
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

REPORT_NAME = "vs_codex"

CANARIES: dict[str, list[str]] = {
    "developer message": ["DEVCANARY-7f3a developer instructions"],
    "AGENTS.md block": ["AGENTSCANARY-91c2 project rules"],
    "skill block": ["SKILLCANARY-5d0e body of the skill"],
    "reasoning (summary/content)": ["REASONINGCANARY-2b7c private chain of thought"],
    "reasoning (encrypted_content)": ["ENCRYPTEDCANARY-8e41"],
    "event-only message": ["EVENTCANARY-c6d9 background event"],
}
MAIN_TURN_PROMPT = "BENCHMARK-MAIN-TURN: say hello"
QUIET_SECONDS = 3.0  # no new memory request for this long: Codex's pipeline is done
MAIN_TURN_CAP_SECONDS = 120.0


# -- the corpus -------------------------------------------------------------------------------------


@dataclass
class PlannedSession:
    index: int
    user_marker: str
    typed: list[str] = field(default_factory=list)  # secret names the user types
    printed: list[str] = field(default_factory=list)  # secret names a tool prints
    said: list[str] = field(default_factory=list)  # secret names the assistant says

    @property
    def prompt(self) -> str:
        typed = " ".join(PLANTED_SECRETS[name] for name in self.typed)
        return f"Use $canary-skill. {self.user_marker}: fix the deploy script. {typed}".strip()

    @property
    def tool_marker(self) -> str:
        return f"TOOLOUTPUT-{self.index}: deploy notes"

    @property
    def notes_file(self) -> str:
        return f"notes-{self.index}.txt"

    @property
    def reply(self) -> str:
        said = " ".join(PLANTED_SECRETS[name] for name in self.said)
        return f"Deploy script fixed for {self.user_marker}. {said}".strip()


def plan_sessions(count: int) -> list[PlannedSession]:
    """Spread the secret formats over the sessions: single-line, quote-free ones can be typed or
    said; everything else (PEM, JSON, quoted) is printed by the tool."""
    sessions = [PlannedSession(index, f"USERWORDS-{index}") for index in range(count)]
    for position, name in enumerate(PLANTED_SECRETS):
        session = sessions[position % count]
        snippet = PLANTED_SECRETS[name]
        plain = "\n" not in snippet and not any(c in snippet for c in "'\"{}")
        if plain and not session.typed:
            session.typed.append(name)
        elif plain and not session.said:
            session.said.append(name)
        else:
            session.printed.append(name)
    return sessions


def corpus_handler(session: PlannedSession) -> Any:
    call_id = f"call_bench_{session.index}"

    def handler(request: RecordedRequest) -> ScriptedReply:
        outputs = {item.get("call_id") for item in (request.body or {}).get("input") or [] if item.get("type") == "function_call_output"}
        if call_id in outputs:
            return ScriptedReply.output_text(session.reply)
        return ScriptedReply.function_calls(ToolCall(SHELL_TOOL_NAME, json.dumps({"cmd": f"cat {session.notes_file}"}), call_id))

    return handler


def build_corpus(home: CodexHome, server: OpenAITestServer, root: Path, sessions: list[PlannedSession], router: Router) -> list[str]:
    write_skill(home, "canary-skill", CANARIES["skill block"][0], description="Prints the canary.")
    home.extra_top_level["developer_instructions"] = CANARIES["developer message"][0]
    home.write_config()
    thread_ids = []
    for session in sessions:
        project = (root / f"project-{session.index}").resolve()
        project.mkdir(parents=True, exist_ok=True)
        (project / "AGENTS.md").write_text(CANARIES["AGENTS.md block"][0] + "\n", encoding="utf-8")
        printed = "\n".join([session.tool_marker, *(PLANTED_SECRETS[name] for name in session.printed)])
        (project / session.notes_file).write_text(printed + "\n", encoding="utf-8")
        router.user_turn = corpus_handler(session)
        result = run_codex_tui(home, session.prompt, cwd=project, server=server, timeout=120)
        if result.returncode != 0 or result.rollout is None:
            raise RuntimeError(f"corpus session {session.index} failed:\n{result.pane}")
        # The test server cannot stream reasoning items, and a plain turn writes no event-only
        # text: add both where Codex writes them.
        append_rollout_lines(
            result.rollout,
            [reasoning_item(CANARIES["reasoning (summary/content)"][0], CANARIES["reasoning (summary/content)"][0], CANARIES["reasoning (encrypted_content)"][0])],
            before_last_assistant_message=True,
        )
        append_rollout_lines(result.rollout, [{"type": "event_msg", "payload": {"type": "background_event", "message": CANARIES["event-only message"][0]}}])
        thread_ids.append(session_meta(result.rollout)["id"])
    return thread_ids


# -- one server, every request recorded with its kind and time -------------------------------------------


@dataclass
class Logged:
    at: float
    kind: str  # codex_user, codex_stage1, codex_consolidation, codex_other, ours_stage1, ours_consolidation
    body_bytes: int
    strings: str  # every string leaf of the body, newline-joined (kept in memory only)


class Router:
    """Answers every request on the shared server and logs it."""

    def __init__(self) -> None:
        self.user_turn: Any = lambda request: ScriptedReply.output_text("Done.")
        self.log: list[Logged] = []
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        kind = classify(request)
        with self.lock:
            self.log.append(Logged(time.monotonic(), kind, len(json.dumps(request.body or {}, ensure_ascii=False).encode("utf-8")), "\n".join(_strings(request.body))))
        if kind == "codex_stage1":
            return ScriptedReply.output_text(json.dumps(stage1_extraction_for(request), sort_keys=True))
        if kind.startswith("ours"):
            return default_handler(request)  # stage-1 extraction, or a plain answer to our agent
        if kind != "codex_user":
            return ScriptedReply.output_text("Nothing to do.")  # Codex's consolidation agent
        if MAIN_TURN_PROMPT in request.input_text:
            self._wait_for_memory_requests_to_stop()
            return ScriptedReply.output_text("Hello.")
        return self.user_turn(request)

    def memory_requests(self) -> list[Logged]:
        with self.lock:
            return [entry for entry in self.log if entry.kind in ("codex_stage1", "codex_consolidation", "codex_other")]

    def _wait_for_memory_requests_to_stop(self) -> None:
        started = time.monotonic()
        while time.monotonic() - started < MAIN_TURN_CAP_SECONDS:
            seen = self.memory_requests()
            if seen and any(e.kind == "codex_consolidation" for e in seen) and time.monotonic() - seen[-1].at > QUIET_SECONDS:
                return
            time.sleep(0.2)


def classify(request: RecordedRequest) -> str:
    if not turn_metadata(request):
        return "ours_stage1" if is_stage1_request(request) else "ours_consolidation"
    if is_codex_stage1_request(request):
        return "codex_stage1"
    source = thread_source(request)
    if source in (None, "user"):
        return "codex_user"
    if source == "memory_consolidation":
        return "codex_consolidation"
    return "codex_other"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# -- measuring ---------------------------------------------------------------------------------------


def secret_fragments(name: str) -> list[str]:
    value = SECRET_VALUES[name]
    # A PEM body counts as leaked if any of its base64 lines got through.
    return [line for line in value.splitlines() if line.strip()] if "\n" in value else [value]


@dataclass
class SystemResult:
    name: str
    requests: list[Logged]
    wall_seconds: float
    outputs: str
    started: float = 0.0

    def leaked_secrets(self) -> list[str]:
        return [name for name in SECRET_VALUES if any(f in entry.strings for entry in self.requests for f in secret_fragments(name))]

    def leaked_canaries(self) -> list[str]:
        return [name for name, texts in CANARIES.items() if any(t in entry.strings for entry in self.requests for t in texts)]

    def largest(self, kind_suffix: str) -> int:
        return max((e.body_bytes for e in self.requests if e.kind.endswith(kind_suffix)), default=0)

    def calls_by_kind(self) -> str:
        counts: dict[str, int] = {}
        for entry in self.requests:
            counts[entry.kind] = counts.get(entry.kind, 0) + 1
        return ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))


def set_thread_times_back(home: CodexHome, thread_ids: list[str], seconds: int) -> int:
    """Move the corpus threads in Codex's state DB past the idle window (the triggers on
    `threads` keep the *_ms columns in step only when they are not written; we write both)."""
    [state_db] = sorted(home.path.glob("state_*.sqlite"))
    with sqlite3.connect(state_db) as connection:
        marks = ",".join("?" for _ in thread_ids)
        cursor = connection.execute(
            f"UPDATE threads SET updated_at = updated_at - ?, updated_at_ms = updated_at_ms - ?, "
            f"recency_at = recency_at - ?, recency_at_ms = recency_at_ms - ? WHERE id IN ({marks})",
            [seconds, seconds * 1000, seconds, seconds * 1000, *thread_ids],
        )
        return cursor.rowcount


def codex_outputs(home: CodexHome) -> str:
    [memories_db] = sorted(home.path.glob("memories_*.sqlite"))
    with sqlite3.connect(memories_db) as connection:
        outputs = connection.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0]
        phase2 = connection.execute("SELECT status, last_error FROM jobs WHERE kind = 'memory_consolidate_global'").fetchone()
    return f"{outputs} stage-1 outputs; {folder_listing(home.memories_dir)}; phase 2: {phase2[0] if phase2 else 'not run'}{f' ({phase2[1]})' if phase2 and phase2[1] else ''}"


def ours_outputs(home: CodexHome, db_url: str, cli_stdout: str) -> str:
    from codex_memories.state.store import MemoryStore

    with MemoryStore.open(db_url) as store:
        summary = store.status_summary()
    outcome = next((line.split(" (")[0].strip() for line in cli_stdout.splitlines() if line.startswith("phase 2:")), "")
    return f"{summary.stage1_outputs} stage-1 outputs; {folder_listing(home.memories_dir)}" + (f"; {outcome}" if outcome else "")


def folder_listing(folder: Path) -> str:
    if not folder.is_dir():
        return "no memory folder"
    names = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_dir():
            names.append(f"{path.name}/ ({sum(1 for p in path.rglob('*') if p.is_file())} files)")
        else:
            names.append(path.name)
    return ", ".join(names)


def sessions_seen(requests: list[Logged], markers: list[str]) -> int:
    return sum(1 for marker in markers if any(marker in entry.strings for entry in requests))


# -- the two runs -------------------------------------------------------------------------------------


def run_codex_pipeline(home: CodexHome, server: OpenAITestServer, router: Router, thread_ids: list[str], workdir: Path) -> SystemResult:
    set_thread_times_back(home, thread_ids, 2 * 86_400)
    home.extra_top_level.pop("developer_instructions", None)  # the corpus had it; this turn needs nothing
    home.write_config(features={"memories": True}, memories={"generate_memories": True, "use_memories": True, "max_rollouts_per_startup": 16})
    first = len(router.log)
    started = time.monotonic()
    result = run_codex_exec(home, MAIN_TURN_PROMPT, cwd=workdir, server=server, timeout=MAIN_TURN_CAP_SECONDS + 60)
    if result.returncode != 0:
        raise RuntimeError(f"codex exec failed:\n{result.stderr[-3000:]}")
    memory = [entry for entry in router.log[first:] if entry.kind in ("codex_stage1", "codex_consolidation", "codex_other")]
    # Wall time: from the process start to the last memory request it sent (the main turn was
    # held open on purpose, so the process's own exit time says nothing).
    wall = (memory[-1].at - started) if memory else float("nan")
    return SystemResult("Codex 0.147 built-in", memory, wall, codex_outputs(home), started)


def run_our_pipeline(home: CodexHome, server: OpenAITestServer, router: Router, scratch: Path) -> SystemResult:
    db_url = f"sqlite:///{scratch / 'ours-state.sqlite'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_", "PREFECT_"))}
    env.update(
        {
            "PREFECT_HOME": str(scratch / "prefect-home"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        }
    )
    command = [
        str(Path(sys.executable).parent / "codex-memories"),
        "run",
        "--codex-home", str(home.path),
        "--db", db_url,
        "--provider", "openai",
        "--base-url", server.base_url,
        "--max-rollouts", "16",
        "--ignore-age-windows",
        "--force",
    ]  # fmt: skip
    first = len(router.log)
    started = time.monotonic()
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    ours = [entry for entry in router.log[first:] if entry.kind.startswith("ours")]
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"codex-memories run failed ({completed.returncode}):\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}")
    result = SystemResult("codex-memories", ours, wall, ours_outputs(home, db_url, completed.stdout), started)
    result.outputs += f"; exit {completed.returncode}"
    return result


# -- report -------------------------------------------------------------------------------------------


def render(results: list[SystemResult], sessions: list[PlannedSession], seconds_building: float) -> str:
    header = "| | " + " | ".join(r.name for r in results) + " |"
    lines = [header, "|---|" + "---|" * len(results)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    total = len(SECRET_VALUES)
    row(f"secret formats that reached the model (of {total})", [f"{len(r.leaked_secrets())}" + (f": {', '.join(r.leaked_secrets())}" if r.leaked_secrets() else "") for r in results])
    row(f"harness canaries that reached the model (of {len(CANARIES)})", [f"{len(r.leaked_canaries())}" + (f": {', '.join(r.leaked_canaries())}" if r.leaked_canaries() else "") for r in results])
    # Controls: the conversation itself must get through, or "no secret leaked" means nothing.
    row(f"sessions whose user words reached the model (of {len(sessions)})", [str(sessions_seen(r.requests, [s.user_marker for s in sessions])) for r in results])
    row(f"sessions whose tool output reached the model (of {len(sessions)})", [str(sessions_seen(r.requests, [s.tool_marker for s in sessions])) for r in results])
    row("model calls", [f"{len(r.requests)} ({r.calls_by_kind()})" for r in results])
    row("largest request (bytes of JSON)", [f"{max((e.body_bytes for e in r.requests), default=0):,}" for r in results])
    row("largest stage-1 / consolidation request (bytes)", [f"{r.largest('stage1'):,} / {r.largest('consolidation'):,}" for r in results])
    row("all requests (bytes of JSON)", [f"{sum(e.body_bytes for e in r.requests):,}" for r in results])
    row("wall time (s)", [f"{r.wall_seconds:.1f}" for r in results])
    row("of which: start to first model call (s)", [f"{r.requests[0].at - r.started:.1f}" if r.requests else "-" for r in results])
    row("of which: first to last model call (s)", [f"{r.requests[-1].at - r.requests[0].at:.1f}" if r.requests else "-" for r in results])
    row("outputs produced", [r.outputs for r in results])
    return "\n".join(lines)


def notes(codex: SystemResult, ours: SystemResult) -> list[str]:
    held_back = [name for name in SECRET_VALUES if name not in codex.leaked_secrets()]
    return [
        "Reading it:",
        "",
        f"* Codex's phase 1 sends the rollout to the model with {len(codex.leaked_secrets())} of the {len(SECRET_VALUES)} secret "
        f"formats intact (it redacted {', '.join(held_back) or 'none'}); ours redacts before the request, so its count is "
        f"{len(ours.leaked_secrets())}. The control rows show both still sent every session's user words and tool output.",
        "* Neither sends developer instructions, AGENTS.md or skill blocks, reasoning or event-only text to the model.",
        f"* Largest stage-1 request: Codex {codex.largest('stage1'):,} bytes, ours {ours.largest('stage1'):,}; largest "
        f"consolidation request: Codex {codex.largest('consolidation'):,}, ours {ours.largest('consolidation'):,} (mostly "
        "each system's own instructions: the corpus sessions are short).",
        "* Wall time (a shared 2-core machine, other test runs active: expect wide swings) is dominated on our side by process start and the temporary Prefect server (the start-to-first-call "
        "row); the model-call window is the comparable part. Codex runs in-process, in the background of a session.",
        "* Phase 2 failed the same way in both (`failed_invalid_artifacts`): the scripted agent wrote no MEMORY.md. That is "
        "the test server's doing, not either pipeline's.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=4, help="interactive corpus sessions (2..20)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--no-report", action="store_true", help="print the table only, save no report")
    args = parser.parse_args()
    count = max(2, min(20, args.sessions))
    scratch = Path(tempfile.mkdtemp(prefix="vs-codex-"))
    sessions = plan_sessions(count)
    router = Router()
    try:
        with running_openai_server(router) as server:
            codex_home = CodexHome.create(scratch / "codex" / "home", server)
            started = time.monotonic()
            thread_ids = build_corpus(codex_home, server, scratch / "codex", sessions, router)
            seconds_building = time.monotonic() - started
            # Ours reads a copy of the same rollouts (its own config.toml says memories are on too).
            ours_home = CodexHome.create(scratch / "ours" / "home", server)
            shutil.copytree(codex_home.sessions_dir, ours_home.sessions_dir)
            ours_home.write_config(features={"memories": True}, memories={"generate_memories": True, "use_memories": True, "max_rollouts_per_startup": 16})
            workdir = (scratch / "main-turn").resolve()
            workdir.mkdir()
            codex = run_codex_pipeline(codex_home, server, router, thread_ids, workdir)
            ours = run_our_pipeline(ours_home, server, router, scratch)
        table = render([codex, ours], sessions, seconds_building)
        placed = {
            "typed by the user": sum(len(s.typed) for s in sessions),
            "printed by a tool": sum(len(s.printed) for s in sessions),
            "said by the assistant": sum(len(s.said) for s in sessions),
        }
        body = "\n".join(
            [
                "## Side by side with Codex's own memory pipeline (`vs_codex.py`)",
                "",
                f"Corpus: {count} interactive Codex {codex_version()} TUI sessions built in {seconds_building:.1f} s against the "
                f"recording test server; {len(SECRET_VALUES)} planted secret formats ({', '.join(f'{n} {k}' for k, n in placed.items())}) "
                f"and {len(CANARIES)} harness canaries in every session. Both consolidation agents got a no-tool-call answer. "
                "Wall time: Codex, from the `codex exec` start to its last memory request (the main turn is held open on "
                "purpose); ours, the whole `codex-memories run` process, Python and the temporary Prefect server included.",
                "",
                table,
                "",
                *notes(codex, ours),
                "",
                f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, `.venv/bin/python -m benchmarks.vs_codex --sessions {count}`.",
            ]
        )
        print(body)
        if not args.no_report:
            save_report(REPORT_NAME, body)
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
