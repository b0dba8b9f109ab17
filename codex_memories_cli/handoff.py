"""Hand a `phase1` or `phase2` run to the running `codex-memories serve`: a warm interpreter.

A fresh CLI process pays seconds of imports (Prefect, the flow modules, openai,
great-expectations) and Prefect's first-run set-up before a run does any work; the long-lived
`codex-memories serve` has all that done. So serve also listens on a Unix-domain socket,
`codex-memories-serve.sock` under PREFECT_HOME (mode 0600: this user only; removed when serve ends; a stale one left by a killed serve is replaced), and `phase1`,
`phase2` and `run` first offer their run there. `--local` skips the offer.

The protocol, one JSON object per line:

    CLI -> serve   {"protocol": 1, "flow": "phase1" | "phase2", "overrides": {...}, "force": false,
                    "fingerprint": "<sha256>", "prefect_api_url": null | "<the CLI's PREFECT_API_URL>"}
    serve -> CLI   {"event": "declined", "reason": "..."}   and it closes: the CLI runs the flow itself
                or {"event": "ready"}                        the settings match, the slot is held
    CLI -> serve   {"start": true}                           from here on the run is serve's
    serve -> CLI   {"event": "flow_run", "id": "...", "name": "...", "url": "..."}
                   {"event": "progress", "action": "start" | "advance", "stage": "...", "count": n}
                   ... and last {"event": "report", "report": {...}}   the flow's report (pydantic JSON)
                            or {"event": "error", "message": "..."}    the flow raised (redacted)

Correctness: serve resolves the settings from its own environment plus the overrides the CLI was
given (its flags; nothing secret) and runs only when the fingerprint of that configuration
(`codex_memories.settings.config_fingerprint`, a sha256) equals the CLI's; otherwise it declines
("settings differ") and the CLI runs the flow as it always did. It declines likewise when the
CLI's PREFECT_API_URL names another server, or when it is busy: one hand-off run at a time, and a
second one is declined at once (the CLI then runs it itself, as without serve) rather than queued
behind a run of unknown length. Serve not there, or a stale socket: the CLI runs it itself.

The two-step start ("ready", then "start") makes the hand-off all or nothing: a CLI that gave up
waiting for "ready" closes the socket and serve never starts the run; once "start" is sent the CLI
never runs the flow itself (the claims are leased): serve gone before the report is one error line
naming the flow run, exit 1, and Ctrl-C says the run goes on in serve (exit 130; 143 for a SIGTERM).

This module imports neither Prefect nor the flows (the CLI's start stays light); the serving side
gets its flow runner as a callable (`codex_memories_flows.serve.run_handed_off`).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from codex_memories import progress
from codex_memories.settings import SettingsError, SettingsOverrides, config_fingerprint

if TYPE_CHECKING:
    from codex_memories.progress import ProgressListener

PROTOCOL_VERSION = 1
SOCKET_FILE = "codex-memories-serve.sock"
FLOWS = ("phase1", "phase2")
EXIT_INTERRUPTED = 130
# Serve answers "ready" after resolving the settings: milliseconds, or a `codex login status`
# probe with the auto provider. A serve that takes longer is treated as absent.
READY_TIMEOUT_SECONDS = 30.0
# The CLI sends its request and "start" at once; a peer that does not is not a CLI.
REQUEST_TIMEOUT_SECONDS = 10.0
# A CLI that stops reading (suspended) must not stall the run's progress calls: after this long
# a send gives up and the rest of the run goes unwatched.
SEND_TIMEOUT_SECONDS = 5.0
# sockaddr_un's sun_path is 108 bytes with the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class HandoffFailed(RuntimeError):
    """The run was handed over and did not end with its report here: the message says what
    became of it. Never a reason to run the flow again locally."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class HandoffUnavailable(RuntimeError):
    """Serve cannot listen for hand-offs (the message says why); it serves its schedules anyway."""


@dataclass(frozen=True)
class FlowRunRef:
    id: str
    name: str
    url: str | None = None

    def describe(self) -> str:
        return f"flow run '{self.name}' ({self.url or self.id})"


@dataclass(frozen=True)
class HandoffOutcome:
    """`report` is the flow's report when serve ran it; None means run it here, for `reason`."""

    report: Any | None
    reason: str
    flow_run: FlowRunRef | None = None


