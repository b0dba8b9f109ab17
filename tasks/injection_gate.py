from prefect import task

from codex_memories.consolidate.injection_gate import InjectionFinding
from codex_memories.consolidate.steps import gate_consolidated_files
from codex_memories.storage import LocalWorkspace


@task(name="injection-gate", cache_policy=None)
def injection_gate(workspace: LocalWorkspace) -> list[InjectionFinding]:
    """Lines of the consolidated files that look injected (empty: the folder may go live)."""
    return gate_consolidated_files(workspace.path)
