"""Discovery: rollout files on disk become rows of our `threads` table.

Inputs: `$CODEX_HOME/sessions/**/rollout-*.jsonl` (live) and `$CODEX_HOME/archived_sessions/`
(recorded as archived; normal runs never claim them), listed and opened through
`rollout_files` (regular files only, bounded). Incremental: a file whose size and mtime are
unchanged since the last scan is not read again. No file stops the run: an entry left out of the
listing (not a regular file, a name that is not UTF-8, a folder that cannot be listed) or a file
that fails to read (too large, corrupt, unreadable) is one named outcome in `unreadable` and
`files_by_outcome`, and the files beside it are read as usual. A thread whose file still exists
but cannot be read now, or sits in a folder that could not be listed, is not taken for deleted.
Side effects: upserts `threads`, marks
threads whose file disappeared (`missing_since_ms`), marks threads that used external context
`polluted` when `disable_on_external_context` is on (through the store, which enqueues phase 2
when such a thread had been selected). Idempotent: a second run over unchanged files writes
nothing new.

`record_project_keys(store, codex_home)` then writes which folder belongs to which project, from
the threads' own git records (`scopes.recorded_project_keys`), to
`$CODEX_HOME/codex-memories/project-keys.json` (atomically, only when it changed): the read path
finds a session's project there when the folder's git config cannot be read.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from codex_memories import paths
from codex_memories.ingest.rollout_files import ListedRollout, list_rollouts, rollout_failure, thread_id_from_filename
from codex_memories.ingest.rollout_scan import RolloutScan, scan_rollout
from codex_memories.ingest.transcript import KeptLines
from codex_memories.local_files import write_text_atomically
from codex_memories.outcomes import Outcome, failure_reason
from codex_memories.scopes import recorded_project_keys, write_recorded_project_keys
from codex_memories.settings import INTERACTIVE_SESSION_SOURCES
from codex_memories.state.records import MemoryMode, ThreadRecord
from codex_memories.state.store import MemoryStore


@dataclass
class DiscoveryReport:
    files_seen: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    threads_upserted: int = 0
    archived_files: int = 0
    non_interactive: int = 0
    lines_skipped: int = 0
    skipped_by_reason: Counter[str] = field(default_factory=Counter)
    # Lines used after their text was made storable (rollout_reader.LineStats.repaired_by_reason).
    lines_repaired: int = 0
    repaired_by_reason: Counter[str] = field(default_factory=Counter)
    # Files (and folders) left out, each as (path shown as storable text, "<outcome>: <detail>"),
    # and how many per outcome code.
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    files_by_outcome: Counter[str] = field(default_factory=Counter)
    polluted_thread_ids: list[str] = field(default_factory=list)
    missing_thread_ids: list[str] = field(default_factory=list)
    # Rollouts read in full this run (new or changed): where new memory citations can be.
    read_paths: list[str] = field(default_factory=list)
    # The scan of each of them, by path: the citation harvest of the same run takes its blocks
    # from here instead of reading the file again (`harvest_citations(..., scans=...)`).
    read_scans: dict[str, RolloutScan] = field(default_factory=dict)
    # Every thread id found (read or unchanged), and (backfill) those kept at another path.
    thread_ids: list[str] = field(default_factory=list)
    known_elsewhere: int = 0

    def left_out(self, shown: str, outcome: Outcome, detail: str) -> None:
        self.unreadable.append((shown, failure_reason(outcome, detail)))
        self.files_by_outcome[outcome.value] += 1

    def facts(self) -> dict[str, int]:
        """The counts a run report shows (the phase-1 and backfill artifacts)."""
        return {
            "files seen": self.files_seen,
            "files read": self.files_read,
            "files unchanged": self.files_unchanged,
            "archived files": self.archived_files,
            "non-interactive sessions": self.non_interactive,
            "damaged lines skipped": self.lines_skipped,
            "lines repaired to storable text": self.lines_repaired,
            "unreadable files": len(self.unreadable),
            "newly polluted threads": len(self.polluted_thread_ids),
            "rollouts that disappeared": len(self.missing_thread_ids),
            **{f"damaged lines skipped: {reason}": count for reason, count in sorted(self.skipped_by_reason.items())},
            **{f"lines repaired: {reason}": count for reason, count in sorted(self.repaired_by_reason.items())},
            **{f"files left out: {outcome}": count for outcome, count in sorted(self.files_by_outcome.items())},
        }

    def kept_lines(self) -> dict[str, KeptLines]:
        """By path, where the long rollouts read this run keep their transcript lines: the
        same run's extraction reads their head and tail only (`build_memory_transcript`)."""
        return {path: scan.kept_lines for path, scan in self.read_scans.items() if scan.kept_lines is not None}


