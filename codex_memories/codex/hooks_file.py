"""Our hooks in `$CODEX_HOME/hooks.json`: the handlers we write, finding them again, and merging
them in or out without moving anybody else's.

Contract:
- `our_hook_groups(launcher, session_start_limit)`: our five handlers, each `<launcher> <Event>`
  (SessionStart without a matcher, so every session source; SubagentStart; UserPromptSubmit;
  Stop; SessionEnd, which a Codex version without it reads and never fires). The SessionStart and
  SubagentStart handlers carry `additionalContextLimit` when the budget needs more than Codex
  admits by default (`tokens.session_start_context_limit`).
- `is_our_hook_command(command)`: a command that runs `codex-memories-hook` or
  `codex-memories hook`; `our_handlers(document)` lists each with its event and position.
- `with_our_hooks` / `without_our_hooks`: a copy of the document with ours merged in or taken
  out. Codex records hook trust by file, event and position, so ours take the place they had,
  else go last, and no other handler moves.
- `read_hooks_file(path)`: the parsed file, None when there is none; a file that is not the
  documented JSON is a `CodexHomeError` (nothing is written). `apply_hooks` writes a change:
  backed up first, atomically, and the file removed when only our hooks were in it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from codex_memories.codex.changes import ChangeReport, CodexHomeError, backup_file, current_text
from codex_memories.local_files import write_text_atomically
from codex_memories.read.hooks import HOOK_EVENTS, SESSION_EVENTS
from codex_memories.tokens import ADDITIONAL_CONTEXT_LIMIT_KEY

HOOKS_FILE = "hooks.json"
HOOK_EXECUTABLE = "codex-memories-hook"
CLI_EXECUTABLE = "codex-memories"
HOOK_TIMEOUT_SECONDS = 10
# Codex holds a SessionEnd handler to at most 3 s (measured on 0.147.0 and 0.171.0: the trust hash
# Codex computes for a declared 10 is the hash of 3, so a 10 here is never trusted). Our SessionEnd
# only starts the detached fresh pass (about 60 ms).
SESSION_END_TIMEOUT_SECONDS = 3
HOOK_TIMEOUTS = {"SessionEnd": SESSION_END_TIMEOUT_SECONDS}
# No matcher: every way a session starts gets the rules. Codex 0.147 and 0.171 start sessions
# with `source` startup, resume, clear and compact (0.171 also fork); after a compaction the first
# text is gone from the history, and a matcher that listed only some sources lost the rules
# there (issue 35.2, tests/codex/test_real_codex_session_sources.py). None also covers a source a
# later version adds.
SESSION_START_MATCHER: str | None = None


def hooks_path(codex_home: Path) -> Path:
    return Path(codex_home) / HOOKS_FILE


def hook_command(launcher: Path, event: str) -> str:
    """The shell command Codex runs for `event` (through the shell): the launcher and the event,
    nothing that changes when the environment or the settings do."""
    return shlex.join([str(launcher), event])


def is_our_hook_command(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if not argv:
        return False
    name = Path(argv[0]).name
    return name == HOOK_EXECUTABLE or (name == CLI_EXECUTABLE and len(argv) > 1 and argv[1] == "hook")


def our_hook_groups(launcher: Path, session_start_limit: int | None) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for event in HOOK_EVENTS:
        handler: dict[str, Any] = {"type": "command", "command": hook_command(launcher, event), "timeout": HOOK_TIMEOUTS.get(event, HOOK_TIMEOUT_SECONDS)}
        group: dict[str, Any] = {"hooks": [handler]}
        if event in SESSION_EVENTS:  # SessionStart and SubagentStart print the same text
            if session_start_limit is not None:
                handler[ADDITIONAL_CONTEXT_LIMIT_KEY] = session_start_limit
            if SESSION_START_MATCHER is not None:
                group = {"matcher": SESSION_START_MATCHER, **group}
        groups[event] = group
    return groups


def our_handlers(document: dict[str, Any] | None) -> list[tuple[str, int, int, str | None, dict[str, Any]]]:
    """(event, group index, handler index, the group's matcher, handler) of each of our handlers."""
    found = []
    for event, groups in ((document or {}).get("hooks") or {}).items():
        for group_index, group in enumerate(groups):
            for handler_index, handler in enumerate(group.get("hooks") or []):
                if isinstance(handler, dict) and is_our_hook_command(handler.get("command")):
                    matcher = group.get("matcher")
                    found.append((event, group_index, handler_index, matcher if isinstance(matcher, str) else None, handler))
    return found


def read_hooks_file(path: Path) -> dict[str, Any] | None:
    """The parsed file, or None when there is none. Raises CodexHomeError when it is unusable."""
    text = current_text(path)
    if text is None:
        return None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CodexHomeError(f"{path} is not valid JSON ({error}); fix or move it, nothing was changed") from error
    if not isinstance(document, dict) or not isinstance(document.get("hooks", {}), dict):
        raise CodexHomeError(f'{path} is not {{"hooks": {{<event>: [...]}}}}; nothing was changed')
    for event, groups in document.get("hooks", {}).items():
        if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
            raise CodexHomeError(f"{path}: hooks.{event} is not a list of matcher groups; nothing was changed")
    return document


def without_our_hooks(document: dict[str, Any]) -> dict[str, Any]:
    """A copy without our handlers; a group left empty by that goes, other groups stay as they are."""
    cleaned = json.loads(json.dumps(document))
    events = cleaned.get("hooks", {})
    for event in list(events):
        kept_groups = []
        for group in events[event]:
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [handler for handler in handlers if not (isinstance(handler, dict) and is_our_hook_command(handler.get("command")))]
            if kept or not handlers:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            events[event] = kept_groups
        else:
            del events[event]
    return cleaned


def with_our_hooks(document: dict[str, Any] | None, groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Ours in place of a group that held only ours (so no other handler moves and loses its
    trust), else last."""
    original = document or {"hooks": {}}
    merged = without_our_hooks(original)
    events = merged.setdefault("hooks", {})
    for event, group in groups.items():
        kept = events.setdefault(event, [])
        position = _position_of_our_group(original.get("hooks", {}).get(event) or [])
        kept.insert(len(kept) if position is None else min(position, len(kept)), group)
    return merged


def _position_of_our_group(groups: list[dict[str, Any]]) -> int | None:
    """Among the groups that stay once ours are removed, how many come before the first group
    made only of our handlers; None when there is no such group."""
    for survivors, group in enumerate(groups):  # every group before the first all-ours one stays
        handlers = group.get("hooks")
        if isinstance(handlers, list) and handlers and all(isinstance(h, dict) and is_our_hook_command(h.get("command")) for h in handlers):
            return survivors
    return None


def write_json_atomically(path: Path, document: dict[str, Any]) -> None:
    write_text_atomically(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def apply_hooks(path: Path, before: dict[str, Any] | None, after: dict[str, Any], report: ChangeReport, what: str) -> None:
    """Write `after` over `before` (None: no file yet) when they differ, as `what` in the report;
    install and uninstall both write hooks.json through here, so both back it up the same way."""
    if before is not None and before == after:
        return
    if before is None and not after.get("hooks"):
        return
    # Nothing left (only our hooks were in it): the file goes rather than stay as an empty
    # `{"hooks": {}}`, which Codex reads as no file; the backup keeps it like every edit.
    emptied = not after.get("hooks") and set(after) <= {"hooks"}
    report.changes.append(f"remove {path}: only our hooks were in it" if emptied else what)
    if report.dry_run:
        return
    if before is not None:
        report.backup = backup_file(path)
        report.notes.append(f"the previous {path.name} is kept as {report.backup}")
    if emptied:
        path.unlink()
    else:
        write_json_atomically(path, after)
