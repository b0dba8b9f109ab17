"""The CLI's one way to report a problem: one line on stderr, then an exit code.

A user error exits with 1; a bad setting (`SettingsError`) with 2, before anything is written.
No traceback unless `CODEX_MEMORIES_DEBUG` is set.
"""

from __future__ import annotations

import re
import sys
from typing import NoReturn

EXIT_USER_ERROR = 1
EXIT_BAD_SETTING = 2

_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")


def say_error(message: str) -> None:
    """One line on stderr: no wrapping, no markup, whatever the terminal width, and whatever
    the message holds (a database driver's spans three lines, click's wraps its own)."""
    # Only the line breaks and the blanks around them: a path with two spaces stays as it is.
    print("codex-memories: " + _LINE_BREAK.sub(" ", message.strip()), file=sys.stderr)


def fail(message: str, code: int = EXIT_USER_ERROR) -> NoReturn:
    # Imported here: `recall`'s fast path (codex_memories_cli/launcher.py) reports errors through
    # `say_error` without paying for typer.
    import typer

    say_error(message)
    raise typer.Exit(code)
