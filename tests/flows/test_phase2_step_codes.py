"""Each phase-2 step fails with its own outcome code (docs/prefect.md, "Outcomes"), so a red run
names the step that failed: read from the flow's own `stage_step(<code>, <task>, ...)` calls."""

from __future__ import annotations

import ast
from pathlib import Path

from codex_memories.outcomes import Outcome

PHASE2_FLOW = Path(__file__).resolve().parents[2] / "flows" / "phase2.py"


def _stage_steps() -> list[tuple[str, str]]:
    steps = []
    for node in ast.walk(ast.parse(PHASE2_FLOW.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "stage_step":
            code, task = node.args[0], node.args[1]
            assert isinstance(code, ast.Attribute) and isinstance(task, ast.Name), ast.unparse(node)
            steps.append((code.attr, task.id))
    return steps


def test_every_phase2_step_has_its_own_failure_code() -> None:
    steps = _stage_steps()
    assert len(steps) > 15
    tasks_by_code: dict[str, set[str]] = {}
    for code, task in steps:
        tasks_by_code.setdefault(code, set()).add(task)
    shared = {code: sorted(tasks) for code, tasks in tasks_by_code.items() if len(tasks) > 1}
    assert shared == {}
    assert all(Outcome(code).is_failure for code in tasks_by_code)


def test_every_phase2_failure_code_is_in_the_outcome_table() -> None:
    table = (PHASE2_FLOW.parents[1] / "docs" / "prefect.md").read_text(encoding="utf-8")
    codes = {code for code, _ in _stage_steps()}
    listed_as_range = "`failed_mark_forget_audit` ... `failed_forget_audit`"
    assert listed_as_range in table
    ordered = [outcome.value for outcome in Outcome]
    span = ordered[ordered.index("failed_mark_forget_audit") : ordered.index("failed_forget_audit") + 1]
    assert codes <= set(span)
