"""Whether a memory's scope (a cwd, a project name, a summary heading) is about a working folder.

One rule shared by the read path (which summary sections to keep whole) and recall (which
memories rank first): a scope is about `cwd` when a path in it is `cwd` or one of its parents, or
when it names `cwd`'s last folder as a word. Pure string logic; the only environment read is the
home folder, so that `~` and the home folder itself never claim every project. Light on purpose:
the prompt hook imports it in a fresh process on every prompt.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

_PATH_TOKEN = re.compile(r"(?:~|/)[^\s`'\"()\[\],;]*")


def scope_matches_cwd(scope: str, cwd: str) -> bool:
    """Whether a summary scope heading is about `cwd`: the same folder, a parent, or its name."""
    working = _normalise_path(cwd)
    if working is not None:
        home = _home()
        for token in _PATH_TOKEN.findall(scope):
            scope_path = _normalise_path(token)
            # "/", "/home" or "~" alone would claim every project.
            if scope_path is None or scope_path == home or scope_path in home.parents or len(scope_path.parts) < 2:
                continue
            if working == scope_path or scope_path in working.parents:
                return True
    name = re.split(r"[\\/]", cwd.strip().rstrip("/\\"))[-1]
    if not name:
        return False
    word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", re.IGNORECASE)
    # A path in the scope counts by its last folder only: "/work/projects/atlas" is not "projects".
    named = _PATH_TOKEN.sub(lambda match: match.group(0).rstrip("/").rsplit("/", 1)[-1], scope.replace("`", ""))
    return word.search(named) is not None


def _normalise_path(text: str) -> PurePosixPath | None:
    cleaned = text.strip().strip("`").rstrip("/") or "/"
    if cleaned.startswith("~"):
        cleaned = str(_home()) + cleaned[1:]
    if not cleaned.startswith("/"):
        return None
    return PurePosixPath(cleaned)


def _home() -> PurePosixPath:
    return PurePosixPath(Path.home().as_posix())
