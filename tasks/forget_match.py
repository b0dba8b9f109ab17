"""Task: selective forgetting by text (`codex_memories.forget.text_match.forget_match`).

Removes every memory line and file name holding `text` from the memory folder, its git baseline
and the stage-1 outputs that would re-create them, writes one `forget_audit` row (which never
holds the text) and returns it (none when nothing held it); one that stops half way still
writes its row (`ForgetIncomplete`). Raises `ResetRefused` while phase 2 holds its lease.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, carry_out
from codex_memories.forget.text_match import forget_match as forget
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-match", cache_policy=None)
def forget_match(config: RuntimeConfig, text: str) -> list[ForgetAction]:
    """Selective forgetting: every memory line that holds `text`."""
    store = open_store(config.settings.resolved_db_url)
    root = memory_root(config)
    return carry_out(store, lambda: forget(store, root, text, reason="lines forgotten by the forget flow"))
