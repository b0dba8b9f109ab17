"""Fresh memory: a session that ended reaches the next session within minutes, not a day later.

Contract:
- `start_fresh(mode, transcript, options)` (called by the hooks, returns at once): starts a
  detached process (its own session, so it outlives the hook and Codex's process group) that
  runs `python -P -m codex_memories.read.fresh <mode> ...`. `mode` is
  * `end`: Codex said the session ended (`SessionEnd`; 0.147 and 0.171 send it at `/quit`, on a
    closed terminal and at the end of `codex exec`): a fresh pass now.
  * `idle`: a turn ended (`Stop`; a Codex that is killed sends no `SessionEnd`): wait until the rollout has
    had no newer turn for `IDLE_SECONDS`, then a fresh pass. One waiter per rollout (a lock file
    per rollout): a later Stop of the same session finds the waiter alive and leaves; the waiter
    sees the newer turn in the file's modification time and waits on.
- `fresh_pass(...)` (the detached process): skips when the rollout is unchanged since the last
  fresh pass of it (so `SessionEnd` and the idle waiter do not both spend a pass), when
  `fresh_memory` is off (settings tree; opt-in, docs/settings.md says why), else runs `codex-memories run --force
  --ignore-age-windows` (phase 1 regardless of the idle window, under its rate-limit guard;
  phase 2 without the cooldown, never without its lease; handed to `codex-memories serve` when
  one serves the same data, else with the command's own temporary Prefect server). One pass at a time: a machine-wide
  lock file (`flock`); a pass that finds one running waits for it, then runs (the running one
  may have read the rollout before it ended).
- Every outcome is one line in `hooks.log` (event `Fresh`, codes in `read.hook_log.HookOutcome`).
  Nothing here blocks or breaks a session: every failure is a `failed_*` line.
- Known limit: `--ignore-age-windows` applies to every session phase 1 sees, so another
  session still open may be extracted early; phase 1 extracts it again once it changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from codex_memories.read.detached import start_detached
from codex_memories.read.hook_log import (
    HOOK_LOG_DIR,
    HookOptions,
    HookOutcome,
    HookResult,
    hook_log_path,
    redact_url,
    write_log_line,
)

EVENT = "Fresh"
MODES = ("end", "idle")
# A rollout with no newer turn for this long is taken as a session that ended (a Codex that was
# killed sends no SessionEnd). Two minutes: a person who pauses to read the answer is not cut short often, and
# the pass (seconds with the offline provider) still lands within the 5 minutes issue 35 asks.
IDLE_SECONDS = 120.0
FRESH_DIR = "fresh"
PASS_LOCK = "pass.lock"
DONE_FILE = "done.json"
RUN_TIMEOUT_SECONDS = 1800


def fresh_dir(codex_home: Path) -> Path:
    return Path(codex_home) / HOOK_LOG_DIR / FRESH_DIR


def _rollout_tag(rollout: Path) -> str:
    return hashlib.sha256(str(rollout).encode("utf-8")).hexdigest()[:16]


def _signature(rollout: Path) -> list[int]:
    """What says the rollout changed: its size and modification time (ns)."""
    status = rollout.stat()
    return [status.st_size, status.st_mtime_ns]


# -- in the hook ------------------------------------------------------------------------------------


def start_fresh(mode: str, rollout: Path, options: HookOptions, idle_seconds: float = IDLE_SECONDS) -> HookResult:
    """Start the detached fresh process for `rollout` (`detached.start_detached`); never waits for it."""
    arguments = [mode, str(rollout), "--codex-home", str(options.codex_home), "--memory-root", str(options.memory_root)]
    arguments += ["--idle-seconds", str(idle_seconds)]
    try:
        pid = start_detached("codex_memories.read.fresh", arguments, db_url=options.db_url)
    except OSError as error:
        return HookResult(EVENT, HookOutcome.failed_start_fresh_pass, detail=f"{type(error).__name__}: {error}")
    return HookResult(EVENT, HookOutcome.started_fresh_pass, detail=f"{mode}, pid {pid}")


# -- the detached process ------------------------------------------------------------------------


def wait_until_idle(rollout: Path, idle_seconds: float, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Block until `rollout` has not changed for `idle_seconds`; False when it is gone."""
    while True:
        try:
            changed = rollout.stat().st_mtime
        except OSError:
            return False
        remaining = changed + idle_seconds - time.time()
        if remaining <= 0:
            return True
        sleep(min(remaining + 0.05, idle_seconds))


