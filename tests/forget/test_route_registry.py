"""The route table (`forget.routes`): every `ForgetRoute` value has one route, every block named
there exists, and what the forget flow, the CLI, the package docstring and phase 2's early finish
say about routes is what the table says."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import get_args

import pytest
import typer

import codex_memories.forget
from codex_memories.forget import routes
from codex_memories.forget.routes import (
    ROUTES,
    MomentInputs,
    Route,
    Trigger,
    next_change_at,
    requestable_values,
    targeted_values,
)
from codex_memories.state.records import ForgetRoute


def test_every_forget_route_value_belongs_to_exactly_one_route() -> None:
    values = [value for route in ROUTES for value in route.values]

    assert sorted(values) == sorted(ForgetRoute)
    assert len(ROUTES) == 11 and len(values) == 14


@pytest.mark.parametrize("block", [block for route in ROUTES for block in route.blocks])
def test_every_block_the_table_names_exists(block: str) -> None:
    module, _, name = block.rpartition(".")

    assert callable(getattr(importlib.import_module(module), name))


def test_a_time_based_route_cannot_be_declared_without_its_next_change_moment() -> None:
    with pytest.raises(ValueError, match="next-change moment"):
        Route(number="9", title="new", values=(ForgetRoute.retention_prune,), blocks=(), caller="", trigger=Trigger.time)
    with pytest.raises(ValueError, match="next-change moment"):
        Route(number="9", title="new", values=(ForgetRoute.retention_prune,), blocks=(), caller="", trigger=Trigger.event,
              next_change_at=lambda inputs: None)


def test_the_package_docstring_table_is_the_route_table() -> None:
    doc = codex_memories.forget.__doc__ or ""
    rows = [line for line in doc.splitlines() if re.match(r"\|\s*(\d+b?)?\s*\|", line)]
    documented = []
    for row in rows:
        number, title, _, values, _ = (cell.strip() for cell in row.strip("|").split("|"))
        documented.append((number, title, tuple(sorted(re.findall(r"`(\w+)`", values)))))

    assert documented == [(route.number, route.title, tuple(sorted(route.values))) for route in ROUTES]
    assert f"the {_number_word(len(ROUTES))} forgetting routes" in doc
    assert f"{len(ForgetRoute)} values for {len(ROUTES)} routes" in doc


def test_the_forget_flow_offers_exactly_the_requestable_routes_and_asks_a_target_of_the_targeted_ones() -> None:
    from codex_memories_flows.forget import _TARGETED_ROUTES, ForgetRouteName

    assert get_args(ForgetRouteName) == tuple(value.value for value in requestable_values())
    assert tuple(_TARGETED_ROUTES) == targeted_values()
    # The one untargeted request the flow runs by itself.
    assert set(requestable_values()) - set(targeted_values()) == {ForgetRoute.manual_reset}


def test_the_cli_forget_commands_are_the_routes_cli_entries() -> None:
    from codex_memories_cli.main import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    listed = [entry.split() for route in ROUTES for entry in route.cli]
    for name, *options in listed:
        params = {option for param in commands[name].params if isinstance(param, typer.core.TyperOption) for option in param.opts}
        assert set(options) <= params, name
    # Every target option of `forget` runs a route of the table.
    forget_targets = {
        option
        for param in commands["forget"].params
        if isinstance(param, typer.core.TyperOption) and param.name in {"thread", "project", "match"}
        for option in param.opts
    }
    assert forget_targets == {options[0] for name, *options in listed if name == "forget"}


def test_the_next_change_moment_is_the_earliest_over_every_time_based_route(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    inputs = MomentInputs(root_dir=tmp_path, selection_ageing_at=5_000)
    assert next_change_at(inputs) == 5_000  # an empty folder: only the selection ages

    sooner = Route(number="9", title="a new route", values=(), blocks=(), caller="", trigger=Trigger.time,
                   next_change_at=lambda seen: 4_000 if seen is inputs else None)
    monkeypatch.setattr(routes, "ROUTES", (*ROUTES, sooner))
    assert next_change_at(inputs) == 4_000

    monkeypatch.setattr(routes, "ROUTES", tuple(route for route in ROUTES if route.trigger is not Trigger.time))
    assert next_change_at(inputs) is None


def _number_word(number: int) -> str:
    return {11: "eleven"}[number]
