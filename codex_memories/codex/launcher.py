"""The hook launcher: the one file `hooks.json` names, so that our hooks (and Codex's trust in
them) outlive a moved, upgraded or reinstalled Python environment, and say so when they cannot.

Contract:
- `launcher_path(codex_home)` is `$CODEX_HOME/codex-memories/codex-memories-hook`; `install`
  writes it (atomically, mode 0755) and `uninstall` removes it. `hooks.json` runs
  `<launcher> <Event>`, a command that never changes, so the trust hash Codex keeps for it stays
  valid across upgrades; `install` rewrites only the launcher.
- `launcher_script(target)` is a POSIX `sh` script that, for `<Event>`:
  1. runs the recorded interpreter on our hook module, `<python> -P -m codex_memories.read.hooks
     <Event> <recorded options>` (`-P`: the session's folder never shadows our modules), when
     that interpreter and the recorded hook module file both still exist;
  2. else runs the first `codex-memories-hook` on PATH with the same arguments;
  3. else (or when that fallback cannot start) reads stdin, prints `{}` (for SessionStart, except
     after a compaction: `{"systemMessage": <read.hook_notices.launcher_gone_notice>}`, which Codex's
     TUI shows), appends one `failed_hook_environment_missing` line to the hook log and says the
     fix on stderr. Exit 0: a session never breaks.
  Before any of that it exports `CODEX_MEMORIES_PINNED_SETTINGS=<the pinned-settings file>`, so
  the hook reads the settings `install` resolved whatever environment Codex runs in
  (settings_sources).
- `<launcher> --print-settings` prints, as JSON, the settings the hooks resolve in the calling
  environment (`python -m codex_memories.settings_sources`): `doctor` runs it as Codex would.
- `LauncherTarget(python, hook_module, options, log)` is what `install` records (also as one JSON
  comment line, `# target: {...}`, that `read_launcher` parses back); `current_target` describes
  this process's installation.
- `launcher_problem(codex_home)`: one line when the recorded target is gone (what runs instead,
  and the fix), None when it is fine or no launcher is installed. `doctor` and every run print it.
- Pure except `read_launcher` / `launcher_problem`, which read the launcher file and test paths.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codex_memories import paths
from codex_memories.read.hook_notices import NOTICE_EVENT, SYSTEM_MESSAGE_KEY, launcher_gone_notice
from codex_memories.read.hook_log import HookOutcome, hook_log_path
from codex_memories.settings_sources import PINNED_SETTINGS_ENV, pinned_settings_path

LAUNCHER_FILE = "codex-memories-hook"
HOOK_MODULE = "codex_memories.read.hooks"
FALLBACK_EXECUTABLE = "codex-memories-hook"
SETTINGS_MODULE = "codex_memories.settings_sources"
SETTINGS_PROBE = "--print-settings"  # the launcher's one non-event argument: what the hooks resolve
TARGET_MARKER = "# target: "
REINSTALL_FIX = "run `codex-memories install` again from the environment you use now"

_SCRIPT = """#!/bin/sh
# codex-memories hook launcher: written by `codex-memories install`, removed by `uninstall`.
# Codex's hooks.json runs this file, so the hooks and their trust in config.toml survive a moved,
# upgraded or reinstalled Python environment; `install` rewrites only this file.
{marker}{target_json}
python={python}
hook_module={hook_module}
log={log}
{pinned}if [ -x "$python" ] && [ -f "$hook_module" ]; then
    # `doctor` asks, through this same file and environment, which settings the hooks resolve.
    [ "${{1:-}}" = {probe} ] && exec "$python" -P -m {settings_module}
    exec "$python" -P -m {module} "$@"{options}
fi
why="the environment of $python is gone"
input=$(cat)
fallback=$(command -v {fallback} 2>/dev/null)
if [ -n "$fallback" ] && [ "$fallback" != "$0" ]; then
    printf '%s' "$input" | "$fallback" "$@"{options}
    status=$?
    [ "$status" -eq 0 ] && exit 0
    why="$why and $fallback failed (exit $status)"
else
    why="$why and there is no {fallback} on PATH"
fi
# Once per session (the SessionStart call, not the one after a compaction) the person is told
# in Codex, through the hook's systemMessage; every other call adds nothing.
case "${{1:-}}:$input" in
    {notice_event}:*'"source":"compact"'* | {notice_event}:*'"source": "compact"'*) printf '{{}}\\n' ;;
    {notice_event}:*) printf '%s\\n' {notice_json} ;;
    *) printf '{{}}\\n' ;;
