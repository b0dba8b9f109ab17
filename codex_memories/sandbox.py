"""One sandboxed local folder: the only code that opens, writes or deletes files under a memory root.

Every local caller (the storage backend, the consolidation agent's tools, the MCP memory tools,
ad-hoc notes, the consolidators and the workspace) goes through a `SandboxedFolder`; callers keep
only their policy (which names are read-only or hidden, what they may write, size caps).

Contract:
- Paths are relative POSIX paths. `check_relative_path` is the strict form the storage API takes
  (no empty, `.` or `..` segment, no leading `/`, no backslash or NUL); `split_relative_path` is the
  lenient form tool callers accept (`.` and empty segments dropped, `..`, absolute paths and drive
  prefixes refused, and so are a path over `MAX_PATH_BYTES`, a name over 255 bytes and a lone
  surrogate). Both raise `UnsafePathError`.
- No symlink is ever followed below the root. Each operation opens the root, then walks to the
  target one component at a time with `os.open(name, ... | O_NOFOLLOW, dir_fd=parent)`, so there
  is no window between a check and the open: a component swapped for a symlink half way makes the
  open fail (`SymlinkRefusedError`) instead of leaving the root. The root itself may be a symlink
  (users relocate `~/.codex`).
- A regular file with more than one hard link may be a second name for a file outside the root:
  it is refused for reading and for writing (`HardLinkRefusedError`). FIFOs, sockets and devices
  are refused (`SpecialFileRefusedError`); opening never blocks on a FIFO.
- `open_regular_descriptor` is that open on its own, for readers outside a folder (the rollout
  reader): regular files only, the last component never followed, never blocking.
- `write_bytes` is atomic: a temporary file in the same folder (created `O_EXCL | O_NOFOLLOW`),
  fsync, rename through the folder's descriptor, fsync of the folder. The new file keeps the
  permission bits of the file it replaces (minus the execute bits with `executable=False`); a new
  file gets the umask default, never an execute bit. Any failure removes the temporary file and
  leaves the old content in place. A symlink, folder or special file at the target is refused,
  never replaced or followed.
- `create_new_bytes` is an exclusive create (`O_EXCL | O_NOFOLLOW`, so a dangling symlink at the
  name counts as taken): `FileExistsError` when anything is there; a failed write removes the file.
- `write_if_changed` writes only when the bytes differ and says whether it wrote.
- `delete` unlinks a file or a symlink (never its target, never a folder); `delete_tree` removes a
  folder without following links inside it.
- `check_plain_name` is the name hygiene rule for names a caller lets an untrusted writer choose
  (control and format characters such as U+202E, compatibility look-alikes such as U+2025 or
  fullwidth dots, `:` (so `file:` and drive letters), `~`, characters Windows refuses, leading or
  trailing spaces, overlong names). The folder itself does not apply it: code-written names and
  names a user created are not the agent's to judge.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO, Literal

from codex_memories.storable import utf8_size

EntryKind = Literal["file", "dir", "symlink", "other"]

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted at the name must not hang; a regular file ignores it.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What open(..., O_NOFOLLOW) reports for a symlink: ELOOP on Linux and macOS, EMLINK on FreeBSD.
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_EXECUTE_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
_MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096  # PATH_MAX on Linux
_WINDOWS_RESERVED_CHARACTERS = frozenset('<>:"|?*\\')
# Unicode categories that draw nothing or reorder text: control, format (bidi overrides, zero
# widths), surrogates, private use, unassigned, line and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class UnsafePathError(ValueError):
    """A path that is not a plain relative path inside the root, or that reaches outside it."""


class SymlinkRefusedError(UnsafePathError):
    """A component of the path is a symlink; symlinks below the root are never followed."""


class HardLinkRefusedError(UnsafePathError):
    """The file has more than one hard link, so it may be a second name for a file outside the root."""


class SpecialFileRefusedError(UnsafePathError):
    """The path names a FIFO, socket or device, not a regular file."""


class UnsafeNameError(UnsafePathError):
    """A name a writer may not choose (see `check_plain_name`)."""


@dataclass(frozen=True)
class FolderEntry:
    """One directory entry, seen without following it."""

    name: str
    path: str
    kind: EntryKind
    size: int
    mtime_ns: int
    nlink: int


def check_relative_path(path: str) -> str:
    """The relative POSIX path unchanged, or `UnsafePathError` (strict: no `.`/empty segments)."""
    if not isinstance(path, str) or not path:
        raise UnsafePathError(f"path must be a non-empty relative path: {path!r}")
    if "\\" in path or "\x00" in path:
        raise UnsafePathError(f"path contains a backslash or NUL: {path!r}")
    if path.startswith("/"):
        raise UnsafePathError(f"path must be relative: {path!r}")
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        raise UnsafePathError(f"path has an empty, '.' or '..' segment: {path!r}")
    return path


def split_relative_path(path: str | None) -> list[str]:
    """The components of a tool-supplied path (`.` and empty segments dropped); `[]` is the root."""
    if path is None:
        return []
    if not isinstance(path, str):
        raise UnsafePathError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise UnsafePathError("paths must not contain NUL characters")
    # Bounded before anything is echoed or opened: the OS would answer ENAMETOOLONG, and a lone
    # surrogate (a JSON `\\ud800`) has no bytes to open at all.
    size = utf8_size(path)
    if size is None:
        raise UnsafePathError("path is not valid Unicode text (it holds a lone surrogate)")
    if size > MAX_PATH_BYTES:
        raise UnsafePathError(f"path is {size} bytes long; paths are at most {MAX_PATH_BYTES} bytes")
    if any(len(component.encode("utf-8")) > _MAX_NAME_BYTES for component in path.split("/")):
        raise UnsafePathError(f"a component of {path[:80]!r}... is longer than {_MAX_NAME_BYTES} bytes, the longest name a file can have")
    if "\\" in path:
        raise UnsafePathError(f"{path!r}: use '/' as the separator; backslashes are not allowed")
    windows = PureWindowsPath(path)
    if PurePosixPath(path).is_absolute() or windows.drive or windows.root:
        raise UnsafePathError(f"{path!r} is absolute; paths must be relative to the memory root")
    components = [component for component in path.split("/") if component not in ("", ".")]
    if ".." in components:
        raise UnsafePathError(f"{path!r} contains '..'; paths must stay inside the memory root")
    return components


def check_plain_name(name: str) -> None:
    """Raise `UnsafeNameError` unless `name` is one plain, visible, portable path component."""
    if not name or name in (".", ".."):
        raise UnsafeNameError(f"{name!r} is not a file or folder name")
    if len(name.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES:
        raise UnsafeNameError(f"{name[:40]!r}... is longer than {_MAX_NAME_BYTES} bytes")
    for character in name:
        if unicodedata.category(character) in _INVISIBLE_CATEGORIES:
            raise UnsafeNameError(f"{name!r} contains the invisible or control character U+{ord(character):04X}")
        if character in _WINDOWS_RESERVED_CHARACTERS or character in "/~":
            raise UnsafeNameError(f"{name!r} contains {character!r}, which names may not contain")
    if unicodedata.normalize("NFKC", name) != name:
        raise UnsafeNameError(
            f"{name!r} contains look-alike (compatibility) characters; write it as "
            f"{unicodedata.normalize('NFKC', name)!r} if that is what is meant"
        )
    if name != name.strip():
        raise UnsafeNameError(f"{name!r} starts or ends with whitespace")


def entry_kind(mode: int) -> EntryKind:
    """What an `lstat` mode is: a symlink, a folder, a regular file, or something else."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def _join(parent: str | None, name: str) -> str:
    return name if not parent else f"{parent}/{name}"


