"""Task: warn when Codex's own memory pipeline would rewrite the folder we write (`codex_home.codex_rewrite_warning`).

Input: the run's configuration. Output: the warning line, or None. Side effect: the line in the
flow run's log (a warning; the run goes on: `doctor` names the fix). Reads Codex's config.toml only.
"""

from prefect import get_run_logger, task

from codex_memories.codex_home import codex_rewrite_warning
from codex_memories.settings import RuntimeConfig


@task(name="warn-if-codex-rewrites-the-folder", cache_policy=None)
def warn_if_codex_rewrites_folder(config: RuntimeConfig) -> str | None:
    warning = codex_rewrite_warning(config.settings.codex_home_path, config.settings.resolved_memory_root)
    if warning:
        get_run_logger().warning(warning)
    return warning
