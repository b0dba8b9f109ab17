"""Forgetting route `entry_expiry`: typed entries whose expiry date has passed (issue 15).

A temporary rule ("the branch is being refactored, don't commit this week") carries an expiry in
its typed-entry suffix (`typed_entries`). At the first phase 2 after that date the entry leaves:

- from the stage-1 rows that hold it (`raw_memory` and `rollout_summary`, through
  `MemoryStore.replace_stage1_output_texts`), so no later sync brings it back;
- from the synced inputs on disk (`raw_memories.md` and the thread's `rollout_summaries/` file),
  so the workspace diff shows the removal and the consolidator, heuristic or model, drops what
  only that entry supported (spec 6: every route ends in an input changing);
- with one `ForgetAction` per entry and thread (target: the thread id; removed: the entry's
  text, type and expiry), which the caller records.

Why not route 6 (extension expiry)? That route deletes whole extension resource files by the
timestamp in their name after a fixed 7 days. An entry is one line inside a stage-1 output with a
date of its own, and removing it must also change the DB row, or the next sync would write it
again: a different target, a different trigger, a different store operation.

`next_entry_expiry(root)` is the moment the first dated entry of the synced inputs expires, so
phase 2's early finish (step 2, `consolidate.steps.check_settled`) runs the full phase 2 then.

Contract: `expire_entries(root, store, refs, now)`: `refs` is phase 2's selection (the rows the
synced files were made from); `now` is timezone-aware. Cheap when nothing expired: one read of
`raw_memories.md` and a substring test. Idempotent: a second call finds nothing expired.
Must run under the phase-2 lock, after the inputs sync and before the diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from codex_memories.forget.audit import ForgetAction
from codex_memories.paths import RAW_MEMORIES_FILE, rollout_summary_path
from codex_memories.raw_memories import rollout_summary_stem, thread_sections
from codex_memories.redact import redact_secrets
from codex_memories.state.records import ForgetRoute, Stage1OutputRef
from codex_memories.state.store import MemoryStore
from codex_memories.storage import RootLike, open_memory_root
from codex_memories.typed_entries import ExpiredEntry, drop_expired_lines, has_expired_entry, next_expiry, normalise


def expire_entries(root: RootLike, store: MemoryStore, refs: Sequence[Stage1OutputRef], now: datetime) -> list[ForgetAction]:
    """Remove expired typed entries from the selected rows and the synced files; one action each."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    root = open_memory_root(root)
    if not root.is_file(RAW_MEMORIES_FILE):
        return []
    raw_memories = root.read_text(RAW_MEMORIES_FILE)
    if not has_expired_entry(raw_memories, now):
        return []
    affected = _threads_with_expired_entries(raw_memories, now)
    outputs = store.load_stage1_outputs([ref for ref in refs if ref.thread_id in affected])

    actions: list[ForgetAction] = []
    for output in outputs:
        raw_memory, expired_raw = drop_expired_lines(output.raw_memory, now)
        rollout_summary, expired_summary = drop_expired_lines(output.rollout_summary, now)
        if not (expired_raw or expired_summary):
            continue
        store.replace_stage1_output_texts(
            thread_id=output.thread_id,
            source_updated_at=output.source_updated_at,
            raw_memory=redact_secrets(raw_memory),
            rollout_summary=redact_secrets(rollout_summary),
        )
        summary_file = rollout_summary_path(rollout_summary_stem(output.thread_id, output.source_updated_at, output.rollout_slug))
        if root.is_file(summary_file):
            root.write_if_changed(summary_file, drop_expired_lines(root.read_text(summary_file), now)[0].encode("utf-8"))
        actions += expiry_actions(output.thread_id, [*expired_raw, *expired_summary])
    root.write_if_changed(RAW_MEMORIES_FILE, drop_expired_lines(raw_memories, now)[0].encode("utf-8"))
    return actions


def next_entry_expiry(root: RootLike) -> int | None:
    """Epoch seconds at which the first dated entry of the synced `raw_memories.md` expires, or
    None: phase 2's early finish, step 2 (`check_settled`) must not call a folder settled past that moment."""
    root = open_memory_root(root)
    if not root.is_file(RAW_MEMORIES_FILE):
        return None
    moment = next_expiry(root.read_text(RAW_MEMORIES_FILE))
    return None if moment is None else int(moment.timestamp())


def synced_inputs_hold_expired_entry(root: RootLike, now: datetime) -> bool:
    """Whether `expire_entries` would find anything: phase 2 stages its workspace only then."""
    root = open_memory_root(root)
    return root.is_file(RAW_MEMORIES_FILE) and has_expired_entry(root.read_text(RAW_MEMORIES_FILE), now)


def expiry_actions(thread_id: str, expired: Sequence[ExpiredEntry]) -> list[ForgetAction]:
    """One action per distinct expired entry of one thread (pure)."""
    seen: list[str] = []
    actions = []
    for entry in expired:
        text = redact_secrets(entry.text)
        folded = normalise(text)
        # The same entry in the raw memory and in the summary ("<quote> -> follow this ...") is
        # one forgotten entry: the first wording, the raw memory's, names it.
        if any(folded in earlier or earlier in folded for earlier in seen):
            continue
        seen.append(folded)
        assert entry.meta.expires is not None  # only dated entries expire
        actions.append(
            ForgetAction(
                route=ForgetRoute.entry_expiry,
                target=thread_id,
                reason=f"temporary {entry.meta.type} expired after {entry.meta.expires.isoformat()}",
                removed={"entry": text, "type": entry.meta.type, "expires": entry.meta.expires.isoformat()},
            )
        )
    return actions


def _threads_with_expired_entries(raw_memories: str, now: datetime) -> set[str]:
    return {section.thread_id for section in thread_sections(raw_memories) if drop_expired_lines(section.body, now)[1]}
