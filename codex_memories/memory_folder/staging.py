"""Phase 2 on a staging copy of a local memory folder, published in one step.

Readers (Codex reading `memory_summary.md`, `codex-memories inject`, the hooks, the MCP server,
recall) read the live folder at any time, without a lock. So phase 2 never writes it in place:
it works in a copy, and the live folder changes only when a complete, validated, gated state is
published.

Contract:
- The live folder is the memory root with a symlinked root resolved (`resolve_live_folder`):
  users relocate `~/.codex`, and the target is what gets exchanged.
- `staging_path(live, token)` is `<parent>/.<name>.staging-<token>`: a hidden sibling of the live
  folder, so on the same filesystem (a rename can swap them) and outside the live tree (no reader
  of the folder lists it). The caller holds the phase-2 lease; `remove_stale_staging` deletes the
  staging copies of dead runs (any that exist when a run prepares: only the lease holder makes
  one).
- `live_folder_is_ready(live)` is read-only: true when preparing the folder would change nothing
  (layout there, no symlink, no hard link, no stale diff file, ad-hoc instructions seeded, a
  usable baseline). `live_tree_is_clean(live)` is read-only too (`git status` without optional
  locks): true when the tree equals the baseline. Together they let a no-change run finish
  without copying anything.
- `copy_tree(live, staging)` copies every regular file and folder (`.git` included, modes and
  mtimes kept, so the synced-inputs record and git's stat cache stay valid) through a
  `SandboxedFolder`: symlinks are left out (and listed), a file with more than one hard link is
  `UnsafeMemoryRootError`, as `workspace.ensure_layout` refuses it. It returns a `TreeSnapshot`
  of the live folder as copied.
- `publish(staging, live, snapshot)` makes the staging copy the live folder:
  * when the live folder changed since the copy (a note written by the MCP server, a user's edit)
    nothing is published (`PublishResult.published` False, the changed paths listed): the run
    leaves the folder to the next pass instead of discarding that change;
  * on Linux the two directories are exchanged with `renameat2(RENAME_EXCHANGE)` (through libc:
    Python has no wrapper) after the staging filesystem is synced; a reader sees the old tree or
    the new one, never a mix, and a crash at any point leaves one of the two complete states
    (the other one stays behind as a staging directory, removed at the next prepare). The old
    tree is checked once more after the exchange: a change that slipped in between the check and
    the exchange swaps the trees back. Then the old tree is deleted;
  * where the exchange is not available (another OS, a filesystem that refuses it, a live folder
    that is a mount point) files are replaced one at a time, each atomically (`SandboxedFolder`
    writes a temporary file and renames it), in the order that keeps readers consistent: detail
    files first (rollout summaries, skills, extensions, `raw_memories.md`), then `MEMORY.md`,
    then `memory_summary.md`, then the deletions (only of files the copy saw: a file created
    meanwhile is kept), then the baseline (`.git`, its refs and `HEAD` last). A reader may then
    see new detail files under the old summary, never a summary that points at files not yet
    there; a crash half way leaves files that differ from the old baseline, which the next run
    consolidates again: nothing is lost, but the fallback is not one atomic step.
- `discard(staging)` deletes a staging copy (a failed, refused or settled run's); the live folder
  is untouched, so nothing needs restoring.
- A rebuild (`StagedWorkspace(..., from_scratch=True)`) stages at once and clears the copy of
  everything consolidated (`clear_consolidation`): only the inputs that are not the
  consolidation's stay, the extensions (ad-hoc notes, other producers' resources), the derived
  recall index and the folder's history (forget ledger, state DB binding); the baseline goes too, so phase 2 starts from INIT. The live folder keeps serving
  the old consolidation until the rebuilt one is published, like any other run's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from codex_memories.memory_folder.workspace import (
    UnsafeMemoryRootError,
    baseline_commit,
    baseline_is_usable,
    tree_status,
)
from codex_memories.paths import (
    EXTENSIONS_DIR,
    GIT_DIR,
    MEMORY_FILE,
    MEMORY_SUMMARY_FILE,
    RECALL_INDEX_FILE,
    ROLLOUT_SUMMARIES_DIR,
    WORKSPACE_DIFF_FILE,
    WORKSPACE_STATE_DIR,
    ad_hoc_instructions_path,
)
from codex_memories.sandbox import FolderEntry, SandboxedFolder
from codex_memories.storage import FOLDER_HISTORY_PATHS, LocalWorkspace, MemoryRoot, PushResult

STAGING_MARKER = ".staging-"
PROPOSAL_MARKER = ".proposal"
# Bookkeeping a reader may rewrite while phase 2 runs (the recall index): not a conflict.
_UNWATCHED_DIRS = frozenset({GIT_DIR, WORKSPACE_STATE_DIR})
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
# What renameat2 answers when the kernel or the filesystem cannot exchange: use the fallback.
_EXCHANGE_UNSUPPORTED = frozenset(
    {errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EBUSY, errno.EPERM}
)


class LiveFolderChanged(RuntimeError):
    """The live folder changed while phase 2 worked on its copy."""


@dataclass(frozen=True)
class TreeSnapshot:
    """The live folder as copied: relative path → (size, mtime_ns, inode) of every regular file
    outside `.git/` and `.codex-memories/`."""

    files: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    skipped_symlinks: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PublishResult:
    published: bool
    method: str  # "exchange", "file_by_file", or "" when nothing was published
    changed_meanwhile: list[str] = field(default_factory=list)


def resolve_live_folder(root_dir: Path) -> Path:
    """The directory phase 2 publishes into: the memory root, its symlink resolved."""
    root_dir = Path(os.path.abspath(root_dir))
    return Path(os.path.realpath(root_dir)) if os.path.islink(root_dir) else root_dir


def staging_path(live: Path, token: str) -> Path:
    safe = "".join(character if character.isalnum() or character in "-_" else "_" for character in token)
    return live.parent / f".{live.name}{STAGING_MARKER}{safe}"


def staging_copies(live: Path) -> list[Path]:
    """Read-only: the staging copies beside `live`, sorted (while no phase 2 holds the lease,
    every one is a dead run's)."""
    prefix = f".{live.name}{STAGING_MARKER}"
    if not live.parent.is_dir():
        return []
    return sorted(entry for entry in live.parent.iterdir() if entry.name.startswith(prefix))


def proposal_path(root_dir: Path) -> Path:
    """Where a consolidation waiting for review (`consolidate.review`) is kept: beside the live
    folder like the staging copies, so `forget.manual` finds every copy here without importing
    the review module (which imports it)."""
    live = resolve_live_folder(root_dir)
    return live.parent / f".{live.name}{PROPOSAL_MARKER}"


def remove_stale_staging(live: Path) -> list[Path]:
    """Delete the staging copies dead runs left beside `live`; returns them."""
    stale = staging_copies(live)
    for path in stale:
        discard(path)
    return stale


def clear_consolidation(staging: Path) -> None:
    """Delete from a staging copy everything a consolidation made or synced, the baseline
    included; keep the extensions and the recall index (see the module docstring)."""
    for name in sorted(os.listdir(staging)):
        if name == EXTENSIONS_DIR:
            continue
        entry = staging / name
        if name == WORKSPACE_STATE_DIR and entry.is_dir() and not entry.is_symlink():
            for inner in sorted(os.listdir(entry)):
                if inner != RECALL_INDEX_FILE and f"{WORKSPACE_STATE_DIR}/{inner}" not in FOLDER_HISTORY_PATHS:
                    discard(entry / inner)
            continue
        discard(entry)


def discard(path: Path) -> None:
    """Delete a staging copy (links inside are unlinked, never followed)."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


# --------------------------------------------------------------------------------------------
# Read-only checks of the live folder


def _watched(entry: FolderEntry) -> bool:
    return not (entry.kind == "dir" and entry.path in _UNWATCHED_DIRS)


def live_folder_is_ready(live: Path) -> bool:
    """Whether `workspace.prepare_workspace` would leave `live` as it is (read-only)."""
    if os.path.islink(live) or not live.is_dir():
        return False
    folder = SandboxedFolder(live)
    for entry in folder.walk(skip=lambda entry: entry.kind == "dir" and entry.path == GIT_DIR):
        if entry.kind in ("symlink", "other") or (entry.kind == "file" and entry.nlink > 1):
            return False
    return (
        folder.kind(ROLLOUT_SUMMARIES_DIR) == "dir"
        and folder.kind(ad_hoc_instructions_path()) == "file"
        and folder.kind(WORKSPACE_DIFF_FILE) is None
        and baseline_is_usable(live)
    )


def live_tree_is_clean(live: Path) -> bool:
    """Whether the tree equals the baseline commit, read-only (no index, object or lock written)."""
    return not tree_status(live)


def _snapshot(folder: SandboxedFolder) -> dict[str, tuple[int, int, int]]:
    files = {}
    for entry in folder.walk(skip=lambda entry: not _watched(entry)):
        if entry.kind == "file":
            status = folder.lstat(entry.path)
            if status is not None:
                files[entry.path] = (status.st_size, status.st_mtime_ns, status.st_ino)
    return files


# --------------------------------------------------------------------------------------------
# The copy


def copy_tree(live: Path, staging: Path) -> TreeSnapshot:
    """Copy `live` (baseline included) into the new directory `staging`; see the module docstring."""
    staging.mkdir(mode=0o700)
    if not live.is_dir():
        return TreeSnapshot()
    source, target = SandboxedFolder(live), SandboxedFolder(staging)
    entries = source.walk()
    linked = [entry.path for entry in entries if entry.kind == "file" and entry.nlink > 1 and _in_content(entry.path)]
    if linked:
        raise UnsafeMemoryRootError(
            f"memory root {live} holds files with more than one hard link ({', '.join(linked[:10])}); "
            "they may be other names for files outside it. Replace them with plain copies or remove them"
        )
    files: dict[str, tuple[int, int, int]] = {}
    skipped = []
    for entry in entries:
        if entry.kind == "dir":
            target.makedirs(entry.path)
        elif entry.kind == "file":
            if _is_temporary_bookkeeping(entry.path):
                continue
            with source.open_file(entry.path) as handle:
                status = os.fstat(handle.fileno())
                data = handle.read()
            _write_copy(staging / entry.path, data, status)
            if _in_content(entry.path):
                files[entry.path] = (status.st_size, status.st_mtime_ns, status.st_ino)
        elif entry.kind == "symlink" and not entry.path.startswith(GIT_DIR + "/"):
            skipped.append(entry.path)
        # FIFOs, sockets and devices are not memory content: never copied.
    _copy_directory_modes(source, staging, entries)
    return TreeSnapshot(files=files, skipped_symlinks=skipped)


def _is_temporary_bookkeeping(path: str) -> bool:
    # A reader rebuilding the recall index writes a temporary file and renames it: not state.
    head, _, name = path.rpartition("/")
    return head == WORKSPACE_STATE_DIR and name.startswith(".") and name.endswith(".tmp")


def _in_content(path: str) -> bool:
    return path.split("/", 1)[0] not in _UNWATCHED_DIRS


def _write_copy(path: Path, data: bytes, status: os.stat_result) -> None:
    # A fresh directory of ours: an exclusive create is enough, and no fsync per file (the whole
    # filesystem is synced once, before the publish).
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
        os.fchmod(descriptor, status.st_mode & 0o7777)
        os.utime(descriptor, ns=(status.st_atime_ns, status.st_mtime_ns))
    finally:
        os.close(descriptor)


def _copy_directory_modes(source: SandboxedFolder, staging: Path, entries: list[FolderEntry]) -> None:
    root = source.lstat(None)
    if root is not None:
        os.chmod(staging, root.st_mode & 0o7777)
    for entry in entries:
        if entry.kind == "dir":
            status = source.lstat(entry.path)
            if status is not None:
                os.chmod(staging / entry.path, status.st_mode & 0o7777, follow_symlinks=False)


# --------------------------------------------------------------------------------------------
# Publishing


def changed_since(live: Path, snapshot: TreeSnapshot) -> list[str]:
    """Content files of `live` that differ from the snapshot (added, changed, removed)."""
    if not live.is_dir():
        return sorted(snapshot.files)
    now = _snapshot(SandboxedFolder(live))
    return sorted(path for path in set(now) | set(snapshot.files) if now.get(path) != snapshot.files.get(path))


def publish(staging: Path, live: Path, snapshot: TreeSnapshot) -> PublishResult:
    """Make `staging` the live folder; see the module docstring."""
    changed = changed_since(live, snapshot)
    if changed:
        return PublishResult(published=False, method="", changed_meanwhile=changed)
    live.mkdir(parents=True, exist_ok=True)  # an empty folder is the complete "no memory" state
    _sync_filesystem(staging)
    if not os.path.ismount(live) and exchange_directories(staging, live):
        _fsync_directory(live.parent)
        # `staging` now holds the old tree. A writer that slipped in between the check above and
        # the exchange wrote into it: swap back rather than lose that write.
        changed = changed_since(staging, snapshot)
        if changed:
            exchange_directories(staging, live)
            _fsync_directory(live.parent)
            return PublishResult(published=False, method="", changed_meanwhile=changed)
        discard(staging)
        return PublishResult(published=True, method="exchange")
    replace_file_by_file(staging, live, snapshot)
    discard(staging)
    return PublishResult(published=True, method="file_by_file")


def exchange_directories(first: Path, second: Path) -> bool:
    """Swap two directories atomically (Linux `renameat2(RENAME_EXCHANGE)`); False where the OS
    or the filesystem cannot, so the caller falls back."""
    if not sys.platform.startswith("linux"):
        return False
    renameat2 = _libc_function("renameat2")
    if renameat2 is None:
        return False  # a libc older than glibc 2.28
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _EXCHANGE_UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def _libc_function(name: str):
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None
    return getattr(libc, name, None)


def _sync_filesystem(path: Path) -> None:
    """Make the staging copy durable before it becomes the live folder (one `syncfs`)."""
    syncfs = _libc_function("syncfs") if sys.platform.startswith("linux") else None
    if syncfs is None:
        os.sync()
        return
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if syncfs(descriptor) != 0:
            os.sync()
    finally:
        os.close(descriptor)


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _publish_order(path: str) -> tuple[int, str]:
    if path.startswith(GIT_DIR + "/"):
        inner = path[len(GIT_DIR) + 1:]
        # Objects before the refs that name them, the branch ref before HEAD.
        return (6 if inner == "HEAD" else 5 if inner.startswith("refs/") else 4, path)
    if path == MEMORY_FILE:
        return (1, path)
    if path == MEMORY_SUMMARY_FILE:
        return (2, path)
    return (0, path)


def replace_file_by_file(staging: Path, live: Path, snapshot: TreeSnapshot) -> list[str]:
    """The fallback publish: every file of `staging` replaces its live counterpart atomically, in
    reader order, then the deletions, then the baseline. Returns the paths written."""
    source, target = SandboxedFolder(staging), SandboxedFolder(live)
    staged = sorted((entry.path for entry in source.walk() if entry.kind == "file"), key=_publish_order)
    content = [path for path in staged if not path.startswith(GIT_DIR + "/")]
    baseline = [path for path in staged if path.startswith(GIT_DIR + "/")]
    written = [path for path in content if _replace(source, target, live, path)]
    kept = set(staged)
    # Only files the copy saw: a file created in the live folder meanwhile is not ours to delete.
    for path in sorted(snapshot.files):
        if path not in kept:
            target.delete(path, missing_ok=True)
    written += [path for path in baseline if _replace(source, target, live, path)]
    if target.kind(GIT_DIR) == "dir":
        for entry in target.walk(GIT_DIR):
            if entry.kind != "dir" and entry.path not in kept:
                target.delete(entry.path, missing_ok=True)
    return written


def _replace(source: SandboxedFolder, target: SandboxedFolder, live: Path, path: str) -> bool:
    data = source.read_bytes(path)
    status = source.lstat(path)
    current = target.lstat(path)
    if current is not None and current.st_size == len(data) and target.kind(path) == "file" and target.read_bytes(path) == data:
        return False
    if "/" in path:
        target.makedirs(path.rsplit("/", 1)[0])
    target.write_bytes(path, data)
    if status is not None:
        # The synced-inputs record holds the staging mtimes: keep them, so the next run's sync
        # still recognises its own files.
        os.utime(live / path, ns=(status.st_atime_ns, status.st_mtime_ns), follow_symlinks=False)
    return True


# --------------------------------------------------------------------------------------------
# The workspace phase 2 uses for a local root


class StagedWorkspace(LocalWorkspace):
    """A local memory root worked on through a staging copy, made only when something will change.

    `path` is the live folder (read only) until `stage()` copies it; from then on `path` is the
    staging copy, and after a successful `push()` (the publish) the live folder again. `pull()`
    removes dead runs' staging copies and stages at once when the live folder needs preparing.
    """

    def __init__(self, root: MemoryRoot, token: str, *, from_scratch: bool = False) -> None:
        super().__init__(root)
        self.from_scratch = from_scratch
        self.live = resolve_live_folder(self.path)
        self.staging = staging_path(self.live, token)
        self.path = self.live
        self.staged = False
        self.published = False
        self.snapshot = TreeSnapshot()
        self.publish_result: PublishResult | None = None
        # The live baseline the copy was made from: a proposal applies only on top of it.
        self.base_commit: str | None = None
        # A copy kept as a review proposal is not this run's to discard.
        self.kept = False

    @property
    def writable(self) -> bool:
        return self.staged and not self.published

    def pull(self) -> None:
        remove_stale_staging(self.live)
        if self.from_scratch or not live_folder_is_ready(self.live):
            self.stage()

    def stage(self) -> None:
        if self.staged:
            return
        if os.path.lexists(self.live) and not self.live.is_dir():
            # Never exchanged away: a file (or a dangling link) there is the user's, not a folder.
            raise UnsafeMemoryRootError(f"memory root {self.live} exists and is not a directory")
        discard(self.staging)  # a retried prepare starts from a fresh copy
        self.base_commit = baseline_commit(self.live) if self.live.is_dir() else None
        try:
            self.snapshot = copy_tree(self.live, self.staging)
            if self.from_scratch:
                clear_consolidation(self.staging)
        except BaseException:
            discard(self.staging)  # a copy cut short (a full disk) must not keep its space
            raise
        self.skipped_links = list(self.snapshot.skipped_symlinks)
        self.staged, self.path = True, self.staging

    def changed_meanwhile(self) -> list[str]:
        """Files of the live folder that changed since the copy (empty when not staged)."""
        return changed_since(self.live, self.snapshot) if self.staged else []

    def push(self) -> PushResult:
        if not self.writable:
            return PushResult(uploaded=[], deleted=[], baseline_uploaded=False)
        self.publish_result = publish(self.staging, self.live, self.snapshot)
        if self.publish_result.published:
            self.published, self.path = True, self.live
        return PushResult(uploaded=[], deleted=[], baseline_uploaded=self.publish_result.published)

    def move_to(self, path: Path) -> None:
        """Keep the copy under another name beside the live folder (a review proposal)."""
        os.rename(self.staging, path)
        self.staging = self.path = path

    def discard(self) -> None:
        if self.staged and not self.published and not self.kept:
            discard(self.staging)