def _to_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def _thread_from_scan(
    scan: RolloutScan,
    *,
    thread_id: str,
    listed: ListedRollout,
    archived: bool,
    memory_mode: MemoryMode,
    now_ms: int,
) -> ThreadRecord:
    mtime_ms = listed.mtime_ns // 1_000_000
    updated_at_ms = _to_ms(scan.last_activity_at) or mtime_ms
    created_at_ms = _to_ms(scan.created_at) or updated_at_ms
    return ThreadRecord(
        id=thread_id,
        rollout_path=str(listed.path),
        created_at_ms=created_at_ms,
        updated_at_ms=updated_at_ms,
        source=scan.source,
        cwd=scan.cwd,
        originator=scan.originator,
        cli_version=scan.cli_version,
        model_provider=scan.model_provider,
        forked_from_id=scan.forked_from_id,
        first_user_message=scan.first_user_message if scan.has_user_message else None,
        archived=archived,
        archived_at_ms=now_ms if archived else None,
        git_sha=scan.git_sha,
        git_branch=scan.git_branch,
        git_origin_url=scan.git_origin_url,
        memory_mode=memory_mode,
        used_external_context=scan.used_external_context,
        rollout_size=listed.size,
        rollout_mtime_ns=listed.mtime_ns,
    )


def _memory_mode_for(
    scan: RolloutScan,
    existing: ThreadRecord | None,
    *,
    generate_memories: bool,
    disable_on_external_context: bool,
) -> MemoryMode:
    if existing is not None and existing.memory_mode != MemoryMode.enabled:
        return existing.memory_mode  # disabled / polluted never flip back on their own
    if disable_on_external_context and scan.used_external_context:
        return MemoryMode.polluted
    if scan.memory_mode == MemoryMode.disabled.value:
        return MemoryMode.disabled
    if existing is None and not generate_memories:
        # Codex stores threads created while generate_memories=false as disabled (spec 4).
        return MemoryMode.disabled
    return MemoryMode.enabled


def discover_rollouts(
    store: MemoryStore,
    codex_home: Path,
    *,
    generate_memories: bool,
    disable_on_external_context: bool,
    now_ms: int,
    include_live: bool = True,
    include_archived: bool = True,
) -> DiscoveryReport:
    report = DiscoveryReport()
    scanner = _FolderScanner(
        store,
        report,
        generate_memories=generate_memories,
        disable_on_external_context=disable_on_external_context,
        now_ms=now_ms,
    )
    roots: list[tuple[Path, bool]] = []
    if include_live:
        roots.append((codex_home / paths.SESSIONS_DIR, False))
    if include_archived:
        roots.append((codex_home / paths.ARCHIVED_SESSIONS_DIR, True))

    scanned_roots: list[str] = []
    for root, archived in roots:
        if not root.is_dir():
            # An absent folder (an unmounted disk) says nothing about the files it held: their
            # threads are not marked missing, which would forget their memories (route 4).
            continue
        scanned_roots.append(str(root))
        scanner.scan(root, archived=archived)
    scanner.finish()

    vanished = [
        known
        for known in scanner.known_states
        if known not in scanner.seen_paths
        and any(known.startswith(root + os.sep) for root in scanned_roots)
        and not any(known.startswith(folder + os.sep) for folder in scanner.unlisted_folders)
    ]
    if vanished:
        report.missing_thread_ids = store.mark_threads_missing(vanished)
    _carry_unreadable(codex_home, report, scanner.unchanged_paths)
    return report


# `$CODEX_HOME/codex-memories/unreadable-rollouts.json`: the files the last discovery could not
# read as a session, with why, for `status` and for the next run's report (an unchanged file is
# not read again, yet it is still unreadable). Rewritten by every discovery of the Codex home.
UNREADABLE_RECORD_FILE = "unreadable-rollouts.json"
UNREADABLE_RECORD_VERSION = 1


