"""Forget: one forgetting route on request, for the deployment (spec section 6).

Routes: the requestable ones of the route table (`codex_memories.forget.routes`), by their
`ForgetRoute` value as stored in `forget_audit`: `thread_deletion` (route 4: delete a thread's
memory and keep it from being extracted again), `disabled` and `pollution` (route 5: the thread
leaves every phase-2 selection), `manual_reset` (route 7: every memory row and the memory
folder's contents), and the selective routes of issue 15: `project_deletion` (target: a
directory on the worker or a project key; every thread of that project, as route 4) and
`text_match` (target: a text; every memory line and file name holding it, in the folder, its git
baseline and the stage-1 outputs; the report, the log and the audit never show the text, only
its length). Each writes `forget_audit` rows; the run's artifact lists
them. Every route here edits the exported team memory files of the projects it touches
(`codex_memories.forget.team_files`; the audit row's `removed.team_files` says what changed).
The memory folder itself changes at the next phase 2, which the store enqueues when a
selected memory went (`text_match` changes it at once). Orchestration only; `codex_memories.forget` decides. Parameters are
settings overrides, none secret.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from prefect import flow, get_run_logger

import codex_memories_flows  # noqa: F401 - a deployment's file entrypoint: installs the run-log filter
from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.routes import requestable_values, targeted_values
from codex_memories.forget.text_match import audited_match_text
from codex_memories.reports.forget import ForgetReport
from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories.state.records import ForgetRoute
from codex_memories_flows.flow_runs import run_overrides
from codex_memories_tasks.disable_thread import disable_thread
from codex_memories_tasks.forget_match import forget_match
from codex_memories_tasks.forget_project import forget_project
from codex_memories_tasks.forget_thread import forget_thread
from codex_memories_tasks.pollute_thread import pollute_thread
from codex_memories_tasks.report import publish_forget_report
from codex_memories_tasks.reset_memories import reset_memories

# The requestable `ForgetRoute` values of the route table, as a Literal so Prefect shows a choice.
ForgetRouteName = Literal[tuple(value.value for value in requestable_values())]  # type: ignore[valid-type]

# The task of each targeted value; a route the table marks targeted without a task here fails the
# import, not a request (the untargeted `manual_reset` is run below).
_TASKS: dict[ForgetRoute, Callable[[RuntimeConfig, str], list[ForgetAction]]] = {
    ForgetRoute.thread_deletion: forget_thread,
    ForgetRoute.disabled: disable_thread,
    ForgetRoute.pollution: pollute_thread,
    ForgetRoute.project_deletion: forget_project,
    ForgetRoute.text_match: forget_match,
}
_TARGETED_ROUTES = {value: _TASKS[value] for value in targeted_values()}


@flow(name="memories-forget")
def forget(route: ForgetRouteName, target: str | None = None, overrides: SettingsOverrides | None = None) -> ForgetReport:
    """Run one forgetting route with an audit trail.

    Args:
        route: thread_deletion, disabled or pollution (with a target thread id), manual_reset,
            project_deletion (a directory or project key) or text_match (a text).
        target: the thread id, directory, project key or text; none for manual_reset.
        overrides: settings for this run on top of the deployment's default overrides (Codex
            home, state DB, memory root, ...); a field given replaces that field only.
    """
    return run_forget(run_overrides(overrides).load(), route, target)


def run_forget(config: RuntimeConfig, route: ForgetRouteName, target: str | None) -> ForgetReport:
    shown = audited_match_text(target) if route == ForgetRoute.text_match and target else target
    report = ForgetReport(route=route, target=shown)

    # 1. Check the request: the other routes name a target; a reset names nothing.
    if route != ForgetRoute.manual_reset and not target:
        raise ValueError(f"route {route!r} needs a target")
    if route == ForgetRoute.manual_reset and target:
        raise ValueError("route 'manual_reset' takes no target: it forgets everything")
    if route not in _TARGETED_ROUTES and route != ForgetRoute.manual_reset:
        raise ValueError(f"unknown route {route!r}")

    # 2. Forget (one task, one audit row per target changed).
    if route == ForgetRoute.manual_reset:
        report.forget_audit = list(reset_memories(config))
    else:
        report.forget_audit = list(_TARGETED_ROUTES[route](config, target or ""))

    # 3. Report the audit rows written.
    publish_forget_report(report)
    get_run_logger().info("forget %s %s: %d audit row(s)", route, shown or "", len(report.forget_audit))
    return report
