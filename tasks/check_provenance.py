"""Task: phase 2 step 10a, the provenance check (`consolidate.provenance_check.check_provenance`).

A line the consolidation added whose words came only from tool output in the sessions it was
traced to leaves the consolidated files before the injection gate reads them; each removal is a
forget-audit row (route `tool_output_provenance`).
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.provenance_check import ProvenanceFindings
from codex_memories.consolidate.provenance_check import check_provenance as check
from codex_memories.consolidate.steps import Selection
from codex_memories.runtime import Phase2Context


@task(name="check-provenance", cache_policy=None)
def check_provenance(context: Phase2Context, selection: Selection) -> ProvenanceFindings:
    findings = check(context.workspace.path, selection.refs, context.store)
    if findings.derived:
        get_run_logger().warning("provenance: %s", findings.summary())
    return findings
