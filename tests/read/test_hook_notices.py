"""A hook that cannot bring the memory tells the person once per session, in Codex's own way (the
SessionStart answer's systemMessage), with the one command that fixes it, and the session goes on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codex_memories.read.hook_notices import SYSTEM_MESSAGE_KEY, session_answer, with_notice
from codex_memories.read.hooks import run

SUMMARY = "# Memory summary\n\n## What's in Memory\n\n### user-level (every project)\n- builds use make -j8 (PELICAN-7731)\n"


@pytest.fixture
def codex_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in [n for n in os.environ if n.upper().startswith("CODEX_")]:
        monkeypatch.delenv(name)
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def start(source: str = "startup", event: str = "SessionStart") -> tuple[list[str], str]:
    payload = {"session_id": "s", "hook_event_name": event, "cwd": "/tmp", "source": source, "prompt": "how do I build?"}
    return [event], json.dumps(payload, separators=(",", ":"))


def answer(event: str = "SessionStart", source: str = "startup") -> dict[str, object]:
    argv, stdin = start(source, event)
    parsed = json.loads(run(argv, stdin))
    assert isinstance(parsed, dict)
    return parsed


def test_a_missing_memory_folder_is_said_at_session_start_with_the_command_that_creates_it(codex_home: Path) -> None:
    message = answer()[SYSTEM_MESSAGE_KEY]
    assert isinstance(message, str)
    assert f"the memory folder {codex_home / 'memories'} does not exist" in message and "`codex-memories run`" in message


def test_the_notice_comes_once_per_session_not_after_a_compaction_nor_on_other_events(codex_home: Path) -> None:
    assert SYSTEM_MESSAGE_KEY not in answer(source="compact")
    assert SYSTEM_MESSAGE_KEY not in answer(event="UserPromptSubmit")
    assert SYSTEM_MESSAGE_KEY in answer(source="resume")  # a resumed session is a new start for the person


def test_a_memory_root_that_is_not_a_readable_folder_is_said_with_the_fix(codex_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "memory-file"
    not_a_folder.write_text("oops", encoding="utf-8")
    monkeypatch.setenv("CODEX_MEMORIES_MEMORY_ROOT", str(not_a_folder))
    message = answer()[SYSTEM_MESSAGE_KEY]
    assert isinstance(message, str) and f"cannot read the memory folder {not_a_folder} (not a folder)" in message and "chmod" in message


def test_an_invalid_setting_is_said_with_the_key_and_the_check_command_and_the_answer_stays_valid(
    codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_MEMORIES_SESSION_START_BUDGET_TOKENS", "lots")
    parsed = answer()
    assert set(parsed) == {SYSTEM_MESSAGE_KEY}
    message = parsed[SYSTEM_MESSAGE_KEY]
    assert isinstance(message, str) and "session_start_budget_tokens='lots'" in message and "`codex-memories doctor`" in message
    assert answer(event="UserPromptSubmit") == {}


def test_a_working_memory_gets_its_context_and_no_notice(codex_home: Path) -> None:
    (codex_home / "memories").mkdir()
    (codex_home / "memories" / "memory_summary.md").write_text(SUMMARY, encoding="utf-8")
    parsed = answer()
    assert SYSTEM_MESSAGE_KEY not in parsed and "PELICAN-7731" in json.dumps(parsed)


def test_a_notice_joins_the_context_a_hook_still_gives_and_replaces_nothing() -> None:
    context = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "team rules"}}
    joined = json.loads(with_notice(json.dumps(context), "fix it"))
    assert joined == {**context, SYSTEM_MESSAGE_KEY: "fix it"}
    assert session_answer(json.dumps(context), "SessionStart", "not json", memory_root=Path("/nonexistent/x")) != json.dumps(context)
    assert session_answer("{}", "Stop", "{}", memory_root=Path("/nonexistent/x")) == "{}"
    assert session_answer("{}", "SessionStart", "{}", memory_root=Path("s3://bucket/prefix")) == "{}"
