"""Entries that are named like rollouts but are not (issue 29): one place that plants each kind."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from codex_memories.ingest import rollout_files

NOT_A_FILE_KINDS = ("fifo", "symlink_to_dev_zero", "symlink_loop", "folder", "socket")


def plant(kind: str, path: Path) -> None:
    """Create a `kind` entry at `path`: one of `NOT_A_FILE_KINDS`, or `sparse_past_the_size_bound`
    (a regular file that claims more than `MAX_ROLLOUT_BYTES` without taking the disk)."""
    if kind == "fifo":
        os.mkfifo(path)  # with no writer, a blocking open waits for ever
    elif kind == "symlink_to_dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "symlink_loop":
        path.symlink_to(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        here = os.getcwd()
        os.chdir(path.parent)  # a socket's path must be short: bind it by its relative name
        try:
            with socket.socket(socket.AF_UNIX) as listener:
                listener.bind(path.name)
        finally:
            os.chdir(here)
    elif kind == "sparse_past_the_size_bound":
        with path.open("wb") as handle:
            handle.truncate(rollout_files.MAX_ROLLOUT_BYTES + 1)
    else:
        raise ValueError(f"unknown kind {kind!r}")
