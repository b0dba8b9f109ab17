"""The forgetting routes, one record each: the table the forget flow, the CLI and phase 2's early
finish derive what they need from (spec section 6, issues 15, 29 and 31).

A route is one way a memory is forgotten: one trigger, one block that carries it out, and the
`ForgetRoute` value(s) its audit rows carry. Values and routes are not one to one: route 5 writes
`disabled` or `pollution` (a thread leaves the selection, by request or because it used a web
tool), route 7 writes `ad_hoc_note` and `user_edit` (changes a consolidation integrated) and
`manual_reset` (forget everything). So `ROUTES` holds 11 routes and `ForgetRoute` 14 values; every
value belongs to exactly one route (`route_of`).

What is derived from here:
- `requestable_values()`: the values the forget flow (`flows/forget.py`) offers as its `route`
  parameter; `targeted_values()`: those of them a request aims at a target (a thread, a
  project, a text), the others take none.
- `Route.cli`: the CLI commands that run a route; the CLI tests check each command and option
  exists and that every forget option of the CLI is listed here.
- `next_change_at(moment_inputs)`: phase 2's early finish (`consolidate.steps.record_settled`)
  keeps a settled folder only until the earliest moment any time-based route would change it.
  A route whose trigger is `Trigger.time` cannot be declared without its own moment function,
  so a new time-based route cannot be skipped by the early finish.

Blocks are named by their dotted path, not imported: route 8's block lives in `consolidate`, which
imports `forget` (the arrow runs one way), and importing every block here would make reading the
table load the whole package. `tests/forget/test_route_registry.py` resolves every name.

Pure data and pure functions: no I/O here beyond what a route's moment function reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from codex_memories.forget.entry_expiry import next_entry_expiry
from codex_memories.forget.extension_expiry import next_extension_expiry
from codex_memories.state.records import ForgetRoute


class Trigger(StrEnum):
    """What sets a route off."""

    time = "time"  # something ages out: the route's outcome changes with the clock alone
    event = "event"  # something happened to a thread or a folder (a run, a deleted file, an edit)
    request = "request"  # only someone asking: the forget flow or the CLI


@dataclass(frozen=True)
class MomentInputs:
    """What a time-based route's moment function reads, after a successful phase 2."""

    root_dir: Path  # the local memory folder as the run left it (synced inputs, extensions)
    # When the oldest selectable stage-1 output leaves the `max_unused_days` window
    # (`selection_window.next_selection_ageing` over the one aggregate query of the run's start,
    # `consolidate.steps.check_settled`); None: nothing selectable.
    selection_ageing_at: int | None


NextChange = Callable[[MomentInputs], int | None]


@dataclass(frozen=True)
class Route:
    """One forgetting route."""

    number: str  # spec 6's number ("6b", "8": ours), or "" for the selective routes of issue 15
    title: str
    values: tuple[ForgetRoute, ...]  # the `forget_audit.route` values its actions carry
    blocks: tuple[str, ...]  # the dotted name of each function that decides and carries it out
    caller: str  # who runs it
    trigger: Trigger
    # Epoch seconds at which time alone next changes what this route removes from a settled
    # phase-2 folder, or None (nothing due). Required exactly when `trigger` is `Trigger.time`.
    next_change_at: NextChange | None = None
    # The values the forget flow runs on request, and what a request names (None: no target).
    on_request: tuple[ForgetRoute, ...] = ()
    target: str | None = None
    cli: tuple[str, ...] = ()  # the CLI commands (and option) that run it

    def __post_init__(self) -> None:
        if (self.trigger is Trigger.time) != (self.next_change_at is not None):
            raise ValueError(f"route {self.title!r}: a time-based route, and only one, brings its next-change moment")
        if not set(self.on_request) <= set(self.values):
            raise ValueError(f"route {self.title!r}: it can only be requested under its own values")
        if self.target is not None and not self.on_request:
            raise ValueError(f"route {self.title!r}: only a requestable route names a target")