class SandboxedFolder:
    """A local directory every file operation stays inside; see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        # Not resolved: callers must be able to see that the root itself is a symlink.
        self.path = Path(os.path.abspath(directory))

    def __repr__(self) -> str:
        return f"SandboxedFolder({str(self.path)!r})"

    # -- descriptors ---------------------------------------------------------------------------

    def _open_root(self, *, create: bool) -> int:
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        return os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def _open_child_dir(self, parent_fd: int, name: str, shown: str, *, create: bool) -> int:
        """The descriptor of folder `name` inside `parent_fd`; never follows a symlink."""
        try:
            return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
        except OSError as error:
            self._raise_refusal(error, parent_fd, name, shown)
            raise
        # Another writer may create it in between: the open below decides what it is.
        with suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent_fd)
        try:
            return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent_fd)
        except OSError as error:
            self._raise_refusal(error, parent_fd, name, shown)
            raise

    @staticmethod
    def _raise_refusal(error: OSError, parent_fd: int, name: str, shown: str) -> None:
        if error.errno in _SYMLINK_ERRNOS or error.errno == errno.ENOTDIR:
            try:
                mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                raise SymlinkRefusedError(f"{shown!r} changed while it was opened (moved or swapped); refused") from None
            if stat.S_ISLNK(mode):
                raise SymlinkRefusedError(f"{shown!r} is a symlink; symlinks are never followed") from None
            if stat.S_ISDIR(mode):
                # Not a folder when opened, a folder now: a symlink was swapped in and out again.
                raise SymlinkRefusedError(f"{shown!r} changed while it was opened (a symlink swapped in); refused") from None
            if error.errno == errno.ENOTDIR:
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", shown) from None

    @contextmanager
    def _parent(self, path: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder holding the last component, that component's name)."""
        segments = check_relative_path(path).split("/")
        descriptor = self._open_root(create=create)
        try:
            for index, segment in enumerate(segments[:-1]):
                shown = "/".join(segments[: index + 1])
                child = self._open_child_dir(descriptor, segment, shown, create=create)
                os.close(descriptor)
                descriptor = child
            yield descriptor, segments[-1]
        finally:
            os.close(descriptor)

    @contextmanager
    def _directory(self, path: str | None, *, create: bool = False) -> Iterator[int]:
        if path is None:
            descriptor = self._open_root(create=create)
            try:
                yield descriptor
            finally:
                os.close(descriptor)
            return
        with self._parent(path, create=create) as (parent_fd, name):
            descriptor = self._open_child_dir(parent_fd, name, path, create=create)
            try:
                yield descriptor
            finally:
                os.close(descriptor)

    # -- inspection ----------------------------------------------------------------------------

    def lstat(self, path: str | None) -> os.stat_result | None:
        """The entry's own status (a symlink is not followed), or None when nothing is there.

        A symlinked folder on the way is `SymlinkRefusedError`; a file on the way is
        `NotADirectoryError`. `None` means the root itself (followed, it may be a symlink).
        """
        if path is None:
            try:
                return os.stat(self.path)
            except FileNotFoundError:
                return None
        try:
            with self._parent(path) as (parent_fd, name):
                return os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def kind(self, path: str | None) -> EntryKind | None:
        status = self.lstat(path)
        return None if status is None else entry_kind(status.st_mode)

    def list_dir(self, path: str | None = None) -> list[FolderEntry]:
        """Direct children sorted by name (UTF-8 bytes); `FileNotFoundError` when the folder is missing."""
        with self._directory(path) as descriptor:
            return self._scan(descriptor, path)

    @staticmethod
    def _scan(descriptor: int, relative: str | None) -> list[FolderEntry]:
        entries = []
        with os.scandir(descriptor) as scan:
            for item in scan:
                try:
                    status = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed between the scan and the stat: it is not there any more
                entries.append(
                    FolderEntry(
                        item.name,
                        _join(relative, item.name),
                        entry_kind(status.st_mode),
                        status.st_size,
                        status.st_mtime_ns,
                        status.st_nlink,
                    )
                )
        return sorted(entries, key=lambda entry: os.fsencode(entry.name))

    def walk(self, path: str | None = None, *, skip: Callable[[FolderEntry], bool] | None = None) -> list[FolderEntry]:
        """Every entry under a folder, depth first in name order; links are listed, never entered.

        `skip(entry)` leaves an entry out (and, for a folder, everything under it).
        """
        with self._directory(path) as descriptor:
            found: list[FolderEntry] = []
            self._walk_into(descriptor, path, skip, found)
            return found

    def _walk_into(self, descriptor: int, relative: str | None, skip, found: list[FolderEntry]) -> None:
        for entry in self._scan(descriptor, relative):
            if skip is not None and skip(entry):
                continue
            found.append(entry)
            if entry.kind == "dir":
                try:
                    child = self._open_child_dir(descriptor, entry.name, entry.path, create=False)
                except (FileNotFoundError, UnsafePathError, NotADirectoryError):
                    continue  # replaced since the scan: it is no longer a folder of ours to enter
                try:
                    self._walk_into(child, entry.path, skip, found)
                finally:
                    os.close(child)

    # -- reading -------------------------------------------------------------------------------

    def open_file(self, path: str) -> BinaryIO:
        """The regular, singly linked file at `path`, open for binary reading."""
        with self._parent(path) as (parent_fd, name):
            descriptor, status = open_regular_descriptor(name, dir_fd=parent_fd, shown=path)
        try:
            _check_single_link(status, path)
            return os.fdopen(descriptor, "rb")
        except BaseException:
            os.close(descriptor)
            raise

    def read_bytes(self, path: str) -> bytes:
        with self.open_file(path) as handle:
            return handle.read()

    # -- writing -------------------------------------------------------------------------------

    def write_bytes(
        self, path: str, data: bytes, *, executable: bool = True, durable: bool = True, mtime_ns: int | None = None
    ) -> None:
        """Replace `path` atomically with `data`, creating parent folders (see the module docstring).

        `durable=False` leaves out both fsyncs (the rename stays atomic): for a batch of files
        the caller makes durable once at the end (`sync_filesystems`), instead of one journal
        commit per file. `mtime_ns`: the file's modification time (a scrub that must not make a
        file look newly written, e.g. a forgotten line removed from a note)."""
        with self._parent(path, create=True) as (parent_fd, name):
            existing = _lstat_at(parent_fd, name)
            if existing is not None:
                _check_replaceable(existing, path)
            temporary = f".{name[:40]}.{secrets.token_hex(6)}.tmp"
            # 0o666 lets the umask apply, as a plain open() would for a new file.
            descriptor = os.open(temporary, _CREATE_FLAGS, 0o666, dir_fd=parent_fd)
            try:
                try:
                    _write_all(descriptor, data)
                    if existing is not None:
                        mode = stat.S_IMODE(existing.st_mode)
                        os.fchmod(descriptor, mode if executable else mode & ~_EXECUTE_BITS)
                    if mtime_ns is not None:
                        os.utime(descriptor, ns=(mtime_ns, mtime_ns))
                    if durable:
                        os.fsync(descriptor)
                finally:
                    os.close(descriptor)
                os.rename(temporary, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
            except BaseException:
                _unlink_quietly_if_present(temporary, parent_fd)
                raise
            if durable:
                os.fsync(parent_fd)

    def write_if_changed(self, path: str, data: bytes, *, executable: bool = True, durable: bool = True) -> bool:
        """Write `data` unless the regular file at `path` already holds exactly it; True when written."""
        try:
            with self.open_file(path) as handle:
                unchanged = handle.read(len(data) + 1) == data
        except FileNotFoundError:
            unchanged = False  # nothing there yet
        if unchanged:
            return False
        self.write_bytes(path, data, executable=executable, durable=durable)
        return True

    def create_new_bytes(self, path: str, data: bytes) -> None:
        """Create `path` holding `data`; `FileExistsError` when any entry (even a dangling link) is there."""
        with self._parent(path, create=True) as (parent_fd, name):
            descriptor = os.open(name, _CREATE_FLAGS, 0o666, dir_fd=parent_fd)
            try:
                try:
                    _write_all(descriptor, data)
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            except BaseException:
                _unlink_quietly_if_present(name, parent_fd)
                raise
            os.fsync(parent_fd)

    def rename(self, source: str, target: str) -> None:
        """Move the regular file `source` to `target` in one atomic step, creating the target's
        folders; its bytes, mode and times travel with it. A file at `target` is replaced (never
        a link or a folder); neither path may pass through a link."""
        with self._parent(source) as (source_fd, source_name):
            existing = _lstat_at(source_fd, source_name)
            if existing is None:
                raise FileNotFoundError(errno.ENOENT, "no such file", source)
            _check_replaceable(existing, source)
            with self._parent(target, create=True) as (target_fd, target_name):
                occupied = _lstat_at(target_fd, target_name)
                if occupied is not None:
                    _check_replaceable(occupied, target)
                os.rename(source_name, target_name, src_dir_fd=source_fd, dst_dir_fd=target_fd)

    def makedirs(self, path: str) -> None:
        """Create the folder and its parents; an existing real folder is fine, anything else is refused."""
        with self._directory(path, create=True):
            return  # opening it, creating whatever is missing, is the whole job

    def delete(self, path: str, missing_ok: bool = False) -> None:
        """Unlink a file or a symlink (never what it points to); a folder is `IsADirectoryError`."""
        try:
            with self._parent(path) as (parent_fd, name):
                existing = _lstat_at(parent_fd, name)
                if existing is None:
                    raise FileNotFoundError(errno.ENOENT, "no such file", path)
                if stat.S_ISDIR(existing.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "is a directory", path)
                os.unlink(name, dir_fd=parent_fd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def delete_tree(self, path: str, missing_ok: bool = True) -> None:
        """Remove a folder and everything in it without following links (a link is just unlinked)."""
        try:
            with self._parent(path) as (parent_fd, name):
                existing = _lstat_at(parent_fd, name)
                if existing is None:
                    raise FileNotFoundError(errno.ENOENT, "no such directory", path)
                if stat.S_ISDIR(existing.st_mode):
                    # With dir_fd, rmtree works on descriptors and never follows a link inside.
                    shutil.rmtree(name, dir_fd=parent_fd)
                else:
                    os.unlink(name, dir_fd=parent_fd)
        except FileNotFoundError:
            if not missing_ok:
                raise


def _lstat_at(parent_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_regular_descriptor(path: str | os.PathLike[str], *, dir_fd: int | None = None, shown: str | None = None) -> tuple[int, os.stat_result]:
    """A blocking read descriptor of the regular file at `path` and its `fstat`, the one way any
    reader here opens a file it did not write: the last component is never followed
    (`SymlinkRefusedError`), a FIFO, socket or device is refused (`SpecialFileRefusedError`), a
    folder is `IsADirectoryError`, and the open never waits (`O_NONBLOCK`, cleared once the
    descriptor is known to be a regular file, so a FIFO planted at the name cannot hang it).
    `shown` is the path as messages name it. Other `OSError`s (missing, permission) propagate."""
    shown = os.fspath(path) if shown is None else shown
    try:
        descriptor = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in _SYMLINK_ERRNOS:
            raise SymlinkRefusedError(f"{shown!r} is a symlink; symlinks are never followed") from None
        if error.errno == errno.ENXIO:  # a socket (or a device without its driver): nothing to read
            raise SpecialFileRefusedError(f"{shown!r} is not a regular file (a socket or device)") from None
        raise
    try:
        status = os.fstat(descriptor)
        _check_regular(status, shown)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, status


def _check_regular(status: os.stat_result, path: str) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    if not stat.S_ISREG(status.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(status.st_mode) else "a socket or device"
        raise SpecialFileRefusedError(f"{path!r} is not a regular file ({kind})")


def _check_single_link(status: os.stat_result, path: str) -> None:
    if status.st_nlink > 1:
        raise HardLinkRefusedError(
            f"{path!r} has {status.st_nlink} hard links; it may be another name for a file outside the memory root"
        )


def _check_replaceable(status: os.stat_result, path: str) -> None:
    if stat.S_ISLNK(status.st_mode):
        raise SymlinkRefusedError(f"{path!r} is a symlink; it is never written through or replaced")
    _check_regular(status, path)
    _check_single_link(status, path)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def _unlink_quietly_if_present(name: str, parent_fd: int) -> None:
    """Clean-up after a failed write: the original error is what the caller must see."""
    try:
        os.unlink(name, dir_fd=parent_fd)
    except FileNotFoundError:
        return


def sync_filesystems() -> None:
    """The one durable point after a batch written with `durable=False`: every written file's
    data and every rename reach the disk (`sync(2)`)."""
    os.sync()
