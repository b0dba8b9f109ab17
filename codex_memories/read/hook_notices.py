"""What a broken hook tells the person in Codex: one line, once per session, with the fix.

Contract:
- A hook that cannot bring the memory still answers (exit 0, valid JSON), so the session goes on;
  what it cannot do, it says through the one channel Codex shows the person: the `systemMessage`
  of the hook's JSON output. Measured (tests/codex/test_real_codex_broken_hook.py): the TUI of
  0.147 and 0.171 shows it under the SessionStart hook ("SessionStart (completed) says: ..."); a
  `codex exec` run shows none of a hook's messages, human or `--json` output, so there the hook
  log and `doctor` are what tell.
- Once per session: only the SessionStart answer carries it (`notice_due`), and not the one Codex
  sends again after compacting a session (`source` `compact`), which the person has already seen
  the message of; UserPromptSubmit and Stop stay quiet.
- `launcher_gone_notice`, `memory_root_notice`, `settings_notice`: the three lines, each naming
  what is wrong and the one command that fixes it. `with_notice(stdout, notice)` adds the line to
  a hook answer (`{}` or one with `hookSpecificOutput`), keeping the rest.
- Standard library only: the hook imports it on every call, the launcher's shell code carries a
  line built here at install time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SYSTEM_MESSAGE_KEY = "systemMessage"
NOTICE_EVENT = "SessionStart"
# SessionStart sources that are not a new start for the person: Codex compacted the session.
QUIET_SOURCES = frozenset({"compact"})
PREFIX = "codex-memories: this session has no memory"
INSTALL_COMMAND = "codex-memories install"
RUN_COMMAND = "codex-memories run"
DOCTOR_COMMAND = "codex-memories doctor"


def notice_due(event: str, payload: Mapping[str, Any] | None) -> bool:
    """Whether this hook call is the one per session that may carry a notice."""
    if event != NOTICE_EVENT:
        return False
    source = (payload or {}).get("source")
    return source not in QUIET_SOURCES


def launcher_gone_notice(python: str) -> str:
    return (
        f"{PREFIX}: the Python environment our hooks run ({python}) is gone (a moved or deleted checkout or venv). "
        f"Fix: run `{INSTALL_COMMAND}` from the environment you use now."
    )


def memory_root_notice(memory_root: Path, problem: str) -> str:
    """`problem`: `missing` (not created yet, or a pinned folder that moved) or why it cannot be read."""
    if problem == "missing":
        return (
            f"{PREFIX}: the memory folder {memory_root} does not exist. Fix: run `{RUN_COMMAND}` "
            f"(or `{INSTALL_COMMAND}` again if your memory lives elsewhere now)."
        )
    return f"{PREFIX}: cannot read the memory folder {memory_root} ({problem}). Fix: `chmod u+rwx {memory_root}`."


def settings_notice(error: str) -> str:
    return f"{PREFIX}: a setting is invalid: {error}. Fix the setting, then run `{DOCTOR_COMMAND}` to check."


def with_notice(stdout: str, notice: str) -> str:
    """The hook answer `stdout` (a JSON object) with `notice` as its systemMessage."""
    try:
        answer = json.loads(stdout)
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    answer[SYSTEM_MESSAGE_KEY] = notice
    return json.dumps(answer, ensure_ascii=False)


def memory_root_problem(memory_root: Path) -> str | None:
    """`missing`, why the folder cannot be read, or None when a hook can read it. A root in object
    storage (`s3://...`) is not the hooks' to check."""
    if str(memory_root).startswith("s3:"):
        return None
    if not memory_root.exists():
        return "missing"
    if not memory_root.is_dir():
        return "not a folder"
    if not os.access(memory_root, os.R_OK | os.X_OK):
        return "permission denied"
    return None


def session_answer(stdout: str, event: str, stdin_text: str, *, memory_root: Path | None = None, settings_error: str | None = None) -> str:
    """The hook's answer with the session's notice added when one is due (see the contract):
    a settings error, else a memory root that is missing or unreadable; `stdout` unchanged
    otherwise. Only a SessionStart call pays for reading its input again."""
    if event != NOTICE_EVENT:
        return stdout
    try:
        payload = json.loads(stdin_text)
    except (ValueError, RecursionError):
        payload = None
    if not notice_due(event, payload if isinstance(payload, dict) else None):
        return stdout
    if settings_error is not None:
        return with_notice(stdout, settings_notice(settings_error))
    if memory_root is None or (problem := memory_root_problem(memory_root)) is None:
        return stdout
    return with_notice(stdout, memory_root_notice(memory_root, problem))
