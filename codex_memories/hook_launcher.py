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
  3. else (or when that fallback cannot start) drains stdin, prints `{}`, appends one
     `failed_hook_environment_missing` line to the hook log and says the fix on stderr. Exit 0:
     a session never breaks.
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
from codex_memories.read.hooks import HookOutcome, hook_log_path

LAUNCHER_FILE = "codex-memories-hook"
HOOK_MODULE = "codex_memories.read.hooks"
FALLBACK_EXECUTABLE = "codex-memories-hook"
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
if [ -x "$python" ] && [ -f "$hook_module" ]; then
    exec "$python" -P -m {module} "$@"{options}
fi
why="the environment of $python is gone"
fallback=$(command -v {fallback} 2>/dev/null)
if [ -n "$fallback" ] && [ "$fallback" != "$0" ]; then
    "$fallback" "$@"{options}
    status=$?
    [ "$status" -eq 0 ] && exit 0
    why="$why and $fallback failed (exit $status)"
else
    why="$why and there is no {fallback} on PATH"
fi
cat >/dev/null 2>&1
printf '{{}}\\n'
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
    options: list[str] = field(default_factory=list)  # flags install was given (`--memory-root`, ...)


def launcher_path(codex_home: Path) -> Path:
    return Path(codex_home) / paths.STATE_DIR / LAUNCHER_FILE


def current_target(codex_home: Path, options: list[str]) -> LauncherTarget:
    """This process's interpreter and hook module, and where the hooks of `codex_home` log."""
    from codex_memories.read import hooks

    return LauncherTarget(
        python=str(Path(sys.executable).absolute()),
        hook_module=str(Path(hooks.__file__).absolute()),
        log=str(hook_log_path(Path(codex_home))),
        options=list(options),
    )


def launcher_script(target: LauncherTarget) -> str:
    options = "".join(f" {shlex.quote(option)}" for option in target.options)
    return _SCRIPT.format(
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
