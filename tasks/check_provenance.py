"""Task: phase 2 step 10a, the provenance check (`consolidate.provenance_check.check_provenance`).

A line the consolidation added whose words came only from tool output in the sessions it was
traced to leaves the consolidated files before the injection gate reads them; each removal is a
forget-audit row (route `tool_output_provenance`).
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.provenance_check import ProvenanceFindings
from codex_memories.consolidate.provenance_check import check_provenance as check
from codex_memories.consolidate.steps import Selection
from codex_memories.runtime import open_store
from codex_memories.settings import RuntimeConfig
from codex_memories.storage import LocalWorkspace


@task(name="check-provenance", cache_policy=None)
def check_provenance(workspace: LocalWorkspace, selection: Selection, config: RuntimeConfig) -> ProvenanceFindings:
    findings = check(workspace.path, selection.refs, open_store(config.settings.resolved_db_url))
    if findings.derived:
        get_run_logger().warning("provenance: %s", findings.summary())
    return findings
