"""Task: warn about what in the Codex home undoes our work (`codex.doctor.codex_home_warnings`):
Codex's own memory pipeline would rewrite the folder we write, or the hook launcher's Python
environment is gone so the hooks add nothing.

Input: the run's configuration. Output: the warning lines joined into one (None when there are
none). Side effect: each line in the flow run's log (a warning; the run goes on: `doctor` names
the fix). Reads Codex's config.toml and the launcher only.
"""

from prefect import get_run_logger, task

from codex_memories.codex.doctor import codex_home_warnings
from codex_memories.settings import RuntimeConfig


@task(name="warn-about-the-codex-home", cache_policy=None)
def warn_about_codex_home(config: RuntimeConfig) -> str | None:
    warnings = codex_home_warnings(config.settings.codex_home_path, config.settings.resolved_memory_root)
    for warning in warnings:
        get_run_logger().warning(warning)
    return "; ".join(warnings) or None
