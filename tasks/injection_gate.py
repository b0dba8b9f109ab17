"""Tasks: phase 2 step 11, the injection gate, and quarantining what it traced to a source.

`injection_gate`: the findings over the consolidated files (`consolidate.steps.gate_consolidated_files`).
`quarantine_injection_sources`: on findings, trace them to the selected stage-1 outputs and mark
those threads polluted, audited (`consolidate.steps.quarantine_injection_sources`).
`quarantine_refused_notes`: before consolidating, move the live notes the gate refuses to the
quarantine, audited (`consolidate.note_quarantine`), so the rest consolidates.
"""

from prefect import get_run_logger, task

from codex_memories.consolidate.note_quarantine import quarantine_refused_notes as quarantine_notes
from codex_memories.consolidate.steps import GateVerdict, Selection, gate_consolidated_files
from codex_memories.consolidate.steps import quarantine_injection_sources as quarantine_sources
from codex_memories.evidence.screen import InjectionFinding
from codex_memories.runtime import Phase2Context


@task(name="injection-gate", cache_policy=None)
def injection_gate(context: Phase2Context) -> list[InjectionFinding]:
    """Lines of the consolidated files that look injected (empty: the folder may go live)."""
    return gate_consolidated_files(context.workspace.path)


@task(name="quarantine-injection-sources", cache_policy=None)
def quarantine_injection_sources(
    context: Phase2Context, findings: list[InjectionFinding], selection: Selection
) -> GateVerdict:
    """The verdict on a refused folder: its lines, their sources, the threads quarantined."""
    verdict = quarantine_sources(context.workspace.path, findings, selection, context.store)
    if verdict.quarantined:
        get_run_logger().warning("injection gate: quarantined thread(s) %s", ", ".join(verdict.quarantined))
    return verdict


@task(name="quarantine-refused-notes", cache_policy=None)
def quarantine_refused_notes(context: Phase2Context) -> list[str]:
    """Live notes the gate refuses leave the workspace for the quarantine (audited); their names."""
    held = quarantine_notes(context.workspace.path, context.store)
    if held:
        get_run_logger().warning("injection gate: quarantined note(s) %s", ", ".join(note.name for note in held))
    return [note.name for note in held]
