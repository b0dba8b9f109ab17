"""Task: selective forgetting, one project (`codex_memories.forget.selective.forget_project`).

`target` is a directory on the worker (its project key and folder) or a project key. Deletes the
memory of every thread of that project and disables them (recorded first in the memory
folder's forget ledger), writes one `forget_audit` row and
returns it (none when there was nothing to forget). Idempotent.
"""

from prefect import task

from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.forget.selective import forget_project as forget
from codex_memories.forget.selective import resolve_project
from codex_memories.runtime import memory_root, open_store
from codex_memories.settings import RuntimeConfig


@task(name="forget-project", cache_policy=None)
def forget_project(config: RuntimeConfig, target: str) -> list[ForgetAction]:
    """Selective forgetting: every memory of one project, and no re-extraction of its threads."""
    store = open_store(config.settings.resolved_db_url)
    return record_actions(
        store, forget(store, resolve_project(target), root=memory_root(config), reason="project forgotten by the forget flow")
    )
