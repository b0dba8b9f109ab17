"""The forms the Prefect UIs build from our flows' parameter schemas (the "Custom run" form) and
from the review decision: every choice is a plain select of its values, with a title, so the V1
UI (where the links we print go) and the V2 UI both show its options. Pydantic's `anyOf [enum,
null]` for an optional choice showed as an empty dropdown in the V1 UI.
"""

from __future__ import annotations

from typing import Any

import pytest
from prefect.utilities.callables import parameter_schema

from codex_memories.settings import SettingsOverrides
from codex_memories_flows.backfill import backfill
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2


def _choices(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: field for name, field in schema["properties"].items() if "enum" in field or any("enum" in alternative for alternative in field.get("anyOf", []))}


@pytest.mark.parametrize("flow", [phase1, phase2, backfill], ids=lambda flow: flow.name)
def test_every_choice_in_a_custom_run_form_is_a_titled_select_of_its_values(flow: Any) -> None:
    overrides = parameter_schema(flow).model_dump()["definitions"]["SettingsOverrides"]
    choices = _choices(overrides)
    assert set(choices) == {"provider", "api_mode", "review"}
    for name, field in choices.items():
        assert "anyOf" not in field and field["type"] == "string" and field["title"], (name, field)
        assert "default" not in field, (name, field)  # left empty, the field is not sent: not given
    assert choices["provider"]["enum"] == ["auto", "openai", "codex", "heuristic"]


def test_a_choice_left_empty_is_not_given_and_a_bad_one_is_refused() -> None:
    assert SettingsOverrides.model_validate({"review": "ask"}).provider is None
    assert SettingsOverrides.model_validate({"provider": None}).provider is None
    with pytest.raises(ValueError):
        SettingsOverrides.model_validate({"provider": "gpt"})
