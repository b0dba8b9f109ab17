"""The garbage collector during the extraction map: `frozen_old_objects()`.

Why: a full (generation-2) collection walks every object the process holds. In a phase-1 run that
is Prefect, pydantic, SQLAlchemy, the openai client and the claimed transcripts; one such pass took
0.28-0.35 s, under the GIL, and every in-flight slot waited through it (the largest single stall
in `benchmarks/phase1_efficiency.py`'s slot turnaround, found with `gc.callbacks`). Inside the block
the objects that existed when it began are moved to the collector's permanent generation
(`gc.freeze()`), so collections during the map walk only what the map allocates; at the end they
go back (`gc.unfreeze()`) and are collected as usual, so nothing that became garbage meanwhile is
kept for good. Nested and concurrent blocks (a long-lived process may run two flows) share one
freeze: the first to enter freezes, the last to leave unfreezes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0


@contextmanager
def frozen_old_objects() -> Iterator[None]:
    global _holders
    with _lock:
        if _holders == 0:
            gc.freeze()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                gc.unfreeze()
