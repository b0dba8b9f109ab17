"""Scripted Codex gets our memory: `install --trust` writes Codex's own trust records for our
hooks, so plain `codex exec` (no `--dangerously-bypass-hook-trust`) runs them; `uninstall` takes
them back; a SessionStart budget above Codex's hook limit reaches the model whole.

On both pinned versions (0.147.0 from PyPI, 0.171.0 from npm), asserting on what the model test
server receives, on `codex app-server`'s `hooks/list` (Codex's own view of each hook's hash and
trust) and on the files left behind. A last test pins what `tokens` states about Codex's
cut of hook context.
"""

from __future__ import annotations

import json
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from codex_memories.codex.hooks_file import hooks_path
from codex_memories.codex.launcher import launcher_path
from codex_memories.codex.trust import (
    TrustEntry,
    our_trust_entries,
    read_config,
    render_config,
    set_trust,
    trust_hash,
    trust_key,
)
from codex_memories.read.hook_log import HookOptions, hook_log_path
from codex_memories.read.hooks import HOOK_EVENTS, handle_hook
from codex_memories.read.index import build_index
from codex_memories.tokens import (
    CODEX_HOOK_CONTEXT_LIMIT_TOKENS,
    codex_token_count,
    fits_codex_hook_limit,
    session_start_context_limit,
)
from tests.codex.test_real_codex_hooks import codex_memories, input_messages, wait_for_log
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    codex_hooks_list,
    run_codex_exec,
    text_reply,
    user_turn_requests,
)
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

FACT = "PELICAN-7731"
QUESTION = "How do I build atlas with make here?"
SUMMARY = (
    "# Memory summary\n\n## What's in Memory\n\n### user-level (every project)\n"
    f"- the atlas build uses make -j8 and keeps tabs in Makefiles ({FACT})\n"
)
HANDBOOK = f"# Task Group: atlas build\n- build atlas with make -j8 and keep tabs in Makefiles ({FACT})\n"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith(("CODEX_MEMORIES_", "OPENAI_"))] + ["CODEX_HOME"]:
        monkeypatch.delenv(name, raising=False)


def write_memory(home: CodexHome, summary: str = SUMMARY) -> None:
    home.write_memory_summary(summary)
    (home.memories_dir / "MEMORY.md").write_text(HANDBOOK, encoding="utf-8")
    build_index(home.memories_dir)  # what phase 2 leaves: the prompt hook only starts a build


def session_start_text(home: CodexHome, cwd: Path, budget_tokens: int) -> str:
    """What our SessionStart hook prints for this folder and budget, computed in this process."""
    options = HookOptions(home.path, home.memories_dir, summary_budget_tokens=budget_tokens)
    result = handle_hook("SessionStart", json.dumps({"cwd": str(cwd), "source": "startup"}), options)
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def developer_messages(server: OpenAITestServer) -> list[str]:
    [request] = user_turn_requests(server)
    return [text for role, text in input_messages(request) if role == "developer"]


def exec_plain(home: CodexHome, server: OpenAITestServer, cwd: Path) -> list[str]:
    """One plain `codex exec` turn (hooks run only if trusted); the developer messages it sent."""
    server.set_handler(text_reply("Use make -j8."))
    server.clear_requests()
    result = run_codex_exec(home, QUESTION, cwd=cwd, server=server)
    assert result.returncode == 0, result.stderr[-3000:]
    return developer_messages(server)


def our_hooks_as_codex_sees_them(home: CodexHome, cwd: Path) -> dict[str, dict]:
    return {hook["key"]: hook for hook in codex_hooks_list(home, cwd) if str(launcher_path(home.path)) in hook["command"]}


def trust_line(home: CodexHome) -> str:
    doctor = codex_memories(home, "doctor")
    [line] = [line for line in doctor.stdout.splitlines() if "hook trust" in line]
    return line


@versions
def test_install_trust_lets_plain_codex_exec_run_our_hooks_and_uninstall_takes_it_back(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, clean_env: None
) -> None:
    write_memory(codex_home)

    plain = codex_memories(codex_home, "install")
    assert plain.returncode == 0, plain.stderr
    assert "codex-memories install --trust" in plain.stdout and "skips these hooks until they are trusted" in plain.stdout
    assert tomllib.loads(codex_home.config_path.read_text(encoding="utf-8")).get("hooks") is None  # config.toml untouched by us
    assert trust_line(codex_home).startswith("[FAIL] hook trust: SessionStart: not trusted")
    assert FACT not in "".join(exec_plain(codex_home, codex_server, codex_workdir))  # Codex skipped them, silently
    assert not hook_log_path(codex_home.path).exists()

    # (codex exec recorded its own `[projects."<cwd>"]` entry meanwhile.)
    config_before = tomllib.loads(codex_home.config_path.read_text(encoding="utf-8"))
    trusted = codex_memories(codex_home, "install", "--trust")
    assert trusted.returncode == 0, trusted.stderr
    assert "record Codex's trust for our hooks" in trusted.stdout
    assert trust_line(codex_home).startswith("[ok] hook trust: SessionStart: trusted; UserPromptSubmit: trusted; Stop: trusted")
    # Codex's own view: our hash is its hash, and it trusts each of our handlers.
    document = json.loads(hooks_path(codex_home.path).read_text(encoding="utf-8"))
    ours = {entry.key: entry.trusted_hash for entry in our_trust_entries(hooks_path(codex_home.path), document)}
    seen = our_hooks_as_codex_sees_them(codex_home, codex_workdir)
    assert len(seen) == len(HOOK_EVENTS)  # every event we register, SubagentStart and SessionEnd included
    assert {key: hook["currentHash"] for key, hook in seen.items()} == {key: ours[key] for key in seen}
    assert {hook["trustStatus"] for hook in seen.values()} == {"trusted"}

    developer = exec_plain(codex_home, codex_server, codex_workdir)
    assert session_start_text(codex_home, codex_workdir, 2_400) in developer  # SessionStart, whole
    [recalled] = [text for text in developer if text.startswith("<recalled_memories>")]  # UserPromptSubmit
    assert FACT in recalled
    wait_for_log(codex_home, "Stop harvested_citations")  # the detached harvest, done before we count
    log = hook_log_path(codex_home.path).read_text(encoding="utf-8")
    assert "SessionStart injected_memory_summary" in log and "UserPromptSubmit injected_relevant_memory" in log

    removed = codex_memories(codex_home, "uninstall")
    assert removed.returncode == 0, removed.stderr
    after = tomllib.loads(codex_home.config_path.read_text(encoding="utf-8"))
    config_before["mcp_servers"].pop("codex-memories")  # `codex mcp remove`: ours was the only one
    assert after == {key: value for key, value in config_before.items() if value != {}}
    assert not launcher_path(codex_home.path).exists()
    calls = log.count("\n")
    assert FACT not in "".join(exec_plain(codex_home, codex_server, codex_workdir))
    assert hook_log_path(codex_home.path).read_text(encoding="utf-8").count("\n") == calls


