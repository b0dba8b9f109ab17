"""The CLI's one way to report a problem: one line on stderr, then an exit code.

A user error exits with 1; a bad setting (`SettingsError`) with 2, before anything is written.
No traceback unless `CODEX_MEMORIES_DEBUG` is set.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

EXIT_USER_ERROR = 1
EXIT_BAD_SETTING = 2


def say_error(message: str) -> None:
    """One line on stderr: no wrapping, no markup, whatever the terminal width."""
    print(f"codex-memories: {message}", file=sys.stderr)


def fail(message: str, code: int = EXIT_USER_ERROR) -> NoReturn:
    say_error(message)
    raise typer.Exit(code)
