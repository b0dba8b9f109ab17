"""Phase-1 CPU work kept off the threads that gate the extraction map: transcripts built ahead,
and the batch quality check's great-expectations.

Building a transcript (parse, sanitize, redact, tokenise) is CPU work. Done inside each
extraction task it runs under the flow process's GIL, next to the HTTP clients and Prefect's
bookkeeping, and delays every request that a freed slot should send at once. `TranscriptPrefetch`
builds them in a worker process (when the machine has a core to spare) a bounded number of claims
ahead of the submissions, so a freed slot finds its transcript ready. When no core is spare
(load average within one of the core count: a shared machine), a second process only adds a
start-up of seconds and competes for the same cores, so a background thread of this process
builds them ahead instead: still off the submission path, though under the GIL.

The batch quality check (great-expectations: about 3 s of CPU to import, then the validation)
runs in the same worker process when there is one, imported there while the extractions wait on
the model (`prepare_quality_check`). The worker runs one thing at a time, so while that import
runs a transcript queued behind it would hold its extraction for seconds: `take` then leaves the
transcript to the extraction task instead of waiting (a fresh worker's first batch only; later
imports are no-ops). Without a worker it runs in the calling thread, imported when
the check comes: a background import thread in the flow process during the extraction map held
the GIL the freed slots needed and cost 0.11 of phase-1 efficiency at 0.5 s latency
(benchmarks/README.md, "Phase-1 efficiency").

A transcript that could not be built ahead (an I/O error, a broken worker) is simply not
prefetched: the extraction builds it itself and reports the failure as before. A broken worker
process never loses a quality check either: it then runs in the calling thread.

The worker process ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the
flow process decides what an interruption does) and ends with the flow process: at its normal
exit, or by `stop_transcript_pool` when the process is about to end without one.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from codex_memories.extract.quality import (
    BatchQualityReport,
    QualityRow,
    check_extraction_batch,
    import_validation_modules,
)
from codex_memories.ingest.transcript import KeptLines, MemoryTranscript, build_memory_transcript
from codex_memories.state.records import Stage1Claim

_pool: ProcessPoolExecutor | None = None
_thread: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
# The great-expectations import queued in the worker process, while it has not finished.
_quality_import: Future[None] | None = None


def _build(rollout_path: str, token_budget: int, kept_lines: KeptLines | None) -> MemoryTranscript:
    return build_memory_transcript(Path(rollout_path), token_budget=token_budget, kept_lines=kept_lines)


def _warm() -> None:
    """Loads the tokenizer and the redaction patterns and screen in the worker, before the first claim."""
    from codex_memories.redact import prepare_screen, redact_secrets
    from codex_memories.tokens import count_tokens

    prepare_screen()
    count_tokens(redact_secrets("warm up"))


def spare_cores() -> float:
    """Cores not busy right now: the core count less the 1-minute load average."""
    return (os.cpu_count() or 1) - os.getloadavg()[0]


def transcript_pool() -> Executor:
    """Where this process builds transcripts ahead: its one worker process when a core is spare
    (spawned, not forked: the flow process runs threads; started on first use and kept), else
    one background thread. A daemonic process (a multiprocessing pool's worker running a flow)
    may not start children, so it always takes the thread."""
    global _pool, _thread
    with _pool_lock:
        if _pool is not None:
            return _pool
        if spare_cores() >= 1 and not multiprocessing.current_process().daemon:
            _pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_interrupts
            )
            # The first submit spawns the worker, here, in this thread. The worker imports (the
            # spawn bootstrap unpickles its initializer) before `_ignore_interrupts` runs, and a
            # Ctrl-C in that window printed a KeyboardInterrupt traceback beside our one-line
            # message. A spawned child starts with the spawning thread's signal mask, so it is
            # born with SIGINT blocked. `pthread_sigmask` works in any thread (`signal.signal`
            # only in the main one), and the process still takes a SIGINT in its other threads.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                _pool.submit(_warm)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            return _pool
        if _thread is None:
            _thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="transcripts")
        return _thread


def stop_transcript_pool() -> None:
    """End the worker process now, whatever it is doing (for a process that ends with
    `os._exit`, which skips the pool's own shutdown and would leave the worker waiting)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is None:
        return
    processes = list(getattr(pool, "_processes", {}).values())
    for process in processes:
        process.terminate()
    for process in processes:  # its finalizers take milliseconds; a stuck one is not waited for
        process.join(timeout=0.5)
    pool.shutdown(wait=False, cancel_futures=True)


def _ignore_interrupts() -> None:
    # Ignoring SIGINT discards one that arrived while it was blocked (see `transcript_pool`);
    # then the mask goes back to what a process normally has.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGTERM, _end_worker)


def _end_worker(signum: int, frame: object) -> None:
    """`stop_transcript_pool`'s terminate: end now, after the finalizers that unlink the named
    semaphores this worker made (left to multiprocessing's resource tracker, they come back as a
    "leaked semaphore objects" warning on the user's terminal)."""
    from multiprocessing import util

    util._run_finalizers(0)
    os._exit(128 + signum)


def _worker_process() -> ProcessPoolExecutor | None:
    with _pool_lock:
        return _pool


def prepare_quality_check() -> None:
    """Queue the great-expectations import in the worker process, if this process has one (call
    it once the batch has claims: a worker busy importing delays the process's exit); without
    one, nothing: see the module docstring."""
    global _quality_import
    worker = _worker_process()
    if worker is None:
        return
    try:
        _quality_import = worker.submit(import_validation_modules)
    except RuntimeError:  # broken (BrokenProcessPool) or shut down: the check runs in the calling thread
        return


def quality_import_running() -> bool:
    """Whether the worker process is (or will next be) busy importing great-expectations."""
    pending = _quality_import
    return pending is not None and not pending.done()


def run_quality_check(rows: list[QualityRow]) -> BatchQualityReport:
    """`check_extraction_batch(rows)` in the worker process when there is one, else here. An error
    of the check itself is raised as it is; only a broken worker falls back to this thread."""
    worker = _worker_process()
    if worker is not None:
        try:
            future = worker.submit(check_extraction_batch, rows)
        except RuntimeError:  # broken or shut down
            future = None
        if future is not None:
            try:
                return future.result()
            except BrokenExecutor:
                pass  # the worker died (killed, out of memory): check in this thread instead
    return check_extraction_batch(rows)


class TranscriptPrefetch:
    """Transcripts of `claims`, at most `ahead` built and not yet taken (bounds the memory a
    batch of large rollouts holds), in claim order."""

    def __init__(
        self,
        claims: list[Stage1Claim],
        *,
        token_budget: int,
        ahead: int,
        executor: Executor | None,
        kept_lines: Mapping[str, KeptLines] | None = None,
    ) -> None:
        self._claims = list(claims)
        self._token_budget = token_budget
        self._kept_lines = kept_lines or {}
        self._ahead = max(1, ahead)
        self._executor = executor
        self._futures: dict[str, Future[MemoryTranscript]] = {}
        self._next = 0
        self._fill()

    def take(self, claim: Stage1Claim) -> MemoryTranscript | None:
        """The claim's transcript (waiting for it if needed), or None when it was not built
        ahead; then the next claims' builds are queued. A build still waiting behind the
        quality check's import in the worker is not waited for (None: the task builds it)."""
        future = self._futures.pop(claim.ownership_token, None)
        self._fill()
        if future is None:
            return None
        if not future.done() and self._executor is _worker_process() and quality_import_running():
            future.cancel()  # not started yet: dropped; already handed to the worker: built unused
            return None
        try:
            return future.result()
        except Exception:  # noqa: BLE001 - the extraction rebuilds it and reports the real error
            return None

    def _fill(self) -> None:
        if self._executor is None:
            return
        while self._next < len(self._claims) and len(self._futures) < self._ahead:
            claim = self._claims[self._next]
            self._next += 1
            try:
                self._futures[claim.ownership_token] = self._executor.submit(
                    _build, claim.rollout_path, self._token_budget, self._kept_lines.get(claim.rollout_path)
                )
            except RuntimeError:  # the pool was shut down (interpreter exit): build in the task
                self._executor = None
                return
