"""One rooted folder over a local directory or an fsspec URL (`s3://bucket/prefix`, `memory://…`).

Contract:
- Every file access of phase 2 goes through a `MemoryRoot`. Paths are relative POSIX paths
  (`rollout_summaries/x.md`); absolute paths, `..`, `.`, empty segments and backslashes are a
  `UnsafePathError` (defined in `codex_memories.sandbox`). Directory operations take `None` for
  the root itself.
- Writes are atomic: a local write goes to a temporary file in the same folder and is renamed
  over the target (an existing file keeps its permission bits); an object-store write is a single
  PUT. `create_new_*` is an exclusive create (`O_EXCL` locally, `If-None-Match: *` on S3) and
  raises `FileExistsError` when anything is already there. `write_if_changed` writes only when
  the bytes differ.
- Symlinks and hard links are hazards, not content. A local root does all its I/O through one
  `sandbox.SandboxedFolder` (descriptor-relative opens with `O_NOFOLLOW` on every component): no
  operation goes through a symlinked folder (`UnsafePathError`), reads and writes refuse a
  symlinked file and a regular file with more than one hard link, `walk_files` and `file_sizes`
  skip links without following them, and `delete` removes the link, never its target. Object
  stores have no links.
- `exists` is true for any entry, including a dangling symlink; `is_file`/`is_dir` mean a regular
  file / a real directory.
- `check_writable()` creates and deletes a probe file under `.codex-memories/`: the one test a
  command runs before it changes anything, so a read-only folder fails first (`MemoryRootNotWritable`,
  a sentence naming the folder), never after the state DB changed.
- Internal bookkeeping (`.git/` and `.codex-memories/`, which holds an object-store root's git
  baseline, the forget ledger and the state DB binding) is excluded from `walk_files`/`file_sizes` unless `exclude_internal=False`.

Git needs a local working tree, so an object-store root is worked on through a `LocalWorkspace`:
`pull` downloads the memory files into an empty scratch directory and unpacks the baseline
archive (`.codex-memories/baseline.tar`: the `.git` directory plus the list of executable files,
since object stores keep no permission bits) next to them; `push` uploads the files whose bytes
changed since the pull, deletes the ones removed locally and uploads the baseline archive last.
The files go up before the baseline, so a push interrupted half way leaves files that differ from
the old baseline: the next phase 2 sees them as changes and consolidates again; nothing is lost.
For a local root phase 2 uses `memory_folder.staging.StagedWorkspace` (a staging copy beside the
live folder, published in one step); a plain `LocalWorkspace` over a local root is the root itself
and its pull/push do nothing. Pull and push assume
the caller holds the phase-2 lock (no other writer). Both may be retried after a transient error
(`is_transient_storage_error`): a second `pull` starts again from an empty mirror, a second `push`
uploads again what the first one may not have.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import secrets
import shutil
import stat
import tarfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import fsspec

from codex_memories.paths import GIT_DIR, WORKSPACE_STATE_DIR, baseline_archive_path, local_memory_folder
from codex_memories.sandbox import FolderEntry, SandboxedFolder, UnsafePathError, check_relative_path, sync_filesystems

EntryKind = Literal["file", "dir", "symlink"]

INTERNAL_DIRS = frozenset({GIT_DIR, WORKSPACE_STATE_DIR})
# The folder's own history, which no reset, rebuild or consolidation deletes: the forget ledger
# (`forget.ledger`) and the state DB the folder is bound to (`memory_folder.identity`).
FORGET_LEDGER_PATH = f"{WORKSPACE_STATE_DIR}/forgotten.json"
STATE_BINDING_PATH = f"{WORKSPACE_STATE_DIR}/state-binding.json"
FOLDER_HISTORY_PATHS = (FORGET_LEDGER_PATH, STATE_BINDING_PATH)
_EXECUTABLES_MEMBER = "executables.json"


class MemoryRootNotWritable(OSError):
    """The memory root refuses writes (read-only mount, permissions, a refused bucket)."""


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    kind: EntryKind


def _join(parent: str | None, name: str) -> str:
    return name if parent is None else f"{parent}/{name}"


def _is_internal(relative_path: str) -> bool:
    return relative_path.split("/", 1)[0] in INTERNAL_DIRS


class MemoryRoot(ABC):
    """A folder every memory file lives under; see the module docstring for the contract."""

    @property
    @abstractmethod
    def url(self) -> str: ...

    @property
    @abstractmethod
    def local_path(self) -> Path | None:
        """The directory on local disk, or None for an object store."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes: ...

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None: ...

    @abstractmethod
    def create_new_bytes(self, path: str, data: bytes) -> None: ...

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def is_file(self, path: str) -> bool: ...

    @abstractmethod
    def is_dir(self, path: str | None) -> bool: ...

    @abstractmethod
    def is_symlink(self, path: str) -> bool: ...

    @abstractmethod
    def list_dir(self, path: str | None = None) -> list[Entry]:
        """Direct children sorted by name; `FileNotFoundError` when the folder is missing."""

    @abstractmethod
    def file_sizes(self, exclude_internal: bool = True) -> dict[str, int]:
        """Every regular file under the root (symlinks neither listed nor followed) → size in bytes."""

    @abstractmethod
    def delete(self, path: str, missing_ok: bool = False) -> None:
        """Delete a file or a symlink (never a directory)."""

    @abstractmethod
    def delete_tree(self, path: str, missing_ok: bool = True) -> None:
        """Delete a directory and everything under it (a symlink is unlinked, not followed)."""

    @abstractmethod
    def makedirs(self, path: str) -> None: ...

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def create_new_text(self, path: str, text: str) -> None:
        self.create_new_bytes(path, text.encode("utf-8"))

    def write_if_changed(self, path: str, data: bytes, *, durable: bool = True) -> bool:
        """Write `data` unless the file already holds exactly these bytes; True when written.

        `durable=False` (local roots): no fsync per file; the batch ends with `flush()`. An
        object store ignores it: an upload that returned is stored."""
        if self.is_file(path) and self.read_bytes(path) == data:
            return False
        self.write_bytes(path, data)
        return True

    def flush(self) -> None:
        """Make every `durable=False` write so far durable; nothing to do for an object store."""

    def check_writable(self) -> None:
        """`MemoryRootNotWritable` unless a file can be created and deleted in the root's
        bookkeeping folder (made when missing, with the root itself): a command that will write
        the folder asks first, before it changes anything anywhere else (issue 36)."""
        probe = f"{WORKSPACE_STATE_DIR}/.write-check-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            self.makedirs(WORKSPACE_STATE_DIR)
            self.write_bytes(probe, b"")
            self.delete(probe, missing_ok=True)
        except (OSError, UnsafePathError) as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            raise MemoryRootNotWritable(f"the memory folder {self.url} cannot be written ({reason}); nothing was changed") from error

    def walk_files(self, exclude_git: bool = True) -> list[str]:
        """Relative paths of every regular file, sorted; `.git/` and `.codex-memories/` excluded by default."""
        return sorted(self.file_sizes(exclude_internal=exclude_git))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class LocalMemoryRoot(MemoryRoot):
    """A local directory, every access through one `SandboxedFolder` (no symlink followed below the root)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        # Deliberately not resolved: callers must be able to see that the root itself is a symlink.
        self._directory = Path(os.path.abspath(directory))
        self.folder = SandboxedFolder(self._directory)

    @property
    def url(self) -> str:
        return self._directory.as_uri()

    @property
    def local_path(self) -> Path:
        return self._directory

    def read_bytes(self, path: str) -> bytes:
        return self.folder.read_bytes(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.folder.write_bytes(path, data)

    def write_if_changed(self, path: str, data: bytes, *, durable: bool = True) -> bool:
        return self.folder.write_if_changed(path, data, durable=durable)

    def flush(self) -> None:
        sync_filesystems()

    def create_new_bytes(self, path: str, data: bytes) -> None:
        self.folder.create_new_bytes(path, data)

    def exists(self, path: str) -> bool:
        return self.folder.kind(check_relative_path(path)) is not None

    def is_file(self, path: str) -> bool:
        return self.folder.kind(check_relative_path(path)) == "file"

    def is_dir(self, path: str | None) -> bool:
        return self.folder.kind(None if path is None else check_relative_path(path)) == "dir"

    def is_symlink(self, path: str) -> bool:
        return self.folder.kind(check_relative_path(path)) == "symlink"

    def list_dir(self, path: str | None = None) -> list[Entry]:
        return [
            Entry(item.name, item.path, "file" if item.kind == "other" else item.kind)
            for item in self.folder.list_dir(path)
        ]

    def file_sizes(self, exclude_internal: bool = True) -> dict[str, int]:
        def skip(entry: FolderEntry) -> bool:
            return exclude_internal and entry.kind == "dir" and entry.path in INTERNAL_DIRS

        return {entry.path: entry.size for entry in self.folder.walk(skip=skip) if entry.kind == "file"}

    def delete(self, path: str, missing_ok: bool = False) -> None:
        self.folder.delete(path, missing_ok=missing_ok)

    def delete_tree(self, path: str, missing_ok: bool = True) -> None:
        self.folder.delete_tree(path, missing_ok=missing_ok)

    def makedirs(self, path: str) -> None:
        self.folder.makedirs(check_relative_path(path))


class FsspecMemoryRoot(MemoryRoot):
    """An object store (or any fsspec filesystem without symlinks) seen through fsspec."""

    def __init__(self, url: str, **storage_options) -> None:
        filesystem, root = fsspec.core.url_to_fs(url, **storage_options)
        self._fs = filesystem
        self._root = root.rstrip("/")
        self._url = url.rstrip("/")

    @property
    def url(self) -> str:
        return self._url

    @property
    def local_path(self) -> None:
        return None

    def _full(self, path: str | None) -> str:
        return self._root if path is None else f"{self._root}/{check_relative_path(path)}"

    def _relative(self, full: str) -> str:
        stripped = self._fs._strip_protocol(full)
        prefix = self._root + "/"
        if not stripped.startswith(prefix):
            raise UnsafePathError(f"listed path {full!r} is outside {self._root!r}")
        return stripped[len(prefix):]

    def read_bytes(self, path: str) -> bytes:
        return self._fs.cat_file(self._full(path))

    def write_bytes(self, path: str, data: bytes) -> None:
        self._fs.pipe_file(self._full(path), data)

    def create_new_bytes(self, path: str, data: bytes) -> None:
        with self._fs.open(self._full(path), "xb") as handle:
            handle.write(data)

    def exists(self, path: str) -> bool:
        return self._fs.exists(self._full(path))

    def is_file(self, path: str) -> bool:
        return self._fs.isfile(self._full(path))

    def is_dir(self, path: str | None) -> bool:
        return self._fs.isdir(self._full(path))

    def is_symlink(self, path: str) -> bool:
        check_relative_path(path)
        return False

    def list_dir(self, path: str | None = None) -> list[Entry]:
        full = self._full(path)
        if not self._fs.isdir(full):
            raise FileNotFoundError(errno.ENOENT, "no such directory", full)
        entries = []
        for info in self._fs.ls(full, detail=True, refresh=True):
            name = self._relative(info["name"]).rsplit("/", 1)[-1]
            kind: EntryKind = "dir" if info["type"] == "directory" else "file"
            entries.append(Entry(name, _join(path, name), kind))
        return sorted(entries, key=lambda entry: entry.name)

    def file_sizes(self, exclude_internal: bool = True) -> dict[str, int]:
        if not self._fs.isdir(self._root):
            return {}
        sizes = {}
        for full, info in self._fs.find(self._root, detail=True, withdirs=False).items():
            relative = self._relative(full)
            if exclude_internal and _is_internal(relative):
                continue
            sizes[relative] = int(info.get("size") or 0)
        return sizes

    def delete(self, path: str, missing_ok: bool = False) -> None:
        full = self._full(path)
        if self._fs.isdir(full) and not self._fs.isfile(full):
            raise IsADirectoryError(errno.EISDIR, "is a directory", full)
        try:
            self._fs.rm_file(full)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def delete_tree(self, path: str, missing_ok: bool = True) -> None:
        full = self._full(path)
        if not self._fs.exists(full):
            if missing_ok:
                return
            raise FileNotFoundError(errno.ENOENT, "no such directory", full)
        self._fs.rm(full, recursive=True)

    def makedirs(self, path: str) -> None:
        self._fs.makedirs(self._full(path), exist_ok=True)


def object_store_options(url: str, *, s3_endpoint_url: str | None) -> dict[str, object]:
    """fsspec storage options for `url`: the endpoint of an S3-compatible store, nothing else.

    Credentials are deliberately absent: s3fs (botocore) reads them from the standard AWS
    environment variables and config files, so they never pass through our settings, flow
    parameters or logs.
    """
    if url.startswith(("s3://", "s3a://")) and s3_endpoint_url:
        return {"client_kwargs": {"endpoint_url": s3_endpoint_url}}
    return {}


# Errors that say "the request never got an answer" rather than "the answer was no": worth a
# task retry with backoff. Missing files, refused permissions and unsafe paths are final.
_FINAL_OS_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)


def is_transient_storage_error(error: BaseException) -> bool:
    """Whether an object-store call that raised `error` may succeed if simply tried again."""
    try:
        from botocore.exceptions import ConnectionError as BotocoreConnectionError
        from botocore.exceptions import HTTPClientError
    except ImportError:  # no botocore: only plain OS errors can be transient
        transient_botocore: tuple[type[BaseException], ...] = ()
    else:
        transient_botocore = (BotocoreConnectionError, HTTPClientError)
    if isinstance(error, transient_botocore):
        return True
    return isinstance(error, OSError) and not isinstance(error, _FINAL_OS_ERRORS)


# What a library function that works on the memory folder accepts: the opened root, or a local
# path or URL `open_memory_root` opens.
RootLike = MemoryRoot | str | os.PathLike[str]


def open_memory_root(url_or_path: RootLike, **storage_options) -> MemoryRoot:
    """A `MemoryRoot` for a local path, a `file://` URL or any other fsspec URL.

    `storage_options` go to fsspec (`object_store_options` builds them from our settings)."""
    if isinstance(url_or_path, MemoryRoot):
        return url_or_path
    if isinstance(url_or_path, os.PathLike):
        return LocalMemoryRoot(url_or_path)
    local = local_memory_folder(url_or_path)
    return LocalMemoryRoot(local) if local is not None else FsspecMemoryRoot(url_or_path, **storage_options)


# --------------------------------------------------------------------------------------------
# Local workspace for object-store roots


@dataclass(frozen=True)
class WorkspaceSnapshot:
    """What `pull` downloaded: relative path → SHA-256 of the bytes, so `push` uploads only changes."""

    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PushResult:
    uploaded: list[str]
    deleted: list[str]
    baseline_uploaded: bool
    # What the root holds now, so a later push from the same directory uploads only new changes.
    snapshot: WorkspaceSnapshot = field(default_factory=WorkspaceSnapshot)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pull(root: MemoryRoot, local_dir: Path) -> WorkspaceSnapshot:
    """Mirror `root` into the empty (or missing) `local_dir`, with its git baseline unpacked."""
    local_dir = Path(local_dir)
    local_dir.mkdir(parents=True, exist_ok=True)
    if any(local_dir.iterdir()):
        raise FileExistsError(errno.EEXIST, "workspace directory is not empty", str(local_dir))
    mirror = LocalMemoryRoot(local_dir)
    hashes = {}
    for path in root.walk_files(exclude_git=True):
        data = root.read_bytes(path)
        mirror.write_bytes(path, data)
        hashes[path] = _sha256(data)
    archive_path = baseline_archive_path()
    if root.is_file(archive_path):
        _unpack_baseline(root.read_bytes(archive_path), local_dir)
    # The folder's history comes along (phase 2's sync honours the forget ledger); `push` never
    # sends it back (bookkeeping is not walked), so only a forget or a binding writes it.
    for path in FOLDER_HISTORY_PATHS:
        if root.is_file(path):
            mirror.write_bytes(path, root.read_bytes(path))
    return WorkspaceSnapshot(files=hashes)


def push(local_dir: Path, root: MemoryRoot, snapshot: WorkspaceSnapshot) -> PushResult:
    """Publish `local_dir` to `root`: changed files, then deletions, then the baseline archive."""
    mirror = LocalMemoryRoot(local_dir)
    current = mirror.walk_files(exclude_git=True)
    uploaded = []
    hashes = {}
    for path in current:
        data = mirror.read_bytes(path)
        hashes[path] = _sha256(data)
        if snapshot.files.get(path) != hashes[path]:
            root.write_bytes(path, data)
            uploaded.append(path)
    present = set(current)
    deleted = sorted(path for path in snapshot.files if path not in present)
    for path in deleted:
        root.delete(path, missing_ok=True)
    baseline_uploaded = False
    if (Path(local_dir) / GIT_DIR).is_dir():
        root.write_bytes(baseline_archive_path(), _pack_baseline(Path(local_dir), current))
        baseline_uploaded = True
    return PushResult(
        uploaded=uploaded,
        deleted=deleted,
        baseline_uploaded=baseline_uploaded,
        snapshot=WorkspaceSnapshot(files=hashes),
    )


def _pack_baseline(local_dir: Path, files: list[str]) -> bytes:
    executables = [path for path in files if os.stat(local_dir / path).st_mode & stat.S_IXUSR]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(local_dir / GIT_DIR, arcname=GIT_DIR, recursive=True)
        listing = json.dumps(sorted(executables)).encode("utf-8")
        info = tarfile.TarInfo(_EXECUTABLES_MEMBER)
        info.size = len(listing)
        archive.addfile(info, io.BytesIO(listing))
    return buffer.getvalue()


def _unpack_baseline(data: bytes, local_dir: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        git_members = [member for member in archive.getmembers() if member.name == GIT_DIR or member.name.startswith(GIT_DIR + "/")]
        # The "data" filter refuses absolute paths, links out of the tree and device files.
        archive.extractall(local_dir, members=git_members, filter="data")
        listing = archive.extractfile(_EXECUTABLES_MEMBER) if _EXECUTABLES_MEMBER in archive.getnames() else None
        executables = json.loads(listing.read().decode("utf-8")) if listing is not None else []
    mirror = LocalMemoryRoot(local_dir)
    for path in executables:
        if mirror.is_file(path):
            target = local_dir / path
            os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class LocalWorkspace:
    """The local directory phase 2 runs git and the agent in: the root itself, or a mirror of it."""

    def __init__(self, root: MemoryRoot, scratch_dir: Path | None = None) -> None:
        self.root = root
        local = root.local_path
        if local is not None:
            self.path = local
            self.is_mirror = False
        else:
            if scratch_dir is None:
                raise ValueError(f"{root.url} is not local: a scratch directory is needed for its workspace")
            self.path = Path(scratch_dir)
            self.is_mirror = True
        self._snapshot: WorkspaceSnapshot | None = None
        self._pull_started = False
        # Symlinks a staging copy left out (a mirror has none: object stores keep no links).
        self.skipped_links: list[str] = []
        # Whether this run's copy went live (set by `StagedWorkspace`'s publish only).
        self.published = False

    @property
    def writable(self) -> bool:
        """Whether phase 2 may write `path` now (a mirror is always its own copy)."""
        return True

    def stage(self) -> None:
        """Make `path` a copy this run may write; see `memory_folder.staging.StagedWorkspace`."""

    def discard(self) -> None:
        """Drop what this run did not publish (a mirror is removed by whoever made its directory)."""

    def changed_meanwhile(self) -> list[str]:
        """Files of the live folder that changed since this run copied it: none for a root worked
        on in place or through a mirror (see `memory_folder.staging.StagedWorkspace`)."""
        return []

    def pull(self) -> None:
        if not self.is_mirror:
            return
        if self._pull_started and self._snapshot is None and self.path.exists():
            # A pull that failed half way (an object-store hiccup) is retried from scratch: the
            # directory is our own partial mirror, never the user's files.
            shutil.rmtree(self.path)
        self._pull_started = True
        self._snapshot = pull(self.root, self.path)

    def push(self) -> PushResult:
        if not self.is_mirror:
            return PushResult(uploaded=[], deleted=[], baseline_uploaded=False)
        if self._snapshot is None:
            raise RuntimeError("push before pull: the workspace does not know what the root held")
        result = push(self.path, self.root, self._snapshot)
        self._snapshot = result.snapshot
        return result
