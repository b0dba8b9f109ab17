"""Starting the hooks' background work: a detached Python child that outlives the hook.

Contract:
- `start_detached(module, arguments, db_url=None, payload=None)` starts
  `python -P -m <module> <arguments>` with this interpreter, in its own session (so it outlives
  the hook and Codex's process group), stdout and stderr discarded (it logs its own outcome), and
  returns its pid; `OSError` when it cannot start. `-P`: the session's folder (the hook's cwd)
  never shadows our modules.
- `db_url`, when given, reaches the child in its environment (`CODEX_MEMORIES_DB_URL`, readable by
  this user only), never on its command line (readable by every user through `ps`): it may hold a
  password. `payload`, when given, is written to the child's stdin, which is then closed.
- Standard library only: every hook may import it.
"""

from __future__ import annotations

import os
import subprocess
import sys

DB_URL_VARIABLE = "CODEX_MEMORIES_DB_URL"


def start_detached(module: str, arguments: list[str], *, db_url: str | None = None, payload: bytes | None = None) -> int:
    environment = dict(os.environ)
    if db_url is not None:
        environment[DB_URL_VARIABLE] = db_url
    child = subprocess.Popen(
        [sys.executable, "-P", "-m", module, *arguments],
        stdin=subprocess.PIPE if payload is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, start_new_session=True, close_fds=True,
    )
    if payload is not None:
        with child.stdin as pipe:  # type: ignore[union-attr] - stdin=PIPE: never None
            pipe.write(payload)
    return child.pid