esac
line="$(date -u +%Y-%m-%dT%H:%M:%S.000000Z) ${{1:-?}} {outcome} 0ms $why: {fix}"
mkdir -p "$(dirname "$log")" 2>/dev/null
printf '%s\\n' "$line" >>"$log" 2>/dev/null
printf 'codex-memories hook: %s\\n' "$line" >&2
exit 0
"""


@dataclass(frozen=True)
class LauncherTarget:
    python: str  # the interpreter of the installation that ran `install`
    hook_module: str  # that installation's codex_memories/read/hooks.py: gone when the package is
    log: str  # the hook log, for the line written when nothing can run
    # Flags the hooks get. Launchers before issue 35 carried install's `--memory-root` etc. here;
    # install now pins every setting in `pinned_settings` instead (a flag would beat the
    # environment Codex runs the hook in, and a setting install did not get as a flag was lost).
    options: list[str] = field(default_factory=list)
    pinned_settings: str = ""  # the pinned-settings file the hooks read (settings_sources); "" = none


def launcher_path(codex_home: Path) -> Path:
    return Path(codex_home) / paths.STATE_DIR / LAUNCHER_FILE


def current_target(codex_home: Path, options: list[str] | None = None, *, pinned: bool = True) -> LauncherTarget:
    """This process's interpreter and hook module, where the hooks of `codex_home` log, and (with
    `pinned`) the pinned-settings file `install` writes beside the launcher."""
    from codex_memories.read import hooks

    return LauncherTarget(
        python=str(Path(sys.executable).absolute()),
        hook_module=str(Path(hooks.__file__).absolute()),
        log=str(hook_log_path(Path(codex_home))),
        options=list(options or []),
        pinned_settings=str(pinned_settings_path(Path(codex_home)).absolute()) if pinned else "",
    )


def launcher_script(target: LauncherTarget) -> str:
    options = "".join(f" {shlex.quote(option)}" for option in target.options)
    pinned = (
        f"{PINNED_SETTINGS_ENV}={shlex.quote(target.pinned_settings)}\nexport {PINNED_SETTINGS_ENV}\n" if target.pinned_settings else ""
    )
    notice = json.dumps({SYSTEM_MESSAGE_KEY: launcher_gone_notice(target.python)}, ensure_ascii=False)
    return _SCRIPT.format(
        pinned=pinned,
        probe=SETTINGS_PROBE,
        settings_module=SETTINGS_MODULE,
        notice_event=NOTICE_EVENT,
        notice_json=shlex.quote(notice),
        marker=TARGET_MARKER,
        target_json=json.dumps(asdict(target), ensure_ascii=False),
        python=shlex.quote(target.python),
        hook_module=shlex.quote(target.hook_module),
        log=shlex.quote(target.log),
        module=HOOK_MODULE,
        options=options,
        fallback=FALLBACK_EXECUTABLE,
        outcome=HookOutcome.failed_hook_environment_missing.value,
        fix=REINSTALL_FIX.replace("`", "\\`"),
    )


def read_launcher(path: Path) -> LauncherTarget | None:
    """The target a launcher records; None when there is no file or it is not our launcher."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines[:8]:
        if line.startswith(TARGET_MARKER):
            try:
                recorded = json.loads(line[len(TARGET_MARKER) :])
                return LauncherTarget(**recorded)
            except (ValueError, TypeError):
                return None
    return None


def target_is_present(target: LauncherTarget) -> bool:
    python = Path(target.python)
    return python.is_file() and os.access(python, os.X_OK) and Path(target.hook_module).is_file()


def launcher_problem(codex_home: Path) -> str | None:
    """One line when the launcher's recorded environment is gone; None when fine or not installed."""
    target = read_launcher(launcher_path(codex_home))
    if target is None or target_is_present(target):
        return None
    fallback = shutil.which(FALLBACK_EXECUTABLE)
    instead = (
        f"the hooks fall back to {fallback} on PATH" if fallback else f"no {FALLBACK_EXECUTABLE} on PATH either, so every hook adds nothing"
    )
    return f"the hook launcher's Python environment is gone ({target.python}); {instead}: {REINSTALL_FIX}"
