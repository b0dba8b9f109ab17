"""Task: phase 1 step 3b, which folder belongs to which project, from the sessions' own git
records (`codex_memories.ingest.discovery.record_project_keys`).

Output: how many folders the map holds. Side effect: `$CODEX_HOME/codex-memories/project-keys.json`
rewritten (atomically) when it changed; the hooks read it when a folder's git config cannot be read.
"""

from prefect import task

from codex_memories.ingest.discovery import record_project_keys as write_project_keys
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig


@task(name="record-project-keys", cache_policy=None)
def record_project_keys(config: RuntimeConfig) -> int:
    return write_project_keys(open_store(config.settings.resolved_db_url), config.settings.codex_home_path)
