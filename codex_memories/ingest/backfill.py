"""Backfill: old and archived rollouts, wherever they are, become stage-1 memories.

Inputs: a source (`archived` = `$CODEX_HOME/archived_sessions`, the default; any local folder;
or an `s3://bucket/prefix`), optional `since`/`until` days (UTC; `since` inclusive, `until`
inclusive of the whole day) on the thread's last activity, and a batch size.

What differs from phase 1: the idle and age windows do not apply and archived threads are
claimed; what does not: only interactive sources, only `memory_mode = enabled` threads, the
same leases, extraction, quality check and outcomes.

Object-store sources are copied first to `<backfill cache>/s3/<bucket>/<prefix>/…` (setting
`backfill_cache_dir`, default `$CODEX_HOME/codex-memories/backfill-cache`). The copies are kept:
the threads' `rollout_path` points at them, extraction reads them later, and a re-run downloads
only objects whose size changed or that are new. Each copy's mtime is the object's
LastModified, so discovery's size-and-mtime check sees an unchanged object as unchanged.

Resumable: a thread whose stage-1 output or success watermark is at its version is not a
candidate (`list_stage1_backfill_candidates`), so a re-run continues where the last stopped and
a finished backfill re-run does nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import fsspec

from codex_memories import paths
from codex_memories.settings import Settings
from codex_memories.state.records import Stage1Claim, Stage1ClaimOutcome, ThreadRecord
from codex_memories.state.store import MemoryStore
from codex_memories.storage import object_store_options

ARCHIVED_SOURCE = "archived"
OBJECT_STORE_CACHE_DIR = "s3"
_ROLLOUT_SUFFIXES = (".jsonl", ".jsonl.zst")


class BackfillSourceError(ValueError):
    """A source or date the user can fix; the message is one line."""


@dataclass(frozen=True)
class BackfillSource:
    """Where the rollouts are read (`local_dir`) and how their threads are recorded."""

    description: str
    local_dir: Path
    archived: bool
    object_store_url: str | None = None


@dataclass
class FetchReport:
    objects_seen: int = 0
    downloaded: list[str] = field(default_factory=list)
    unchanged: int = 0


@dataclass(frozen=True)
class DayWindow:
    since_ms: int | None
    until_ms: int | None


def resolve_source(source: str | None, settings: Settings) -> BackfillSource:
    """`archived`/None, a local path, or an `s3://` prefix (copied to the cache folder)."""
    if source is None or source == ARCHIVED_SOURCE:
        folder = settings.codex_home_path / paths.ARCHIVED_SESSIONS_DIR
        return BackfillSource(description=str(folder), local_dir=folder, archived=True)
    if source.startswith(("s3://", "s3a://")):
        bucket_and_prefix = source.split("://", 1)[1].strip("/")
        if not bucket_and_prefix:
            raise BackfillSourceError(f"backfill source {source!r} names no bucket")
        cache = settings.resolved_backfill_cache_dir / OBJECT_STORE_CACHE_DIR / bucket_and_prefix
        return BackfillSource(
            description=source,
            local_dir=cache,
            archived=_names_archived_folder(bucket_and_prefix),
            object_store_url=f"s3://{bucket_and_prefix}",
        )
    if "://" in source and not source.startswith("file://"):
        raise BackfillSourceError(f"backfill source {source!r}: only local folders and s3:// prefixes are supported")
    folder = Path(source.removeprefix("file://")).expanduser().resolve()
    if not folder.is_dir():
        raise BackfillSourceError(f"backfill source {folder} is not a folder")
    return BackfillSource(description=str(folder), local_dir=folder, archived=_names_archived_folder(str(folder)))


def _names_archived_folder(location: str) -> bool:
    """Threads from an `archived_sessions` folder (Codex's or a copy of one) are archived."""
    return paths.ARCHIVED_SESSIONS_DIR in location.rstrip("/").split("/")


def parse_day(text: str | date | None, *, name: str) -> date | None:
    if text is None or isinstance(text, date):
        return text
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BackfillSourceError(f"--{name} {text!r}: expected a day as YYYY-MM-DD") from None


def day_window(since: str | date | None, until: str | date | None) -> DayWindow:
    """`since` from 00:00 UTC of its day, `until` to the end of its day (UTC), in ms."""
    since_day, until_day = parse_day(since, name="since"), parse_day(until, name="until")
    if since_day and until_day and until_day < since_day:
        raise BackfillSourceError(f"--until {until_day} is before --since {since_day}")

    def start_ms(day: date) -> int:
        return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)

    return DayWindow(
        since_ms=start_ms(since_day) if since_day else None,
        until_ms=start_ms(until_day + timedelta(days=1)) if until_day else None,
    )


