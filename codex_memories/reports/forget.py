"""A forget run's report: the audit rows it wrote, as a markdown section and the run's artifact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from codex_memories.reports.markdown import cell


class AuditLine(Protocol):
    """A forget-audit row as stored (`ForgetAuditRecord`) or as just written (`ForgetAction`)."""

    @property
    def route(self) -> Any: ...
    @property
    def target(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def removed(self) -> Any: ...


def render_forget_audit(rows: Sequence[AuditLine]) -> list[str]:
    """The forget-audit rows written during a run, as a markdown section (none: no section)."""
    if not rows:
        return []
    lines = ["", f"## Forget audit ({len(rows)} row(s) written during this run)", ""]
    lines += ["| route | target | reason | removed |", "|---|---|---|---|"]
    for row in rows:
        removed = json.dumps(row.removed, sort_keys=True)
        lines.append(f"| `{str(row.route)}` | `{row.target}` | {cell(row.reason)} | {cell(removed)} |")
    return lines


@dataclass
class ForgetReport:
    """What one run of the `forget` flow did."""

    route: str
    target: str | None
    forget_audit: list[AuditLine] = field(default_factory=list)


def render_forget_markdown(report: ForgetReport) -> str:
    lines = ["# codex-memories forget", "", f"Route: `{report.route}`"]
    if report.target:
        lines.append(f"Target: `{report.target}`")
    if not report.forget_audit:
        lines += ["", "Nothing to forget: no audit row was written."]
    lines += render_forget_audit(report.forget_audit)
    lines += ["", "The memory folder loses what these rows removed at the next phase 2."]
    return "\n".join(lines) + "\n"
