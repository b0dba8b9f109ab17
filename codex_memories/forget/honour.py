"""Honouring the folder's forget ledger in a state DB: what phase 1 runs after discovery and after
extraction (issue 36, item 4; the ledger itself is `forget.ledger`).

`honour_ledger(store, ledger)`: every thread the ledger names (by id, project or folder) that
still has a memory or is not disabled is forgotten as `forget --thread` does (output deleted,
memory mode `disabled`, never claimed again); every stage-1 output holding a forgotten text loses
those lines and its slug the words carrying it (as `forget --match` edits outputs). Returns the
`ForgetAction`s (route `thread_deletion` / `text_match`, reason `FROM_LEDGER`); no audit row (the
caller records them). Idempotent.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.ledger import FROM_LEDGER, ForgetLedger
from codex_memories.forget.text_match import output_change, output_changes, rewrite_output
from codex_memories.forget.threads import forget_thread
from codex_memories.state.records import ForgetRoute, MemoryMode


def honour_ledger(store: Any, ledger: ForgetLedger, *, extracted: Collection[str] | None = None) -> list[ForgetAction]:
    """Forget again, in this state DB, what the folder's ledger says was forgotten (module contract).

    `extracted`: the threads whose outputs this run wrote; only those are tested for forgotten
    texts (each line is hashed window by window: every output of a large store on every run
    would cost seconds, and the older ones were tested when they were written). None: all."""
    if ledger.empty:
        return []
    actions: list[ForgetAction] = []
    for thread_id, cwd, origin, mode in store.thread_origins():
        if not ledger.names_thread(thread_id, cwd, origin):
            continue
        if mode == MemoryMode.disabled.value and store.get_stage1_output(thread_id) is None:
            continue
        actions += forget_thread(store, thread_id, root=None, reason=FROM_LEDGER, team_files=False)
    for forgotten in ledger.texts:
        if extracted is None:
            changes, _kept = output_changes(store, forgotten)
        else:
            outputs = [output for output in map(store.get_stage1_output, sorted(extracted)) if output is not None]
            changes = [change for change in map(lambda output: output_change(output, forgotten), outputs) if _changed(change)]
        for change in changes:
            rewrite_output(store, change.output.thread_id, forgotten)
        if changes:
            actions.append(
                ForgetAction(
                    route=ForgetRoute.text_match,
                    target="a text the memory folder's forget ledger names",
                    reason=FROM_LEDGER,
                    removed={"stage1_outputs": [change.output.thread_id for change in changes]},
                )
            )
    return actions


def _changed(change: Any) -> bool:
    return bool(change.raw_memory.changed or change.rollout_summary.changed or change.slug_renamed)