def fetch_object_store_source(source: BackfillSource, *, s3_endpoint_url: str | None) -> FetchReport:
    """Copy the rollout objects under `source.object_store_url` into `source.local_dir`.

    Only rollout files (`rollout-*.jsonl[.zst]`) are copied; an object whose local copy has the
    same size is left alone. Each download goes to a temporary name and is renamed into place,
    so an interrupted fetch never leaves a truncated rollout behind.
    """
    report = FetchReport()
    if source.object_store_url is None:
        return report
    url = source.object_store_url
    filesystem, root = fsspec.core.url_to_fs(url, **object_store_options(url, s3_endpoint_url=s3_endpoint_url))
    root = root.rstrip("/")
    listing = filesystem.find(root, detail=True, withdirs=False)
    for remote, info in sorted(listing.items()):
        name = remote.rsplit("/", 1)[-1]
        if not (name.startswith("rollout-") and name.endswith(_ROLLOUT_SUFFIXES)):
            continue
        relative = remote[len(root) + 1 :] if remote.startswith(root + "/") else name
        if any(part in ("", ".", "..") for part in relative.split("/")):
            continue  # a key that would escape the cache folder is not a rollout we can keep
        report.objects_seen += 1
        target = source.local_dir / relative
        size = int(info.get("size") or 0)
        if target.is_file() and target.stat().st_size == size:
            report.unchanged += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        filesystem.get_file(remote, str(partial))
        modified = _last_modified(info)
        if modified is not None:
            os.utime(partial, (modified, modified))
        os.replace(partial, target)
        report.downloaded.append(relative)
    return report


def _last_modified(info: dict[str, object]) -> float | None:
    value = info.get("LastModified") or info.get("mtime")
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    return None


@dataclass
class BatchClaim:
    claims: list[Stage1Claim] = field(default_factory=list)
    # Threads another claim path owns or that are backing off: (thread id, outcome).
    skipped: list[tuple[str, Stage1ClaimOutcome]] = field(default_factory=list)


def claim_backfill_batch(
    store: MemoryStore,
    threads: list[ThreadRecord],
    *,
    worker_id: str,
    lease_seconds: int,
    max_running_jobs: int,
) -> BatchClaim:
    """Claim each candidate at its version, as phase 1 does (same leases, same outcomes)."""
    batch = BatchClaim()
    for thread in threads:
        source_updated_at = thread.updated_at_ms // 1000
        result = store.try_claim_stage1_job(
            thread_id=thread.id,
            worker_id=worker_id,
            source_updated_at=source_updated_at,
            lease_seconds=lease_seconds,
            max_running_jobs=max_running_jobs,
        )
        if result.outcome is Stage1ClaimOutcome.claimed and result.ownership_token is not None:
            batch.claims.append(
                Stage1Claim(
                    thread_id=thread.id,
                    ownership_token=result.ownership_token,
                    source_updated_at=source_updated_at,
                    rollout_path=thread.rollout_path,
                    cwd=thread.cwd,
                    git_branch=thread.git_branch,
                    source=thread.source,
                    git_origin_url=thread.git_origin_url,
                )
            )
        else:
            batch.skipped.append((thread.id, result.outcome))
    return batch


def older_than_selection_window(threads: list[ThreadRecord], *, max_unused_days: int, now_ms: int) -> int:
    """How many threads phase 2 will not select once extracted (spec 3 step 4: an unused memory
    counts only while `source_updated_at` is within `max_unused_days`), and which the next
    retention prune deletes. Said in the report, never hidden: raise `max_unused_days` (up to
    365) to keep older sessions' memories."""
    cutoff_ms = now_ms - max_unused_days * 86_400_000
    return sum(1 for thread in threads if thread.updated_at_ms < cutoff_ms)