ROUTES: tuple[Route, ...] = (
    Route(
        number="1",
        title="retention prune",
        values=(ForgetRoute.retention_prune,),
        blocks=("codex_memories.forget.retention.prune_stale_outputs",),
        caller="phase 1 task `prune-retention`",
        trigger=Trigger.time,
        # Never by time alone: it deletes only rows phase 2 did not select, so a settled folder
        # holds nothing of them (and the deletion changes the inputs' fingerprint anyway).
        next_change_at=lambda inputs: None,
    ),
    Route(
        number="2",
        title="selection window",
        values=(ForgetRoute.selection_window,),
        blocks=("codex_memories.forget.selection_window.selection_window_actions",),
        caller="`consolidate.steps.sync_inputs`",
        trigger=Trigger.time,
        next_change_at=lambda inputs: inputs.selection_ageing_at,
    ),
    Route(
        number="3",
        title="empty re-extraction",
        values=(ForgetRoute.empty_reextraction,),
        blocks=("codex_memories.forget.empty_reextraction.empty_reextraction_actions",),
        caller="`extract.extraction.finalize_extraction`",
        trigger=Trigger.event,
    ),
    Route(
        number="4",
        title="thread deletion",
        values=(ForgetRoute.thread_deletion,),
        blocks=("codex_memories.forget.threads.forget_thread", "codex_memories.forget.threads.forget_deleted_threads"),
        caller="phase 1 (a deleted rollout file), the forget flow, the CLI",
        trigger=Trigger.request,
        on_request=(ForgetRoute.thread_deletion,),
        target="a thread id",
        cli=("forget --thread",),
    ),
    Route(
        number="5",
        title="pollution / disabling",
        values=(ForgetRoute.pollution, ForgetRoute.disabled),
        blocks=("codex_memories.forget.threads.pollute_thread", "codex_memories.forget.threads.disable_thread"),
        caller="phase 1 (a session that used a web tool), the forget flow, the CLI",
        trigger=Trigger.request,
        on_request=(ForgetRoute.disabled, ForgetRoute.pollution),
        target="a thread id",
        cli=("disable --thread",),
    ),
    Route(
        number="6",
        title="extension expiry",
        values=(ForgetRoute.extension_expiry,),
        blocks=("codex_memories.forget.extension_expiry.expire_extension_resources",),
        caller="`consolidate.steps.prune_extension_resources`",
        trigger=Trigger.time,
        next_change_at=lambda inputs: next_extension_expiry(inputs.root_dir),
    ),
    Route(
        number="6b",
        title="typed-entry expiry",
        values=(ForgetRoute.entry_expiry,),
        blocks=("codex_memories.forget.entry_expiry.expire_entries",),
        caller="`consolidate.steps.expire_typed_entries`",
        trigger=Trigger.time,
        next_change_at=lambda inputs: next_entry_expiry(inputs.root_dir),
    ),
    Route(
        number="7",
        title="manual",
        values=(ForgetRoute.ad_hoc_note, ForgetRoute.user_edit, ForgetRoute.manual_reset),
        blocks=("codex_memories.forget.manual.manual_change_actions", "codex_memories.forget.manual.reset_memories"),
        caller="phase 2 (notes and edits), the forget flow and the CLI (reset)",
        trigger=Trigger.request,
        on_request=(ForgetRoute.manual_reset,),
        cli=("reset",),
    ),
    Route(
        number="8",
        title="tool-output provenance",
        values=(ForgetRoute.tool_output_provenance,),
        blocks=("codex_memories.consolidate.provenance_check.remove_tool_derived_lines",),
        caller="phase 2",
        trigger=Trigger.event,
    ),
    Route(
        number="",
        title="project deletion",
        values=(ForgetRoute.project_deletion,),
        blocks=("codex_memories.forget.selective.forget_project",),
        caller="the forget flow, the CLI",
        trigger=Trigger.request,
        on_request=(ForgetRoute.project_deletion,),
        target="a directory on the worker or a project key",
        cli=("forget --project",),
    ),
    Route(
        number="",
        title="text match",
        values=(ForgetRoute.text_match,),
        blocks=("codex_memories.forget.text_match.forget_match",),
        caller="the forget flow, the CLI",
        trigger=Trigger.request,
        on_request=(ForgetRoute.text_match,),
        target="a text",
        cli=("forget --match",),
    ),
)


def route_of(value: ForgetRoute) -> Route:
    """The route whose actions carry `value`."""
    return next(route for route in ROUTES if value in route.values)


def requestable_values() -> tuple[ForgetRoute, ...]:
    """The values the forget flow runs on request, in table order."""
    return tuple(value for route in ROUTES for value in route.on_request)


def targeted_values() -> tuple[ForgetRoute, ...]:
    """The requestable values a request aims at a target (the others take none)."""
    return tuple(value for route in ROUTES if route.target is not None for value in route.on_request)


def next_change_at(inputs: MomentInputs) -> int | None:
    """The earliest moment any time-based route changes the settled folder, or None."""
    moments = [route.next_change_at(inputs) for route in ROUTES if route.next_change_at is not None]
    return min((moment for moment in moments if moment is not None), default=None)
