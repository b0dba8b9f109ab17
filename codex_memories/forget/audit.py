"""The forget audit: the one record every route returns, the one writer, and the reader.

Contract:
- `ForgetAction` is what one route removed from one target, and why; it carries a
  `ForgetRoute` (never a free string). Route blocks build and return these; none of them
  writes an audit row.
- `record_actions(store, actions)` is the only code that writes `forget_audit` rows: one row per
  action, in order, and returns the same actions so a caller can write
  `return record_actions(store, route_block(...))`. An empty list writes nothing.
- `carry_out(store, lambda: route_block(...))` is `record_actions` for a block that may stop half
  way: a `ForgetIncomplete` carries what was already changed, its rows are written, and the
  error propagates (a forget and its audit row go together, issue 36).
- `audit_mark(store)` / `audit_rows_after(store, mark)`: a run takes the mark when it starts and
  reads back the rows written after it for its report (by row id: a row of a run that ended in
  the same second is not this run's).

Side effects: `record_actions` appends rows (never updates or deletes). Not idempotent by
itself: recording the same actions twice writes two rows, which is why the route blocks return
nothing when they find nothing to forget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


class ForgetIncomplete(RuntimeError):
    """A forget that stopped after it had changed something: `actions` says what it did, so
    that its audit row is written all the same (`carry_out`)."""

    def __init__(self, message: str, actions: Sequence[ForgetAction]) -> None:
        super().__init__(message)
        self.actions = list(actions)


def carry_out(store: MemoryStore, forget: Callable[[], Sequence[ForgetAction]]) -> list[ForgetAction]:
    """Run a route block and write its audit rows, also when it stops half way
    (`ForgetIncomplete`: its rows are written, then the error goes on)."""
    try:
        actions = forget()
    except ForgetIncomplete as stopped:
        record_actions(store, stopped.actions)
        raise
    return record_actions(store, actions)


def record_actions(store: MemoryStore, actions: Sequence[ForgetAction]) -> list[ForgetAction]:
    """Write one `forget_audit` row per action, in order; return the actions written."""
    for action in actions:
        store.record_forget_audit(route=action.route, target=action.target, reason=action.reason, removed=action.removed)
    return list(actions)


def audit_mark(store: MemoryStore) -> int:
    """Where the audit stands now: the id of its newest row (0 when empty)."""
    return store.last_forget_audit_id()


def audit_rows_after(store: MemoryStore, mark: int) -> list[ForgetAuditRecord]:
    """Audit rows written after `mark` (see `audit_mark`): what a run forgot, for its report.

    Rows that another run wrote while this one ran are included; the audit has no run id."""
    return store.list_forget_audit(after_id=mark)