def unreadable_record_path(codex_home: Path) -> Path:
    return Path(codex_home).expanduser() / paths.STATE_DIR / UNREADABLE_RECORD_FILE


def read_unreadable_record(codex_home: Path) -> list[tuple[str, str]]:
    """(path, reason) of every file the last discovery could not read; empty when none or no
    record (read-only: `status` calls it)."""
    try:
        record = json.loads(unreadable_record_path(codex_home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(record, dict) or record.get("version") != UNREADABLE_RECORD_VERSION:
        return []
    return [(str(path), str(reason)) for path, reason in record.get("files", []) if isinstance(path, str)]


def _carry_unreadable(codex_home: Path, report: DiscoveryReport, unchanged: set[str]) -> None:
    """Name again the unreadable files this run did not re-read (unchanged since), then record
    the full list for `status`."""
    listed = {path for path, _ in report.unreadable}
    for path, reason in read_unreadable_record(codex_home):
        if path in unchanged and path not in listed:
            report.unreadable.append((path, reason))
            report.files_by_outcome[reason.split(":", 1)[0]] += 1
    if not report.unreadable and not unreadable_record_path(codex_home).exists():
        return
    record = {"version": UNREADABLE_RECORD_VERSION, "files": [[path, reason] for path, reason in report.unreadable]}
    write_text_atomically(unreadable_record_path(codex_home), json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def discover_folder(
    store: MemoryStore,
    folder: Path,
    *,
    archived: bool,
    generate_memories: bool,
    disable_on_external_context: bool,
    now_ms: int,
) -> DiscoveryReport:
    """Backfill discovery of one arbitrary folder of rollouts (searched recursively).

    Threads are archived when `archived` says so or their file is under an `archived_sessions`
    folder inside `folder`. As `discover_rollouts` otherwise, with three differences:
    `report.thread_ids` lists every thread found
    (new, changed or unchanged), so the backfill claims exactly these; a thread already known at
    another path that still exists keeps that row (the Codex home's copy wins over a copy
    elsewhere); and nothing is marked missing, since the folder may be a partial copy.
    """
    report = DiscoveryReport()
    scanner = _FolderScanner(
        store,
        report,
        generate_memories=generate_memories,
        disable_on_external_context=disable_on_external_context,
        now_ms=now_ms,
        for_backfill=True,
    )
    if (folder / paths.SESSIONS_DIR).is_dir():  # a Codex home (or a copy of one)
        scanner.scan(folder / paths.SESSIONS_DIR, archived=archived)
        if (folder / paths.ARCHIVED_SESSIONS_DIR).is_dir():
            scanner.scan(folder / paths.ARCHIVED_SESSIONS_DIR, archived=True)
    elif folder.is_dir():
        scanner.scan(folder, archived=archived)
    scanner.finish()
    return report


class _FolderScanner:
    """Reads new or changed rollout files and upserts their threads, in batches."""

    def __init__(
        self,
        store: MemoryStore,
        report: DiscoveryReport,
        *,
        generate_memories: bool,
        disable_on_external_context: bool,
        now_ms: int,
        for_backfill: bool = False,
    ) -> None:
        self.store = store
        self.report = report
        self.generate_memories = generate_memories
        self.disable_on_external_context = disable_on_external_context
        self.now_ms = now_ms
        self.for_backfill = for_backfill
        self.known_states = store.get_rollout_file_states()
        self.seen_paths: set[str] = set()
        # Rollouts listed with the size and mtime already recorded: not read again this run.
        self.unchanged_paths: set[str] = set()
        # Folders the listing could not open: their files' threads are not taken for deleted.
        self.unlisted_folders: list[str] = []
        # Files read and not yet settled: their threads' rows are looked up in one query.
        self._read: list[_ReadFile] = []

    def scan(self, root: Path, *, archived: bool) -> None:
        report = self.report
        listing = list_rollouts(root)
        self.unlisted_folders += [str(folder) for folder in listing.unlisted_folders]
        for entry in listing.skipped:
            # Still there, only not readable as a rollout now: not a deleted session.
            self.seen_paths.add(str(entry.path))
            report.left_out(entry.shown, entry.outcome, entry.detail)
        for listed in listing.rollouts:
            path = listed.path
            if self.for_backfill and not archived:
                # A copied Codex home keeps its archived sessions under archived_sessions/.
                archived_here = paths.ARCHIVED_SESSIONS_DIR in path.relative_to(root).parts[:-1]
            else:
                archived_here = archived
            report.files_seen += 1
            report.archived_files += int(archived_here)
            key = str(path)
            self.seen_paths.add(key)
            if self.known_states.get(key) == (listed.size, listed.mtime_ns):
                self.unchanged_paths.add(key)
                known_id = thread_id_from_filename(path)
                # A backfill must know every thread id: an odd file name is read again for it.
                if known_id is not None or not self.for_backfill:
                    report.files_unchanged += 1
                    if known_id is not None:
                        report.thread_ids.append(known_id)
                    continue
            try:
                scan = scan_rollout(path)
            except OSError as error:  # one file's outcome (vanished: the next run sees it missing)
                report.left_out(key, *rollout_failure(error))
                continue
            report.files_read += 1
            report.read_paths.append(key)
            report.read_scans[key] = scan
            report.lines_skipped += scan.stats.lines_skipped
            report.skipped_by_reason.update(scan.stats.skipped_by_reason)
            report.lines_repaired += scan.stats.lines_repaired
            report.repaired_by_reason.update(scan.stats.repaired_by_reason)
            thread_id = scan.thread_id or thread_id_from_filename(path)
            if thread_id is None:
                report.left_out(key, Outcome.failed_rollout_unreadable, "no session_meta id and no thread id in the file name")
                continue
            unreadable = scan.unreadable_reason()
            if unreadable is not None:
                # Named in the report; its row is still kept (by the file name's id), so an
                # unchanged file is not read again every run.
                report.left_out(key, Outcome.failed_rollout_unreadable, unreadable)
            report.thread_ids.append(thread_id)
            if scan.source not in INTERACTIVE_SESSION_SOURCES:
                report.non_interactive += 1
            self._read.append(_ReadFile(listed, scan, thread_id, archived_here))
            if len(self._read) >= _SETTLE_BATCH:
                self._settle()

    def finish(self) -> None:
        self._settle()
        # Newly polluted threads go through the store so a selected memory enqueues phase 2.
        for thread_id in self.report.polluted_thread_ids:
            self.store.mark_thread_memory_mode_polluted(thread_id)

    def _settle(self) -> None:
        """The thread rows of the files read since the last call: their stored state decides
        the memory mode (and, in a backfill, whether the thread lives at another path)."""
        if not self._read:
            return
        report = self.report
        existing_by_id = self.store.get_threads(read.thread_id for read in self._read)
        batch: list[ThreadRecord] = []
        for read in self._read:
            existing = existing_by_id.get(read.thread_id)
            if (
                self.for_backfill
                and existing is not None
                and existing.rollout_path != str(read.listed.path)
                and Path(existing.rollout_path).is_file()
            ):
                report.known_elsewhere += 1
                continue
            mode = _memory_mode_for(
                read.scan,
                existing,
                generate_memories=self.generate_memories,
                disable_on_external_context=self.disable_on_external_context,
            )
            if mode == MemoryMode.polluted and (existing is None or existing.memory_mode != mode):
                report.polluted_thread_ids.append(read.thread_id)
            batch.append(
                _thread_from_scan(
                    read.scan,
                    thread_id=read.thread_id,
                    listed=read.listed,
                    archived=read.archived,
                    memory_mode=mode,
                    now_ms=self.now_ms,
                )
            )
        self._read.clear()
        if batch:
            report.threads_upserted += self.store.upsert_threads(batch)


# Files read per lookup of their threads' rows and per upsert of the results.
_SETTLE_BATCH = 200


@dataclass(frozen=True, slots=True)
class _ReadFile:
    listed: ListedRollout
    scan: RolloutScan
    thread_id: str
    archived: bool


def record_project_keys(store: MemoryStore, codex_home: Path) -> int:
    """Write the folder -> project map of the recorded sessions; the number of folders in it."""
    keys = recorded_project_keys(store.latest_git_origin_by_cwd())
    write_recorded_project_keys(paths.recorded_project_keys_path(codex_home), keys)
    return len(keys)
