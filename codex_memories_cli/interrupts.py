"""Ctrl-C and SIGTERM end a command's run within seconds, with one line saying what was kept.

`interruptible_run()` (around the flow runs of `phase1`, `phase2`, `run` and `backfill`) turns
SIGINT and SIGTERM into `Interrupted`, a `KeyboardInterrupt`, so Prefect and our flows unwind
from either as from a Ctrl-C: Prefect marks the flow run Crashed, phase 1 gives back the claims it did not finalize
(the answers that arrived are in the state DB already, and the next run reuses them), phase 2
gives back its lease and discards its staged copy (the live folder is never half written). Then
`finish` prints one line (`describe`: what had finished and what is kept), stops the command's
temporary Prefect server and ends the process with 130 (SIGINT) or 143 (SIGTERM), without
waiting for extraction threads still blocked on the model. If the unwinding itself is stuck (a
thread pool waiting for such a call), a watchdog does the same `GRACE_SECONDS` after the signal;
a second signal does it at once.

`RUN` records what the command has done so far (the phases begun and finished, the extractions
answered, from the progress events): one per process, as signals are.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from codex_memories_cli.errors import say_error

GRACE_SECONDS = 5.0


class Interrupted(KeyboardInterrupt):
    """The command got SIGINT or SIGTERM; `exit_code` is 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class RunRecord:
    """What the command did so far: the phase under way, the phases finished (with their
    summary), and the extractions answered in the phase under way (a progress listener)."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.finished: list[str] = []
        self.answered = 0
        self.to_extract = 0

    def begin(self, phase: str) -> None:
        self.current, self.answered, self.to_extract = phase, 0, 0

    def end(self, summary: str) -> None:
        self.finished.append(summary)
        self.current = None

    # `codex_memories.progress` listener
    def start(self, stage: str, total: int) -> None:
        if stage == "extract":
            self.to_extract += total

    def advance(self, stage: str, amount: int = 1) -> None:
        if stage == "extract":
            self.answered += amount

    def describe(self) -> str:
        """What was kept, in a few clauses."""
        done = [f"{summary} (kept)" for summary in self.finished]
        if self.current == "phase 1" or self.current == "backfill":
            done.append(
                f"{self.current} stopped with {self.answered} of {self.to_extract} extraction(s) answered: "
                "the answers are kept in the state DB for the next run, the other claims were given back"
            )
        elif self.current == "phase 2":
            done.append("phase 2 stopped: the memory folder is as the last finished consolidation left it")
        elif not self.finished:
            done.append("nothing had started: nothing was written")
        return "; ".join(done)


RUN = RunRecord()
# Reentrant: a second signal lands in the main thread while it may be finishing already.
_finishing = threading.RLock()


def finish(interruption: Interrupted) -> NoReturn:
    """Say what was kept, stop the temporary Prefect server, end the process. Whichever of the
    main thread and the watchdog comes second waits for the first to end the process."""
    _finishing.acquire()
    from codex_memories_cli.prefect_server import INTERRUPTED_DRAIN_SECONDS, TEMPORARY_SERVER

    stopped = TEMPORARY_SERVER.started
    try:
        TEMPORARY_SERVER.stop(drain_seconds=INTERRUPTED_DRAIN_SECONDS)
        _stop_transcript_worker()
    finally:
        line = f"interrupted by {signal.Signals(interruption.signum).name}: {RUN.describe()}"
        say_error(line + ("; the temporary Prefect server was stopped" if stopped else ""))
        sys.stdout.flush()
        sys.stderr.flush()
        # Not a normal exit: that would wait for extraction threads still blocked on the model.
        os._exit(interruption.exit_code)


def _stop_transcript_worker() -> None:
    """Phase 1's transcript worker process, if this process started one (`os._exit` skips the
    pool's own shutdown)."""
    prefetch = sys.modules.get("codex_memories.extract.prefetch")
    if prefetch is not None:
        prefetch.stop_transcript_pool()
    # The pool's queues hold named semaphores that only their finalizers unlink; `os._exit` skips
    # them, and multiprocessing's resource tracker then unlinks them itself and prints a
    # "leaked semaphore objects" warning under our one-line message. Run those finalizers here,
    # as a normal exit would.
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        mp_util._run_finalizers(0)


@contextmanager
def interruptible_run() -> Iterator[None]:
    """Around a command's flow runs: SIGINT and SIGTERM raise `Interrupted` in the main thread,
    and an interruption that reaches the end of the block is `finish`ed there.

    While a flow runs, Prefect's engine puts its own SIGTERM handler in place of ours (it raises
    its `TerminationSignal`, marks the run Crashed and unwinds the same way). So every signal is
    also watched below Python's handlers: the interpreter writes each signal's number to a wakeup
    pipe whatever handler runs, and a thread reading it starts the watchdog at the first signal
    and finishes at once on the second."""
    received: list[int] = []
    watching = threading.Lock()

    def on_delivery(signum: int) -> None:
        with watching:
            if received:
                finish(Interrupted(received[0]))  # a second signal: no more waiting
            received.append(signum)
        watchdog = threading.Timer(GRACE_SECONDS, finish, args=(Interrupted(signum),))
        watchdog.daemon = True
        watchdog.start()

    def raise_interrupted(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    previous_wakeup = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(reader, on_delivery), name="signal watcher", daemon=True)
    watcher.start()
    previous = {number: signal.signal(number, raise_interrupted) for number in _INTERRUPTS}
    try:
        yield
    except BaseException as error:
        if isinstance(error, Interrupted):
            finish(error)
        if received and not isinstance(error, Exception):  # e.g. Prefect's TerminationSignal
            finish(Interrupted(received[0]))
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_wakeup)
        os.close(writer)  # the watcher reads the end of the pipe and stops


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _watch(reader: int, on_delivery: Callable[[int], None]) -> None:
    with os.fdopen(reader, "rb", buffering=0) as pipe:
        while chunk := pipe.read(64):
            for signum in chunk:
                if signum in _INTERRUPTS:
                    on_delivery(signum)
