"""Phase-1 transcripts built ahead of the extraction map, off the threads that gate it.

Building a transcript (parse, sanitize, redact, tokenise) is CPU work. Done inside each
extraction task it runs under the flow process's GIL, next to the HTTP clients and Prefect's
bookkeeping, and delays every request that a freed slot should send at once. `TranscriptPrefetch`
builds them in a worker process (when the machine has a core to spare) a bounded number of claims
ahead of the submissions, so a freed slot finds its transcript ready. When no core is spare
(load average within one of the core count: a shared machine), a second process only adds a
start-up of seconds and competes for the same cores, so a background thread of this process
builds them ahead instead: still off the submission path, though under the GIL.

A transcript that could not be built ahead (an I/O error, a broken worker) is simply not
prefetched: the extraction builds it itself and reports the failure as before.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from codex_memories.ingest.rollouts import MemoryTranscript, build_memory_transcript
from codex_memories.state.records import Stage1Claim

_pool: ProcessPoolExecutor | None = None
_thread: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _build(rollout_path: str, token_budget: int) -> MemoryTranscript:
    return build_memory_transcript(Path(rollout_path), token_budget=token_budget)


def _warm() -> None:
    """Loads the tokenizer and the redaction patterns in the worker, before the first claim."""
    from codex_memories.redact import redact_secrets
    from codex_memories.tokens import count_tokens

    count_tokens(redact_secrets("warm up"))


def spare_cores() -> float:
    """Cores not busy right now: the core count less the 1-minute load average."""
    return (os.cpu_count() or 1) - os.getloadavg()[0]


def transcript_pool() -> Executor:
    """Where this process builds transcripts ahead: its one worker process when a core is spare
    (spawned, not forked: the flow process runs threads; started on first use and kept), else
    one background thread."""
    global _pool, _thread
    with _pool_lock:
        if _pool is not None:
            return _pool
        if spare_cores() >= 1:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
            _pool.submit(_warm)
            return _pool
        if _thread is None:
            _thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="transcripts")
        return _thread


class TranscriptPrefetch:
    """Transcripts of `claims`, at most `ahead` built and not yet taken (bounds the memory a
    batch of large rollouts holds), in claim order."""

    def __init__(self, claims: list[Stage1Claim], *, token_budget: int, ahead: int, executor: Executor | None) -> None:
        self._claims = list(claims)
        self._token_budget = token_budget
        self._ahead = max(1, ahead)
        self._executor = executor
        self._futures: dict[str, Future[MemoryTranscript]] = {}
        self._next = 0
        self._fill()

    def take(self, claim: Stage1Claim) -> MemoryTranscript | None:
        """The claim's transcript (waiting for it if needed), or None when it was not built
        ahead; then the next claims' builds are queued."""
        future = self._futures.pop(claim.ownership_token, None)
        self._fill()
        if future is None:
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
                self._futures[claim.ownership_token] = self._executor.submit(_build, claim.rollout_path, self._token_budget)
            except RuntimeError:  # the pool was shut down (interpreter exit): build in the task
                self._executor = None
                return