def _done(codex_home: Path) -> dict[str, list[int]]:
    try:
        document = json.loads((fresh_dir(codex_home) / DONE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: the worst case is one pass too many
    return document if isinstance(document, dict) else {}


def _mark_done(codex_home: Path, rollout: Path, signature: list[int]) -> None:
    done = _done(codex_home)
    done[str(rollout)] = signature
    target = fresh_dir(codex_home) / DONE_FILE
    temporary = target.with_suffix(".tmp")
    temporary.write_text(json.dumps(done), encoding="utf-8")
    temporary.replace(target)


def fresh_memory_enabled(codex_home: Path, memory_root: Path) -> tuple[bool, str]:
    """Whether fresh memory is on, and why, from the settings tree (what `run` would load)."""
    from codex_memories.settings import SettingsOverrides

    config = SettingsOverrides(codex_home=str(codex_home), memory_root=str(memory_root)).load()
    if config.settings.fresh_memory:
        return True, "fresh_memory = true"
    return False, "fresh_memory is off (opt-in: fresh_memory = true in our TOML file)"

def run_command(codex_home: Path, memory_root: Path) -> list[str]:
    """The fresh pass: the CLI's `run` in this interpreter, in this process's environment (the
    DB URL and the pinned settings travel there, never on the command line)."""
    return [
        sys.executable, "-P", "-m", "codex_memories_cli.main", "run", "--force", "--ignore-age-windows",
        "--codex-home", str(codex_home), "--memory-root", str(memory_root),
    ]


def fresh_pass(mode: str, rollout: Path, codex_home: Path, memory_root: Path, idle_seconds: float = IDLE_SECONDS) -> HookResult:
    """The detached process's work (see the module contract); returns the outcome it logs."""
    folder = fresh_dir(codex_home)
    folder.mkdir(parents=True, exist_ok=True)
    if mode == "idle":
        skipped = _off(codex_home, memory_root)
        if skipped is not None:  # asked now, not after the wait: no process sleeps for nothing
            return skipped
        with (folder / f"wait-{_rollout_tag(rollout)}.lock").open("w") as waiter:
            try:
                fcntl.flock(waiter, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return HookResult(EVENT, HookOutcome.skipped_fresh_waiter_running, detail=f"idle, {rollout.name}")
            while True:  # a turn that lands during the pass is waited for and passed again
                if not wait_until_idle(rollout, idle_seconds):
                    return HookResult(EVENT, HookOutcome.failed_transcript_unreadable, detail=f"{rollout}: gone")
                result = _pass_once(mode, rollout, codex_home, memory_root)
                if result.outcome.is_failure or _signature(rollout) == _done(codex_home).get(str(rollout)):
                    return result
                write_log_line(hook_log_path(codex_home), result, 0.0)
    return _pass_once(mode, rollout, codex_home, memory_root)


def _off(codex_home: Path, memory_root: Path) -> HookResult | None:
    """The outcome when no pass may run (fresh memory off, bad settings); None when one may."""
    from codex_memories.settings_sources import SettingsError

    try:
        enabled, why = fresh_memory_enabled(codex_home, memory_root)
    except SettingsError as error:
        return HookResult(EVENT, HookOutcome.failed_settings, detail=str(error))
    return None if enabled else HookResult(EVENT, HookOutcome.skipped_fresh_memory_off, detail=why)


def _pass_once(mode: str, rollout: Path, codex_home: Path, memory_root: Path) -> HookResult:
    try:
        signature = _signature(rollout)
    except OSError as error:
        return HookResult(EVENT, HookOutcome.failed_transcript_unreadable, detail=f"{rollout}: {error}")
    if _done(codex_home).get(str(rollout)) == signature:
        return HookResult(EVENT, HookOutcome.skipped_already_fresh, detail=f"{mode}, {rollout.name} unchanged since its last pass")
    skipped = _off(codex_home, memory_root)
    if skipped is not None:
        return skipped
    with (fresh_dir(codex_home) / PASS_LOCK).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one pass at a time; a second waits, then runs
        try:
            signature = _signature(rollout)  # what this pass will have read
            finished = subprocess.run(
                run_command(codex_home, memory_root), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=RUN_TIMEOUT_SECONDS, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return HookResult(EVENT, HookOutcome.failed_fresh_pass, detail=f"{mode}: {type(error).__name__}: {error}")
    summary = _run_summary(finished.stdout)
    if finished.returncode != 0:
        tail = " ".join((finished.stderr or finished.stdout).split())[-300:]
        return HookResult(EVENT, HookOutcome.failed_fresh_pass, detail=redact_url(f"{mode}: exit {finished.returncode}: {tail}"))
    _mark_done(codex_home, rollout, signature)
    return HookResult(EVENT, HookOutcome.fresh_pass_done, detail=redact_url(f"{mode}, {rollout.name}: {summary}"))


def _run_summary(stdout: str) -> str:
    """The report's phase lines (counts and outcome names, no memory text)."""
    lines = [" ".join(line.split()) for line in stdout.splitlines() if line.strip().lower().startswith(("phase 1", "phase 2"))]
    return "; ".join(lines)[:300] or "no report"


USAGE = "usage: python -m codex_memories.read.fresh <end|idle> ROLLOUT --codex-home DIR --memory-root DIR [--idle-seconds S]"


def main(argv: list[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    if len(arguments) < 2 or arguments[0] not in MODES:
        sys.stderr.write(USAGE + "\n")
        raise SystemExit(2)
    mode, rollout, rest = arguments[0], Path(arguments[1]), arguments[2:]
    values = dict(zip(rest[::2], rest[1::2], strict=False))
    codex_home = Path(values.get("--codex-home", "~/.codex")).expanduser()
    memory_root = Path(values.get("--memory-root", str(codex_home / "memories"))).expanduser()
    try:
        result = fresh_pass(mode, rollout, codex_home, memory_root, float(values.get("--idle-seconds", IDLE_SECONDS)))
    except Exception as error:  # noqa: BLE001 - detached: nobody else would ever see it; named and logged
        result = HookResult(EVENT, HookOutcome.failed_fresh_pass, detail=f"{mode}: {type(error).__name__}: {error}")
    write_log_line(hook_log_path(codex_home), result, time.monotonic() - started)


if __name__ == "__main__":
    main()
