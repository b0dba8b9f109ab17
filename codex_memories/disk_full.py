"""A full disk (or a spent quota), recognised whichever layer reports it.

A write that finds no space fails as an `OSError` (ENOSPC, EDQUOT) from our own writes, as
SQLite's `database or disk is full`, as PostgreSQL's SQLSTATE 53100, or in git's stderr; each
layer wraps it in its own exception. `disk_full_cause(error)` looks through an exception and
everything it was raised from and returns the system's own words for it (`No space left on
device`), or None when the error is something else. The callers turn that into one clear line
instead of a traceback (phase 2's stage runner, the CLI, the log filter of the flows).

`LIVE_FOLDER_UNTOUCHED` is why a full disk costs no memory: phase 1 never writes the memory
folder, and phase 2 writes a copy of it and makes the copy live only once it is complete.
Pure; no I/O.
"""

from __future__ import annotations

import errno
import os

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# What the layers that do not raise an OSError say (SQLite, git, PostgreSQL's server message).
_DISK_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "database or disk is full")
_POSTGRES_DISK_FULL_SQLSTATE = "53100"
# An exception chain is short; a cycle (an exception raised from itself) must not loop for ever.
_MAX_CHAIN = 32

LIVE_FOLDER_UNTOUCHED = (
    "the live memory folder is untouched (phase 1 never writes it; phase 2 writes a copy and makes "
    "it live only when it is complete)"
)


def disk_full_cause(error: BaseException) -> str | None:
    current: BaseException | None = error
    for _ in range(_MAX_CHAIN):
        if current is None:
            return None
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return current.strerror or os.strerror(current.errno)
        if getattr(current, "sqlstate", None) == _POSTGRES_DISK_FULL_SQLSTATE:
            return "the database server's disk is full"
        text = str(current)
        for words in _DISK_FULL_WORDS:
            if words in text:
                return words
        current = current.__cause__ or current.__context__
    return None


def disk_full_line(cause: str, where: str, consequence: str) -> str:
    """One line: what ran out of space, where (may be empty), what that means for the user's data."""
    where = f" {where}" if where else ""
    return f"the disk is full ({cause}){where}; {consequence}. Free some space and run it again"
