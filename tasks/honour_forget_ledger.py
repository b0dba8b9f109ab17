"""Task: what the memory folder's forget ledger says was forgotten is forgotten in this state DB
too (`codex_memories.forget.ledger.honour_ledger`).

Threads the ledger names (by id, project or folder) lose their memory and are disabled; the
stage-1 outputs of the threads this run extracted lose the lines holding a forgotten text. Writes one `forget_audit` row per change and
returns the actions. Idempotent: a rerun finds nothing more.
"""

from prefect import get_run_logger, task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.honour import honour_ledger
from codex_memories.forget.ledger import ForgetLedger
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="honour-forget-ledger", cache_policy=None)
def honour_forget_ledger(config: RuntimeConfig, extracted: list[str] | None = None) -> list[ForgetAction]:
    """Forget again what the folder's ledger names, whatever this state DB remembers;
    `extracted`: the threads this run extracted (their outputs are tested for forgotten texts)."""
    store = open_store(config.settings.resolved_db_url)
    ledger = ForgetLedger.load(memory_root(config))
    actions = record_actions(store, honour_ledger(store, ledger, extracted=extracted if extracted is not None else []))
    get_run_logger().info("forget ledger: %d change(s) in this state DB", len(actions))
    return actions
