"""Scopes: whether a memory (a cwd, a project name, a summary heading) is about a working folder,
and the key of the project a session or a directory belongs to (see "project keys" below).

One rule shared by the read path (which summary sections to keep whole) and recall (which
memories rank first): a scope is about `cwd` when a path in it is `cwd` or one of its parents, or
when it names `cwd`'s last folder as a word. Pure string logic; the only environment read is the
home folder, so that `~` and the home folder itself never claim every project. Project keys read a
repository's `.git/config` at most, never a git process, and, when that yields no origin (a
folder moved, mounted elsewhere or opened in a container, or a `.git` that is gone), the map of
folders to projects that phase 1 records from the sessions' own git records
(`$CODEX_HOME/codex-memories/project-keys.json`, see "recorded project keys" below). Light on
purpose: the prompt hook imports it in a fresh process on every prompt.
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote

from codex_memories import paths
from codex_memories.local_files import write_text_atomically
from codex_memories.settings_sources import DEFAULT_CODEX_HOME, env_value

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


# -- project keys -------------------------------------------------------------------------------
#
# A project-level memory belongs to one repository. Its key is what every clone of that repository
# agrees on: the normalised git origin (host and path, lower-case host, no scheme, no credentials,
# no `.git`), so `git@github.com:Org/Repo.git` and `https://user:token@github.com/Org/Repo` are one
# project. Without an origin the key is the repository root, and without a repository the cwd.

_SCP_REMOTE = re.compile(r"^(?:[\w.+-]*@)?(?P<host>[\w.-]+):(?!//)(?P<path>.+)$")
_URL_REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^/@]*@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$", re.IGNORECASE)
# Redaction may already have replaced a token in a stored origin; the marker is not part of a key.
# The `@` after it stays: it ends the credentials (`https://user:[REDACTED]@host/...`).
_REDACTION_MARKER = re.compile(r"\[REDACTED[^\]]*\]")


def normalise_git_origin(url: str | None) -> str | None:
    """`host/owner/repo` for a git remote URL (https, ssh, scp-like, git://), or None when `url`
    names no remote host (a local path, a file:// URL, empty)."""
    if not url:
        return None
    text = _REDACTION_MARKER.sub("", url.strip())
    match = _URL_REMOTE.match(text) or _SCP_REMOTE.match(text)
    if match is None or text.lower().startswith("file:"):
        return None
    path = match.group("path").strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = path.strip("/")
    if not path:
        return None
    return f"{match.group('host').lower()}/{path}"


def project_key(*, git_origin_url: str | None = None, repository_root: str | None = None, cwd: str | None = None) -> str | None:
    """The key of the project a session or a directory belongs to: the normalised origin, else the
    repository root, else the cwd (paths without a trailing slash); None when nothing is known."""
    origin = normalise_git_origin(git_origin_url)
    if origin is not None:
        return origin
    for path in (repository_root, cwd):
        if path and path.strip():
            return path.strip().rstrip("/") or "/"
    return None


def project_key_for_directory(directory: str | Path, *, recorded: Mapping[str, str] | None = None) -> str | None:
    """The project key of a directory on this machine: its repository's origin (read from the
    repository's `config` file, no git process: the prompt hook calls this on every prompt), else
    the project the sessions recorded for it or its nearest recorded parent (`recorded`, default:
    the map phase 1 wrote for the Codex home of this environment), else the repository root, else
    the directory itself."""
    start = Path(directory).expanduser().absolute()
    root = _repository_root(start)
    origin = _origin_from_config(root) if root is not None else None
    if origin is None:
        known = recorded_project_key(start, recorded if recorded is not None else default_recorded_project_keys())
        if known is not None:
            return known
    return project_key(git_origin_url=origin, repository_root=str(root) if root else None, cwd=str(start))


def project_folder(directory: str | Path) -> Path:
    """The folder a project lives in on this machine: the repository root above `directory`, else
    `directory` itself (absolute). The team memory file and AGENTS.md are looked up there."""
    start = Path(directory).expanduser().absolute()
    return _repository_root(start) or start


def _repository_root(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except OSError:
            continue  # a name no file system holds (past 255 bytes): no repository there
    return None


_REMOTE_SECTION = re.compile(r'^\s*\[\s*remote\s+"(?P<name>[^"]+)"\s*\]\s*$')
_SECTION = re.compile(r"^\s*\[")
_URL_KEY = re.compile(r"^\s*url\s*=\s*(?P<url>.+?)\s*$", re.IGNORECASE)


def _origin_from_config(root: Path) -> str | None:
    """`remote.origin.url` (else the first remote's url) of the repository at `root`; a worktree's
    or submodule's `.git` file points at its git dir with `gitdir: ...`."""
    git_path = root / ".git"
    try:
        if git_path.is_file():
            pointer = git_path.read_text(encoding="utf-8", errors="replace").strip()
            if not pointer.startswith("gitdir:"):
                return None
            git_dir = (root / pointer[len("gitdir:") :].strip()).resolve()
            # A linked worktree's git dir holds `commondir`; the config lives there.
            common = git_dir / "commondir"
            if common.is_file():
                git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
        else:
            git_dir = git_path
        lines = (git_dir / "config").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None  # an unreadable repository is keyed by its root, never an error on the read path
    urls: dict[str, str] = {}
    remote: str | None = None
    for line in lines:
        section = _REMOTE_SECTION.match(line)
        if section:
            remote = section.group("name")
            continue
        if _SECTION.match(line):
            remote = None
            continue
        url = _URL_KEY.match(line)
        if remote is not None and url and remote not in urls:
            urls[remote] = url.group("url").strip('"')
    return urls.get("origin") or next(iter(urls.values()), None)


# -- recorded project keys ------------------------------------------------------------------------
#
# Rollouts record the session's `cwd` and, in a repository, `session_meta.git.repository_url`; the
# threads table keeps both. Phase 1 turns them into `{"version": 1, "keys": {<cwd>: <project
# key>}}`: for each absolute cwd, the origin key of its most recent session, when that session
# recorded one. A folder whose git config cannot be read is then still its project's.

RECORDED_PROJECT_KEYS_VERSION = 1


def recorded_project_keys(latest_origin_by_cwd: Mapping[str, str | None]) -> dict[str, str]:
    """cwd -> origin key, for each absolute cwd whose latest session recorded an origin."""
    keys: dict[str, str] = {}
    for cwd, origin in latest_origin_by_cwd.items():
        key = normalise_git_origin(origin)
        folder = cwd.strip().rstrip("/")
        if key is not None and folder.startswith("/"):
            keys[folder] = key
    return dict(sorted(keys.items()))


def write_recorded_project_keys(path: Path, keys: Mapping[str, str]) -> bool:
    """Write the map (atomically) unless the file already holds exactly it; True when written."""
    text = json.dumps({"version": RECORDED_PROJECT_KEYS_VERSION, "keys": dict(keys)}, indent=1, ensure_ascii=False) + "\n"
    try:
        unchanged = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        unchanged = False  # missing or unreadable: replaced by the map
    if not unchanged:
        write_text_atomically(path, text)
    return not unchanged


def read_recorded_project_keys(path: Path) -> dict[str, str]:
    """The map at `path`; empty when there is none or it is not the map (phase 1 rewrites it, and
    the read path must never fail on it). Re-read only when the file changed."""
    try:
        stat = path.stat()
    except OSError:
        return {}
    return dict(_load_recorded_project_keys(str(path), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=4)
def _load_recorded_project_keys(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[str, str], ...]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return ()
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, dict):
        return ()
    return tuple((folder, key) for folder, key in keys.items() if isinstance(folder, str) and isinstance(key, str))


def default_recorded_project_keys() -> dict[str, str]:
    """The map of this environment's Codex home (`CODEX_MEMORIES_CODEX_HOME`, `CODEX_HOME`, else
    `~/.codex`: the hooks run with Codex's environment, so this is the home Codex uses)."""
    home = env_value("codex_home", os.environ) or DEFAULT_CODEX_HOME
    return read_recorded_project_keys(paths.recorded_project_keys_path(home))


def recorded_project_key(directory: str | Path, keys: Mapping[str, str]) -> str | None:
    """The key recorded for `directory`, else for its nearest recorded parent below the home
    folder (a session in `~` itself must not claim every folder of the user); None without one."""
    if not keys:
        return None
    start = PurePosixPath(Path(directory).expanduser().absolute().as_posix())
    home = _home()
    parents = [parent for parent in start.parents if parent != home and parent not in home.parents]
    for candidate in (start, *parents):
        key = keys.get(str(candidate))
        if key is not None:
            return key
    return None


# -- memory scopes ------------------------------------------------------------------------------
#
# Every memory is user-level (it applies in every project) or project-level (only in the project
# whose key it carries). The consolidated files say which with a marker a reader of Codex's
# formats can ignore: `project=<key>` in a task group's `applies_to:` line, in a summary's
# `### project=<key>` index heading and after a preference bullet, and `user-level` headings for
# what applies everywhere. The read path keeps the current project's and the user-level ones.

USER_SCOPE = "user"
PROJECT_SCOPE = "project"
MEMORY_SCOPES = (USER_SCOPE, PROJECT_SCOPE)
USER_LEVEL_LABEL = "user-level (every project)"
PROJECT_MARKER_PREFIX = "project="
# A key never holds whitespace, `;`, `,`, `(` or `)`; those end the marker in running text.
_MARKER_SAFE = "/:@.-_~+!$&'*="
_PROJECT_MARKER = re.compile(r"(?<![\w-])project=(?P<key>[^\s;,()\[\]`]+)")


def project_marker(key: str) -> str:
    """`project=<key>`: how a file names the project a memory belongs to. Characters that would
    end the marker in running text (a space in a folder name, brackets) are percent-encoded."""
    return f"{PROJECT_MARKER_PREFIX}{quote(key, safe=_MARKER_SAFE)}"


def marked_project_key(text: str) -> str | None:
    """The key of the first `project=<key>` marker in `text`, or None when it has none."""
    match = _PROJECT_MARKER.search(text)
    return unquote(match.group("key").rstrip(".:")) if match else None


def project_keys_match(memory_key: str, session_key: str | None) -> bool:
    """Whether a project-level memory keyed `memory_key` belongs to the session's project.

    Origin keys must be equal (host lower-cased by the normaliser; paths compared as written).
    A path key (a repository without an origin, or a plain folder) also covers sessions in a
    folder below it: memory extracted in `/work/notes` applies in `/work/notes/drafts`."""
    if session_key is None:
        return False
    memory = memory_key.strip().rstrip("/") or "/"
    session = session_key.strip().rstrip("/") or "/"
    if memory == session:
        return True
    if memory.startswith("/") and session.startswith("/") and len(PurePosixPath(memory).parts) > 1:
        return PurePosixPath(memory) in PurePosixPath(session).parents
    return False


def text_is_for_other_project(text: str, session_key: str | None) -> bool:
    """True when `text` carries a project marker naming a project other than the session's."""
    key = marked_project_key(text)
    return key is not None and not project_keys_match(key, session_key)


# -- the repository's switch ------------------------------------------------------------------------
#
# A repository says what codex-memories may do with its sessions in a file it can commit,
# `.codex-memories.toml` (REPOSITORY_SWITCH_FILE), found in the session's folder or the nearest
# parent up to the repository root:
#
#     memories = "off"        # nothing extracted from sessions here, nothing injected here
#     memories = "user-only"  # nothing extracted from sessions here; only user-level memories injected
#     memories = "on"         # the default, as without the file
#
# Both restricting values stop extraction: a session in a repository that keeps its own memories
# out must not teach the memory anything (its lines could carry the repository's code, names or
# secrets into a user-level rule). A file that cannot be read or holds another value counts as
# "off": the repository asked for something, and we do not guess the less careful reading.

REPOSITORY_SWITCH_FILE = ".codex-memories.toml"
REPOSITORY_SWITCH_KEY = "memories"
MEMORIES_ON = "on"
MEMORIES_OFF = "off"
MEMORIES_USER_ONLY = "user-only"
REPOSITORY_SWITCH_VALUES = (MEMORIES_ON, MEMORIES_OFF, MEMORIES_USER_ONLY)


@dataclass(frozen=True)
class RepositorySwitch:
    """What the repository around a folder allows: `mode` is one of REPOSITORY_SWITCH_VALUES;
    `path` is the switch file (None without one); `problem` says why a file counted as "off"."""

    mode: str = MEMORIES_ON
    path: Path | None = None
    problem: str | None = None

    @property
    def extraction_allowed(self) -> bool:
        return self.mode == MEMORIES_ON

    @property
    def injection_allowed(self) -> bool:
        return self.mode != MEMORIES_OFF

    @property
    def project_memories_allowed(self) -> bool:
        return self.mode == MEMORIES_ON

    def describe(self) -> str:
        """One sentence for `show`, `status` and the hook log."""
        if self.path is None:
            return "no repository switch: memories on"
        said = {
            MEMORIES_ON: "memories on",
            MEMORIES_OFF: "memories off: nothing extracted from sessions here, nothing injected here",
            MEMORIES_USER_ONLY: "user-level memories only: nothing extracted from sessions here, only user-level memories injected",
        }[self.mode]
        return f"{self.path} says {said}" + (f" ({self.problem})" if self.problem else "")


def repository_switch(directory: str | Path | None) -> RepositorySwitch:
    """The switch that applies to a session in `directory`: the nearest `.codex-memories.toml` in
    it or a parent, up to its repository root (the folder alone outside a repository). A relative
    or missing folder has no switch (phase 1 and the hooks see absolute session folders)."""
    if not directory or not str(directory).strip():
        return RepositorySwitch()
    start = Path(directory).expanduser()
    if not start.is_absolute():
        return RepositorySwitch()
    root = _repository_root(start)
    candidates = [start] if root is None else [start, *[parent for parent in start.parents if root in parent.parents or parent == root]]
    for folder in candidates:
        path = folder / REPOSITORY_SWITCH_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                continue  # a folder name no file system holds cannot hold a switch file
            return RepositorySwitch(MEMORIES_OFF, path, f"unreadable, counted as off: {error}")
        except UnicodeDecodeError as error:
            return RepositorySwitch(MEMORIES_OFF, path, f"unreadable, counted as off: {error}")
        return _parse_switch(path, text)
    return RepositorySwitch()


def _parse_switch(path: Path, text: str) -> RepositorySwitch:
    import tomllib  # only a folder with a switch file pays for the parser

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return RepositorySwitch(MEMORIES_OFF, path, f"not TOML, counted as off: {error}")
    value = document.get(REPOSITORY_SWITCH_KEY, MEMORIES_ON)
    if value not in REPOSITORY_SWITCH_VALUES:
        allowed = ", ".join(f'"{mode}"' for mode in REPOSITORY_SWITCH_VALUES)
        return RepositorySwitch(MEMORIES_OFF, path, f"{REPOSITORY_SWITCH_KEY} = {value!r} is not one of {allowed}, counted as off")
    return RepositorySwitch(value, path)
