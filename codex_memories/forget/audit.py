"""The forget audit: the one record every route returns, the one writer, and the reader.

Contract:
- `ForgetAction` is what one route removed from one target, and why; it carries a
  `ForgetRoute` (never a free string). Route blocks build and return these; none of them
  writes an audit row.
- `record_actions(store, actions)` is the only code that writes `forget_audit` rows: one row per
  action, in order, and returns the same actions so a caller can write
  `return record_actions(store, route_block(...))`. An empty list writes nothing.
- `audit_rows_since(store, since)` reads the rows back for a run's report.

Side effects: `record_actions` appends rows (never updates or deletes). Not idempotent by
itself: recording the same actions twice writes two rows, which is why the route blocks return
nothing when they find nothing to forget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codex_memories.state.records import ForgetAuditRecord, ForgetRoute
from codex_memories.state.store import MemoryStore


@dataclass(frozen=True)
class ForgetAction:
    """What one route removed from one target, and why (one `forget_audit` row)."""

    route: ForgetRoute
    target: str
    reason: str
    removed: dict[str, Any]


def record_actions(store: MemoryStore, actions: Sequence[ForgetAction]) -> list[ForgetAction]:
    """Write one `forget_audit` row per action, in order; return the actions written."""
    for action in actions:
        store.record_forget_audit(route=action.route, target=action.target, reason=action.reason, removed=action.removed)
    return list(actions)


def audit_rows_since(store: MemoryStore, since: int) -> list[ForgetAuditRecord]:
    """Audit rows written at or after `since` (Unix seconds): what a run forgot, for its report.

    Rows that other runs wrote in the same window are included; the audit has no run id."""
    return store.list_forget_audit(since=since)