@versions
def test_a_session_start_budget_above_codexs_limit_reaches_the_model_whole(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, clean_env: None
) -> None:
    lines = "".join(f"- build note {index}: service {index} ships with ./ship.sh --region eu-{index} ({FACT})\n" for index in range(300))
    write_memory(codex_home, SUMMARY + lines)
    # Our TOML file, read by the CLI and, in Codex's process, by the hook.
    (codex_home.path / "codex-memories.toml").write_text("session_start_budget_tokens = 9000\n", encoding="utf-8")
    expected = session_start_text(codex_home, codex_workdir, 9_000)
    assert codex_token_count(expected) > CODEX_HOOK_CONTEXT_LIMIT_TOKENS  # Codex would cut it by default
    assert expected != session_start_text(codex_home, codex_workdir, 2_400)

    installed = codex_memories(codex_home, "install", "--trust")
    assert installed.returncode == 0, installed.stderr
    [session_start] = [hook for hook in our_hooks_as_codex_sees_them(codex_home, codex_workdir).values() if hook["eventName"] == "sessionStart"]
    assert session_start["additionalContextLimit"] == session_start_context_limit(9_000)
    assert session_start["trustStatus"] == "trusted"

    developer = exec_plain(codex_home, codex_server, codex_workdir)
    assert expected in developer
    assert not any("truncated output" in text for text in developer)


# Each SessionStart handler prints one text of exactly this many UTF-8 bytes, filled with this
# character, and declares this limit (None: Codex's default).
LIMIT_CASES = {
    "default-fits": (None, 10_000, "a"),
    "default-over": (None, 10_001, "a"),
    "bytes-not-characters": (None, 10_000, "é"),  # about 5,000 characters
    "bytes-not-characters-over": (None, 10_002, "é"),
    "limit-fits": (5_000, 20_000, "a"),
    "limit-over": (5_000, 20_001, "a"),
    "no-limit": (0, 40_000, "a"),
}


def text_of(name: str, size: int, filler: str) -> str:
    head = f"[{name}] "
    room = size - len(head.encode("utf-8"))
    width = len(filler.encode("utf-8"))
    text = head + "a" * (room % width) + filler * (room // width)
    assert len(text.encode("utf-8")) == size
    return text


@versions
def test_codex_cuts_hook_context_at_four_bytes_a_token_and_additional_context_limit_moves_or_lifts_the_cut(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, clean_env: None
) -> None:
    """What `tokens` states, on the real binaries: Codex counts ceil(UTF-8 bytes / 4) tokens,
    cuts over 2,500 by default, over N with `additionalContextLimit: N`, never with 0; and the
    trust hash of a handler that declares a limit is ours."""
    handlers = []
    for name, (limit, size, filler) in LIMIT_CASES.items():
        text = text_of(name, size, filler)
        (codex_home.path / f"{name}.txt").write_text(text, encoding="utf-8")
        script = "import json,sys; sys.stdin.read(); print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart', 'additionalContext': open(sys.argv[1], encoding='utf-8').read()}}))"
        handler = {"type": "command", "command": shlex.join([sys.executable, "-c", script, str(codex_home.path / f"{name}.txt")]), "timeout": 30}
        if limit is not None:
            handler["additionalContextLimit"] = limit
        handlers.append(handler)
    hooks_path(codex_home.path).write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": handlers}]}}), encoding="utf-8")
    config = read_config(codex_home.config_path)
    set_trust(config, [TrustEntry(trust_key(hooks_path(codex_home.path), "SessionStart", 0, index), trust_hash("SessionStart", None, handler)) for index, handler in enumerate(handlers)])
    codex_home.config_path.write_text(render_config(config, codex_home.config_path.read_text(encoding="utf-8")), encoding="utf-8")

    developer = exec_plain(codex_home, codex_server, codex_workdir)

    for name, (limit, size, filler) in LIMIT_CASES.items():
        text = text_of(name, size, filler)
        assert fits_codex_hook_limit(text, CODEX_HOOK_CONTEXT_LIMIT_TOKENS if limit is None else limit) is not name.endswith("over")
        [delivered] = [message for message in developer if f"[{name}] " in message]  # ran: trusted by our hash
        whole = fits_codex_hook_limit(text, CODEX_HOOK_CONTEXT_LIMIT_TOKENS if limit is None else limit)
        assert (delivered == text) is whole, (name, len(delivered), len(text.encode()))
        if not whole:
            assert f"original token count: {codex_token_count(text)}" in delivered
