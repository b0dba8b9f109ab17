"""The CLI's one way to report a problem: one line on stderr, then an exit code.

A user error exits with 1; a bad setting (`SettingsError`) with 2, before anything is written.
No traceback unless `CODEX_MEMORIES_DEBUG` is set; an error nothing else described becomes one
sentence (`error_sentence`): the path of a failed file operation, the extra that installs a
missing module.
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


DEBUG_HINT = "set CODEX_MEMORIES_DEBUG=1 for the traceback"


def error_sentence(error: BaseException) -> str:
    """What a person reads when a command stops on an error nothing else described: a sentence
    with the path or the module, never a bare exception name (`ModuleNotFoundError: psycopg`)."""
    if isinstance(error, ModuleNotFoundError):
        from codex_memories.state.db import install_hint

        return f"the Python module {error.name!r} is not installed: {install_hint(error.name)}"
    if isinstance(error, OSError) and error.filename is not None:
        where = str(error.filename) + (f" -> {error.filename2}" if error.filename2 is not None else "")
        return f"cannot use {where}: {error.strerror or error} ({DEBUG_HINT})"
    database_problem = _database_problem(error)
    if database_problem is not None:
        return f"cannot use the state database: {database_problem} ({DEBUG_HINT})"
    message = str(error).strip()
    if not message:
        return f"the command stopped on an unexpected error ({type(error).__name__}, no message; {DEBUG_HINT})"
    return f"{message} ({DEBUG_HINT})"


def _database_problem(error: BaseException) -> str | None:
    """The driver's own words for a failed database call, without SQLAlchemy's wrapping (the
    driver's class in brackets, the statement, a link to its error page), or None when the error
    is not one. SQLAlchemy is looked up, not imported: a command that never opened a database
    does not pay for it here."""
    sqlalchemy_errors = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy_errors is None or not isinstance(error, sqlalchemy_errors.DBAPIError):
        return None
    said = str(error.orig).strip() if error.orig is not None else ""
    return said or type(error.orig or error).__name__


def fail(message: str, code: int = EXIT_USER_ERROR) -> NoReturn:
    # Imported here: `recall`'s fast path (codex_memories_cli/launcher.py) reports errors through
    # `say_error` without paying for typer.
    import typer

    say_error(message)
    raise typer.Exit(code)