def default_socket_path() -> Path:
    """Where serve listens: in PREFECT_HOME (Prefect's default ~/.prefect), found without
    importing Prefect."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser() / SOCKET_FILE


# ---- the CLI's side -------------------------------------------------------------------------


def hand_off(
    flow: str,
    overrides: SettingsOverrides,
    fingerprint: str,
    *,
    force: bool = False,
    path: Path | None = None,
    listener: ProgressListener | None = None,
) -> HandoffOutcome:
    """Offer the run to serve. Returns its report, or None and why it should run here; raises
    `HandoffFailed` when serve took the run and it did not end with a report here. Serve's
    progress events go to `listener` (the CLI's bar)."""
    if not hasattr(socket, "AF_UNIX"):
        return HandoffOutcome(None, "this platform has no Unix-domain sockets")
    path = path or default_socket_path()
    request = {
        "protocol": PROTOCOL_VERSION,
        "flow": flow,
        "overrides": overrides.model_dump(mode="json", exclude_none=True),
        "force": force,
        "fingerprint": fingerprint,
        "prefect_api_url": os.environ.get("PREFECT_API_URL") or None,
    }
    try:
        connection = _connect(path, READY_TIMEOUT_SECONDS)
    except OSError as error:
        return HandoffOutcome(None, f"no codex-memories serve listening at {path} ({_why(error)})")
    with connection, connection.makefile("rb") as reader:
        try:
            _send(connection, request)
            answer = _receive(reader)
        except (OSError, ValueError) as error:
            return HandoffOutcome(None, f"codex-memories serve did not answer ({_why(error)})")
        if answer is None:
            return HandoffOutcome(None, "codex-memories serve closed the connection without an answer")
        if answer.get("event") == "declined":
            return HandoffOutcome(None, f"codex-memories serve declined: {answer.get('reason')}")
        if answer.get("event") != "ready":
            return HandoffOutcome(None, f"codex-memories serve answered {answer.get('event')!r}, not 'ready'")
        try:
            _send(connection, {"start": True})
        except OSError as error:
            return HandoffOutcome(None, f"codex-memories serve went away before the start ({_why(error)})")
        # The run is serve's now: however long it takes, and whatever happens, not run here.
        connection.settimeout(None)
        return _follow(flow, reader, listener)


def _follow(flow: str, reader: IO[bytes], listener: ProgressListener | None) -> HandoffOutcome:
    flow_run: FlowRunRef | None = None
    try:
        while True:
            try:
                message = _receive(reader)
            except (OSError, ValueError):
                message = None  # a reset or a torn line: serve is gone all the same
            if message is None:
                what = flow_run.describe() if flow_run else f"the {flow} run"
                raise HandoffFailed(
                    f"codex-memories serve stopped before {what} finished; it was not run here "
                    "(its claims stay leased until they expire): see the Prefect UI and serve's log"
                )
            event = message.get("event")
            if event == "flow_run":
                flow_run = FlowRunRef(str(message["id"]), str(message["name"]), message.get("url"))
            elif event == "progress" and listener is not None:
                if message.get("action") == "start":
                    listener.start(str(message["stage"]), int(message["count"]))
                elif message.get("action") == "advance":
                    listener.advance(str(message["stage"]), int(message["count"]))
            elif event == "report":
                where = f"ran in codex-memories serve as {flow_run.describe()}" if flow_run else "ran in codex-memories serve"
                return HandoffOutcome(decode_report(flow, message["report"]), where, flow_run)
            elif event == "error":
                where = f" ({flow_run.describe()} in codex-memories serve; the traceback is in its log)" if flow_run else ""
                raise HandoffFailed(f"{message.get('message')}{where}")
    except KeyboardInterrupt as interruption:
        what = flow_run.describe() if flow_run else f"the {flow} run"
        # A SIGTERM arrives as `interrupts.Interrupted`, a KeyboardInterrupt with its own code.
        code = getattr(interruption, "exit_code", EXIT_INTERRUPTED)
        raise HandoffFailed(f"interrupted: {what} goes on in codex-memories serve; it shows in the Prefect UI", code) from None


# ---- serve's side ---------------------------------------------------------------------------

# flow, overrides, force, on_flow_run(id, name) -> the flow's report
FlowRunner = Callable[..., Any]


class HandoffServer:
    """Serve's listener: the socket, and one hand-off run at a time, each in a thread of this
    process (`run_flow(flow, overrides, force=..., on_flow_run=...)` runs the flow)."""

    def __init__(
        self,
        path: Path,
        run_flow: FlowRunner,
        *,
        prefect_api_url: str,
        say: Callable[[str], None] = print,
    ) -> None:
        self.path = path
        self._run_flow = run_flow
        self._api_url = prefect_api_url
        self._say = say
        self._slot = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self._inode: int | None = None

    def __enter__(self) -> HandoffServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        if not hasattr(socket, "AF_UNIX"):
            raise HandoffUnavailable("this platform has no Unix-domain sockets")
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH_BYTES:
            raise HandoffUnavailable(f"the socket path {self.path} is longer than {MAX_SOCKET_PATH_BYTES} bytes")
        self._replace_stale_socket()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.path))
            # Before listen(): until then a connect is refused, so only this user ever gets in.
            os.chmod(self.path, 0o600)
            listener.listen(8)
        except OSError as error:
            listener.close()
            raise HandoffUnavailable(f"cannot listen on {self.path}: {_why(error)}") from None
        self._inode = os.stat(self.path).st_ino
        # The accept loop looks at the stop flag between waits (a close() from another thread
        # does not wake a blocked accept() everywhere).
        listener.settimeout(0.5)
        self._listener = listener
        self._accepting = threading.Thread(target=self._accept_loop, name="hand-off listener", daemon=True)
        self._accepting.start()

    def close(self) -> None:
        """Stop listening and remove the socket (if it is still ours). A hand-off run under way
        goes on while this process lives."""
        self._stop.set()
        if self._accepting is not None:
            self._accepting.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        try:
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
        except FileNotFoundError:
            pass  # already removed (by hand, or by a later serve that found it stale)
        self._inode = None

    def _replace_stale_socket(self) -> None:
        if not os.path.lexists(self.path):
            return
        if not self.path.is_socket():
            raise HandoffUnavailable(f"{self.path} exists and is not a socket")
        try:
            probe = _connect(self.path, 1.0)
        except ConnectionRefusedError:
            self.path.unlink()  # left by a serve that was killed: nobody listens
            return
        except FileNotFoundError:
            return
        except OSError as error:
            raise HandoffUnavailable(f"cannot check {self.path}: {_why(error)}") from None
        probe.close()
        raise HandoffUnavailable(f"another codex-memories serve listens on {self.path}")

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                raise
            threading.Thread(target=self._serve_connection, args=(connection,), name="hand-off", daemon=True).start()

    def _serve_connection(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as reader:
            if not _peer_is_this_user(connection):
                return
            connection.settimeout(REQUEST_TIMEOUT_SECONDS)
            try:
                request = _receive(reader)
            except (OSError, ValueError):
                return
            if request is None:
                return
            refusal = _check_request(request, self._api_url)
            if refusal is not None:
                _answer_quietly(connection, {"event": "declined", "reason": refusal})
                return
            if not self._slot.acquire(blocking=False):
                _answer_quietly(connection, {"event": "declined", "reason": "busy with another hand-off run"})
                return
            try:
                self._take(connection, reader, request)
            finally:
                self._slot.release()

    def _take(self, connection: socket.socket, reader: IO[bytes], request: dict[str, Any]) -> None:
        from codex_memories.runtime import close_stores, forget_run_state

        # As a fresh CLI process would: this is also what makes the fingerprint below a fresh one.
        forget_run_state()
        overrides = SettingsOverrides.model_validate(request["overrides"])
        try:
            config = overrides.load()
        except SettingsError as error:
            _answer_quietly(connection, {"event": "declined", "reason": f"settings differ ({error})"})
            return
        if config_fingerprint(config) != request["fingerprint"]:
            _answer_quietly(connection, {"event": "declined", "reason": "settings differ (this process resolves them otherwise)"})
            return
        if not _answer_quietly(connection, {"event": "ready"}):
            return
        try:
            go = _receive(reader)
        except (OSError, ValueError):
            return
        if not (go and go.get("start") is True):
            return  # the CLI gave up waiting: it runs the flow itself
        flow = request["flow"]
        sender = _Sender(connection)

        def on_flow_run(run_id: str, name: str) -> None:
            url = f"{self._api_url.removesuffix('/api')}/runs/flow-run/{run_id}"
            sender.send({"event": "flow_run", "id": run_id, "name": name, "url": url})
            self._say(f"hand-off: {flow} as flow run '{name}' ({url})")

        unsubscribe = progress.subscribe(_ProgressForwarder(sender))
        try:
            report = self._run_flow(flow, overrides, force=bool(request.get("force")), on_flow_run=on_flow_run)
            last = {"event": "report", "report": encode_report(flow, report)}
        except Exception as error:  # noqa: BLE001 - the CLI shows it as it would its own run's error
            from codex_memories.redact import redact_secrets

            text = redact_secrets(f"{type(error).__name__}: {error}")
            self._say(f"hand-off: {flow} failed: {text}\n{redact_secrets(traceback.format_exc())}")
            last = {"event": "error", "message": text}
        finally:
            unsubscribe()
            close_stores()  # as the CLI's process does when it ends
        sender.send(last)
        if sender.gone:
            self._say(f"hand-off: {flow} ended; the CLI that asked for it had gone")


def _check_request(request: Any, api_url: str) -> str | None:
    """Why this request cannot be taken, or None."""
    if not isinstance(request, dict) or request.get("protocol") != PROTOCOL_VERSION:
        version = request.get("protocol") if isinstance(request, dict) else None
        return f"protocol {version!r}; this serve speaks {PROTOCOL_VERSION}"
    if request.get("flow") not in FLOWS:
        return f"no hand-off for the flow {request.get('flow')!r}"
    if not isinstance(request.get("overrides"), dict) or not isinstance(request.get("fingerprint"), str):
        return "a request without overrides or fingerprint"
    try:
        SettingsOverrides.model_validate(request["overrides"])
    except ValueError as error:
        return f"overrides this serve does not know ({error.__class__.__name__})"
    asked = request.get("prefect_api_url")
    if asked and asked.rstrip("/") != api_url.rstrip("/"):
        return f"the CLI's PREFECT_API_URL is another Prefect server than this serve's {api_url}"
    return None


class _Sender:
    """Writes messages from any thread; after the first failure (the CLI went away, or stopped
    reading) it drops the rest, and the run goes on."""

    def __init__(self, connection: socket.socket) -> None:
        connection.settimeout(SEND_TIMEOUT_SECONDS)
        self._connection = connection
        self._lock = threading.Lock()
        self.gone = False

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            if self.gone:
                return
            try:
                _send(self._connection, message)
            except OSError:
                self.gone = True


class _ProgressForwarder:
    def __init__(self, sender: _Sender) -> None:
        self._sender = sender

    def start(self, stage: str, total: int) -> None:
        self._sender.send({"event": "progress", "action": "start", "stage": stage, "count": total})

    def advance(self, stage: str, amount: int = 1) -> None:
        self._sender.send({"event": "progress", "action": "advance", "stage": stage, "count": amount})


# ---- the wire ---------------------------------------------------------------------------------


def encode_report(flow: str, report: Any) -> Any:
    return _report_adapter(flow).dump_python(report, mode="json")


def decode_report(flow: str, data: Any) -> Any:
    return _report_adapter(flow).validate_python(data)


def _report_adapter(flow: str) -> Any:
    from pydantic import TypeAdapter

    from codex_memories.reports.phase1 import Phase1Report
    from codex_memories.reports.phase2 import Phase2Report

    return TypeAdapter(Phase1Report if flow == "phase1" else Phase2Report)


def _connect(path: Path, timeout: float) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    try:
        connection.connect(str(path))
    except BaseException:
        connection.close()
        raise
    return connection


def _send(connection: socket.socket, message: dict[str, Any]) -> None:
    connection.sendall(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")


def _receive(reader: IO[bytes]) -> dict[str, Any] | None:
    """The next message, or None at the end of the stream (a torn last line included)."""
    line = reader.readline()
    if not line.endswith(b"\n"):
        return None
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message that is not a JSON object")
    return message


def _answer_quietly(connection: socket.socket, message: dict[str, Any]) -> bool:
    """Send one answer; False when the CLI is already gone (then there is nobody to tell)."""
    try:
        _send(connection, message)
    except OSError:
        return False
    return True


def _peer_is_this_user(connection: socket.socket) -> bool:
    """The socket's mode admits only this user; SO_PEERCRED (Linux) also turns away root's
    processes, which file modes do not stop."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid == os.getuid()


def _why(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return str(error)
