"""Rollout files on disk: the one way anything here lists or opens a session transcript.

`$CODEX_HOME/sessions/` is written by Codex, but anything can be there: a FIFO or a socket named
like a rollout, a symlink to `/dev/zero` or to a loop, a folder named like a rollout, a folder
whose name is not UTF-8, a sparse file of a terabyte, a `.jsonl.zst` that is not zstd or that
inflates without end. Every reader (discovery, the phase-1 transcript, the citation harvest of
phase 1 and of the Stop hook, the rate-limit guard, backfill folders) meets them through here.

Contract:
- `list_rollouts(base)` walks a folder (the folder itself may be a symlink, as users relocate
  `~/.codex`; a symlinked folder below it, a month moved to another disk, is entered through its
  link when it leads out of the tree, each real folder once and at most `MAX_LINKED_FOLDERS`
  of them, so loops and link farms stay bounded; a symlinked rollout file is never followed) and
  returns, sorted by path, every regular
  file named `rollout-*.jsonl` (and `rollout-*.jsonl.zst` when `zstandard` is importable) with
  its size and mtime as listed, and every entry it leaves out with a named outcome: an entry
  named like a rollout that is not a regular file (`skipped_rollout_not_a_file`: a symlink,
  FIFO, socket, device or folder), a name that is not UTF-8 or a path longer than
  `MAX_ROLLOUT_PATH_BYTES` (`skipped_rollout_unusable_path`: no row can be keyed by it; a folder
  so named is not entered), a folder that cannot be listed (`failed_rollout_unreadable`,
  in `unlisted_folders` too, so that nothing under it is taken for deleted). Never raises for
  what it finds; an absent `base` lists nothing.
- `open_rollout(path)` opens one rollout for reading, as a context manager yielding a binary
  stream of its JSONL (decompressed for `.jsonl.zst`). The open never follows a symlink at the
  last component and never blocks (`sandbox.open_regular_descriptor`); only a regular file is
  read. The stream is bounded: more than `MAX_ROLLOUT_BYTES` (on disk, or decompressed) is
  `RolloutTooLarge`, raised at the open when the size shows it and otherwise by the read that
  crosses the bound, so no reader can spend more time or memory on one file than that many
  bytes cost. A `.jsonl.zst` that is not zstd, or that ends inside a frame, is
  `CorruptCompressedRollout` from the read that finds it.
- `thread_id_from_filename(path)` reads the thread id from a rollout's name;
  `file_identity(path, stream)` is an open plain rollout's size and mtime (what says a file did
  not change between the discovery scan and the transcript that reuses its line offsets).
- Every failure to open or read is an `OSError`; `RolloutFileError` subclasses carry their
  outcome code (`rollout_failure(error)` gives the code and a storable one-line detail for any
  `OSError`). One bad file is one named outcome for that file, never a failed run.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, ClassVar

from codex_memories.outcomes import Outcome
from codex_memories.sandbox import SpecialFileRefusedError, SymlinkRefusedError, entry_kind, open_regular_descriptor
from codex_memories.storable import path_decodes, shown_path, utf8_size

try:  # Optional: Codex may compress old rollouts; without the module we skip those files.
    import zstandard
except ImportError:
    zstandard = None

ROLLOUT_PREFIX = "rollout-"
PLAIN_SUFFIX = ".jsonl"
COMPRESSED_SUFFIX = ".jsonl.zst"
# The largest rollout read, on disk or decompressed. Codex's longest sessions are hundreds of
# MB; past this a file is a named outcome, not an hour of reading (a sparse file claims any size).
MAX_ROLLOUT_BYTES = 4 << 30
# Compressed bytes fed to the decoder at a time: zstd can inflate a byte of input to about 43,000
# (run-length blocks), so this bounds what one call can produce before the size bound is checked.
_COMPRESSED_CHUNK_BYTES = 512
# A file read line by line from start to end gets a buffer this large: with Python's default
# (the file system's block size, 4 KiB here) the reads of 100 MB of rollouts cost 0.14-0.20 s of
# CPU, with 1 MiB 0.02-0.03 s (readline copies and joins one chunk per buffer fill). A file read
# at a few kept lines keeps the default, since every seek and read would fill the whole buffer.
_SEQUENTIAL_BUFFER_BYTES = 1 << 20
# A thread's row is keyed by its rollout's path (a unique index): PostgreSQL refuses an index entry
# past about 2,700 bytes, and one refused row would fail the whole batch of threads with it.
MAX_ROLLOUT_PATH_BYTES = 2048


class RolloutFileError(OSError):
    """A rollout that cannot be read as one; `outcome` is its code in the run report and the DB."""

    outcome: ClassVar[Outcome] = Outcome.failed_rollout_unreadable


class NotARegularRollout(RolloutFileError):
    """The name is a symlink, FIFO, socket, device or folder (found when opening it)."""


class UnsupportedRolloutCompression(RolloutFileError):
    """A `.jsonl.zst` rollout while the optional `zstandard` module is not installed."""


class RolloutTooLarge(RolloutFileError):
    """More than `MAX_ROLLOUT_BYTES`, on disk or decompressed."""

    outcome = Outcome.failed_rollout_too_large


class CorruptCompressedRollout(RolloutFileError):
    """A `.jsonl.zst` that does not decompress (not zstd, damaged, or cut inside a frame)."""

    outcome = Outcome.failed_rollout_decompress


def rollout_failure(error: OSError) -> tuple[Outcome, str]:
    """The outcome and the one-line, storable detail of a failure to open or read a rollout."""
    outcome = error.outcome if isinstance(error, RolloutFileError) else Outcome.failed_rollout_unreadable
    detail = error.strerror if error.strerror and not isinstance(error, RolloutFileError) else str(error)
    return outcome, shown_path(" ".join(detail.split()))


def zstd_supported() -> bool:
    return zstandard is not None


def rollout_suffixes() -> tuple[str, ...]:
    return (PLAIN_SUFFIX, COMPRESSED_SUFFIX) if zstd_supported() else (PLAIN_SUFFIX,)


def is_rollout_name(name: str, suffixes: tuple[str, ...]) -> bool:
    return name.startswith(ROLLOUT_PREFIX) and name.endswith(suffixes)


# --- Listing -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListedRollout:
    path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """An entry the listing leaves out: `shown` is its path as storable text (`path` may not be)."""

    path: Path
    shown: str
    outcome: Outcome
    detail: str


@dataclass
class RolloutListing:
    rollouts: list[ListedRollout] = field(default_factory=list)
    skipped: list[SkippedEntry] = field(default_factory=list)
    # Folders that could not be listed: what they held is unknown, not gone.
    unlisted_folders: list[Path] = field(default_factory=list)


_SHOWN_KINDS = {"symlink": "a symbolic link (not followed)", "dir": "a folder"}


def _shown_kind(mode: int) -> str:
    """What a rollout-named entry that is not a regular file is, for the report."""
    kind = _SHOWN_KINDS.get(entry_kind(mode))
    if kind is not None:
        return kind
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


# Symlinked folders below the base that are followed in one listing (a month folder moved to
# another disk is one; a tree of thousands of links is no one's layout). Past it, a link is skipped
# and named, so the listing stays bounded whatever the tree holds.
MAX_LINKED_FOLDERS = 256


@dataclass
class _Walk:
    """One listing's bounds: the real folders entered (by device and inode: a loop, or a second
    path to a folder already listed, is entered once) and the linked folders followed so far."""

    real_base: str
    entered: set[tuple[int, int]] = field(default_factory=set)
    linked: int = 0


def list_rollouts(base: Path, *, suffixes: tuple[str, ...] | None = None) -> RolloutListing:
    """See the module docstring. `suffixes` defaults to the readable ones (`rollout_suffixes`)."""
    suffixes = rollout_suffixes() if suffixes is None else suffixes
    listing = RolloutListing()
    if not base.is_dir():
        return listing
    walk = _Walk(real_base=os.path.realpath(base))
    pending = [os.fspath(base)]
    while pending:
        folder = pending.pop()
        try:
            real = os.stat(folder)
            if (real.st_dev, real.st_ino) in walk.entered:
                continue  # reached again through a link: listed once
            walk.entered.add((real.st_dev, real.st_ino))
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError as error:
            listing.unlisted_folders.append(Path(folder))
            outcome, detail = rollout_failure(error)
            listing.skipped.append(SkippedEntry(Path(folder), shown_path(folder), outcome, f"folder cannot be listed: {detail}"))
            continue
        for entry in entries:
            _list_entry(entry, suffixes, listing, pending, walk)
    listing.rollouts.sort(key=lambda rollout: rollout.path)
    return listing


def _list_entry(entry: os.DirEntry[str], suffixes: tuple[str, ...], listing: RolloutListing, pending: list[str], walk: _Walk) -> None:
    rollout_like = is_rollout_name(entry.name, suffixes)
    if not rollout_like and not entry.is_dir(follow_symlinks=False) and not entry.is_symlink():
        return  # not ours: no system call spent on it
    unusable = _unusable_path_reason(entry)
    if unusable is not None:
        listing.skipped.append(SkippedEntry(Path(entry.path), shown_path(entry.path), Outcome.skipped_rollout_unusable_path, unusable))
        return
    try:
        status = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return  # removed between the listing and the look: it is not there any more
    except OSError as error:
        outcome, detail = rollout_failure(error)
        listing.skipped.append(SkippedEntry(Path(entry.path), shown_path(entry.path), outcome, detail))
        return
    if stat.S_ISDIR(status.st_mode):
        pending.append(entry.path)
    elif stat.S_ISLNK(status.st_mode) and not rollout_like:
        _follow_linked_folder(entry, listing, pending, walk)
        return
    if not rollout_like:
        return
    if stat.S_ISREG(status.st_mode):
        listing.rollouts.append(ListedRollout(Path(entry.path), status.st_size, status.st_mtime_ns))
    else:
        listing.skipped.append(
            SkippedEntry(
                Path(entry.path), shown_path(entry.path), Outcome.skipped_rollout_not_a_file,
                f"named like a rollout but {_shown_kind(status.st_mode)}",
            )
        )


def _follow_linked_folder(entry: os.DirEntry[str], listing: RolloutListing, pending: list[str], walk: _Walk) -> None:
    """A symlink below the base that leads to a folder (a month of sessions moved to another
    disk) is listed through its link, within bounds: a link back into the tree (a loop, or a
    second path to a folder listed anyway) is not followed; past `MAX_LINKED_FOLDERS` links a
    link is skipped and named. A dangling link or one to a file is not a folder: left alone."""
    try:
        target = os.stat(entry.path)
    except OSError:
        return  # dangling, a loop of links, or unreachable: nothing of ours to list
    if not stat.S_ISDIR(target.st_mode):
        return
    real = os.path.realpath(entry.path)
    if real == walk.real_base or real.startswith(walk.real_base.rstrip(os.sep) + os.sep) or (target.st_dev, target.st_ino) in walk.entered:
        return  # inside the tree: its sessions are listed by their own path
    if walk.linked >= MAX_LINKED_FOLDERS:
        listing.skipped.append(
            SkippedEntry(
                Path(entry.path), shown_path(entry.path), Outcome.skipped_rollout_not_a_file,
                f"a linked folder past the {MAX_LINKED_FOLDERS} one listing follows; its sessions are not read",
            )
        )
        return
    walk.linked += 1
    pending.append(entry.path)


def _unusable_path_reason(entry: os.DirEntry[str]) -> str | None:
    what = "folder" if entry.is_dir(follow_symlinks=False) else "file"
    if not path_decodes(entry.name):
        return f"the {what} name is not UTF-8"
    size = utf8_size(entry.path)
    if size is None:  # a folder above it does not decode: the base itself
        return "the path is not UTF-8"
    if size > MAX_ROLLOUT_PATH_BYTES:
        return f"the {what}'s path is {size} bytes, longer than the {MAX_ROLLOUT_PATH_BYTES} a thread can be keyed by"
    return None


# --- Opening -----------------------------------------------------------------------------------


@contextmanager
def open_rollout(path: Path, *, sequential: bool = True) -> Iterator[BinaryIO]:
    """See the module docstring. `sequential`: the caller reads the file from start to end (a
    large buffer), else it seeks to a few lines (the default buffer)."""
    compressed = path.name.endswith(".zst")
    if compressed and zstandard is None:
        raise UnsupportedRolloutCompression(f"{shown_path(path)}: .jsonl.zst rollouts need the optional 'zstandard' package")
    try:
        descriptor, status = open_regular_descriptor(path, shown=shown_path(path))
    except (SymlinkRefusedError, SpecialFileRefusedError) as error:
        raise NotARegularRollout(str(error)) from None
    except IsADirectoryError:
        raise NotARegularRollout(f"{shown_path(path)!r} is a folder, not a rollout") from None
    raw: io.RawIOBase
    try:
        if status.st_size > MAX_ROLLOUT_BYTES:
            raise RolloutTooLarge(_too_large(path, f"is {status.st_size} bytes"))
        source = io.FileIO(descriptor, "rb", closefd=True)
    except BaseException:
        os.close(descriptor)
        raise
    if compressed:
        raw = _DecompressedRollout(source, path)
    else:
        raw = _BoundedRollout(source, path)
    buffer_bytes = _SEQUENTIAL_BUFFER_BYTES if sequential else io.DEFAULT_BUFFER_SIZE
    with io.BufferedReader(raw, buffer_size=buffer_bytes) as stream:
        yield stream


def _too_large(path: Path, what: str) -> str:
    return f"{shown_path(path)} {what}, over the {MAX_ROLLOUT_BYTES}-byte bound on one rollout"


class _BoundedRollout(io.RawIOBase):
    """A plain rollout, readable up to `MAX_ROLLOUT_BYTES`: a read past them (the file grew since
    it was opened) is `RolloutTooLarge`."""

    def __init__(self, source: io.FileIO, path: Path) -> None:
        self._source = source
        self._path = path

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._source.fileno()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._source.seek(offset, whence)

    def tell(self) -> int:
        return self._source.tell()

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        room = MAX_ROLLOUT_BYTES - self._source.tell()
        if room <= 0:
            if self._source.read(1):
                raise RolloutTooLarge(_too_large(self._path, "grew while it was read"))
            return 0
        with memoryview(buffer) as view:
            return self._source.readinto(view[:room]) or 0

    def close(self) -> None:
        if not self.closed:
            self._source.close()
        super().close()


class _DecompressedRollout(io.RawIOBase):
    """The decompressed bytes of a `.jsonl.zst` (one or more frames), at most `MAX_ROLLOUT_BYTES`.

    A decompression object per frame (not `zstandard`'s stream reader, which reads a file cut
    inside a frame as a shorter file): the input ending inside a frame is `CorruptCompressedRollout`."""

    def __init__(self, source: io.FileIO, path: Path) -> None:
        self._source = source
        self._path = path
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._in_frame = False
        self._pending = b""
        self._taken = 0  # of `_pending`, already returned
        self._produced = 0

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._source.fileno()

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._taken == len(self._pending):
            chunk = self._source.read(_COMPRESSED_CHUNK_BYTES)
            if not chunk:
                if self._in_frame:
                    raise CorruptCompressedRollout(f"{shown_path(self._path)}: the compressed data ends inside a frame")
                return 0
            self._pending, self._taken = self._decompress(chunk), 0
        taken = min(len(buffer), len(self._pending) - self._taken)
        buffer[:taken] = memoryview(self._pending)[self._taken : self._taken + taken]
        self._taken += taken
        return taken

    def _decompress(self, chunk: bytes) -> bytes:
        produced = []
        while chunk:
            self._in_frame = True
            try:
                produced.append(self._frame.decompress(chunk))
            except zstandard.ZstdError as error:
                raise CorruptCompressedRollout(f"{shown_path(self._path)}: not valid zstd data ({error})") from None
            chunk = b""
            if self._frame.eof:  # a frame ended: what follows it in the chunk starts the next one
                chunk = self._frame.unused_data
                self._frame = zstandard.ZstdDecompressor().decompressobj()
                self._in_frame = False
        data = b"".join(produced)
        self._produced += len(data)
        if self._produced > MAX_ROLLOUT_BYTES:
            raise RolloutTooLarge(_too_large(self._path, "decompresses to more"))
        return data

    def close(self) -> None:
        if not self.closed:
            self._source.close()
        super().close()


_ROLLOUT_NAME_RE = re.compile(
    r"^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-"
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(?:\.zst)?$"
)


def thread_id_from_filename(path: Path | str) -> str | None:
    """The thread UUID at the end of `rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, lower case."""
    match = _ROLLOUT_NAME_RE.match(Path(path).name)
    return match.group(1).lower() if match else None


def file_identity(path: Path, stream: BinaryIO) -> tuple[int, int] | None:
    """(size, mtime_ns) of an open plain rollout; None for a compressed one, whose line offsets
    are positions in the decompressed stream, where nothing can seek."""
    if path.name.endswith(".zst"):
        return None
    status = os.fstat(stream.fileno())
    return status.st_size, status.st_mtime_ns
