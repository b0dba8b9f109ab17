"""The stage-1 output contract: the JSON schema sent to the model and the strict parser of its answer.

The schema matches Codex (spec 1.7, scenario 78): an object with exactly `rollout_summary`
(string), `rollout_slug` (string or null) and `raw_memory` (string), all required, nothing else.
The pydantic model is the parser (spec 1.8): unknown fields are rejected, types are not coerced,
and `rollout_slug` may be null or absent (some servers drop null keys).

One addition (issue 15): `memory_entries`, the typed entries of the raw memory, each with `text`,
`type` (constraint | preference | fact | command), `weight` (0..1), `reason` and `expires`
(`YYYY-MM-DD` or null). It is required in the schema sent (strict structured output wants every
property listed) and optional when parsing, so an answer in Codex's three-field shape still
parses. `typed_raw_memory` folds the entries into `raw_memory` as bullet suffixes
(`typed_entries`), which is what the stage-1 row stores.

And (issue 15) `task_scopes`, one `user` or `project` per `### Task` block of `raw_memory`, in
order; `extract.scope_tagging` writes them into the raw memory as `scope:` lines, so what is
stored stays Codex's text format. It may be absent too (an older prompt, Codex's own answers):
every block is then project-level.
"""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from codex_memories.redact import redact_secrets
from codex_memories.storable import storable_json
from codex_memories.typed_entries import ENTRY_TYPES, EntryMeta, TypedEntry, apply_entries

STAGE1_SCHEMA_NAME = "stage1_memory"

STAGE1_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rollout_summary": {"type": "string"},
        "rollout_slug": {"type": ["string", "null"]},
        "raw_memory": {"type": "string"},
        "memory_entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "type": {"type": "string", "enum": list(ENTRY_TYPES)},
                    "weight": {"type": "number"},
                    "reason": {"type": "string"},
                    "expires": {"type": ["string", "null"]},
                },
                "required": ["text", "type", "weight", "reason", "expires"],
                "additionalProperties": False,
            },
        },
        "task_scopes": {"type": "array", "items": {"type": "string", "enum": ["user", "project"]}},
    },
    "required": ["rollout_summary", "rollout_slug", "raw_memory", "memory_entries", "task_scopes"],
    "additionalProperties": False,
}


def stage1_output_schema() -> dict[str, Any]:
    """A fresh copy, so no caller can mutate the shared constant by accident."""
    return copy.deepcopy(STAGE1_OUTPUT_SCHEMA)


class MemoryEntry(BaseModel):
    """One typed entry as the model reports it (see `typed_entries`)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    text: str
    type: Literal["constraint", "preference", "fact", "command"]
    weight: float = Field(ge=0, le=1)
    reason: str = ""
    expires: date | None = None

    @field_validator("weight", mode="before")
    @classmethod
    def _integer_weights_are_numbers(cls, value: Any) -> Any:
        # JSON has one number type: a model writing `1` means 1.0 (strict mode would refuse it).
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("expires", mode="before")
    @classmethod
    def _expiry_is_an_iso_date(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return date.fromisoformat(value.strip()[:10]) if value.strip() else None
            except ValueError:
                raise ValueError("expires is not a YYYY-MM-DD date") from None
        return value


class Stage1Extraction(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    rollout_summary: str
    raw_memory: str
    rollout_slug: str | None = None
    memory_entries: list[MemoryEntry] = Field(default_factory=list)
    task_scopes: list[Literal["user", "project"]] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """The "no output" outcome (spec 1.8): either text field empty, compared without trimming."""
        return self.raw_memory == "" or self.rollout_summary == ""


def typed_raw_memory(extraction: Stage1Extraction) -> str:
    """`raw_memory` with the typed entries folded in as bullet suffixes (redacted: entry text
    and reasons are model output like the rest)."""
    if not extraction.memory_entries or not extraction.raw_memory:
        return extraction.raw_memory
    entries = [
        TypedEntry(
            text=redact_secrets(entry.text),
            meta=EntryMeta(type=entry.type, weight=entry.weight, reason=redact_secrets(entry.reason), expires=entry.expires),
        )
        for entry in extraction.memory_entries
        if entry.text.strip()
    ]
    return apply_entries(extraction.raw_memory, entries)


class Stage1OutputError(ValueError):
    """The model's text is not a valid stage-1 extraction. The message never quotes the text."""


def parse_stage1_output(text: str) -> Stage1Extraction:
    """Parse the model's answer strictly. Raises `Stage1OutputError` with a short, secret-free reason."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise Stage1OutputError(f"output is not JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(payload, dict):
        raise Stage1OutputError(f"output is JSON {type(payload).__name__}, expected an object")
    # A model can answer `\ud800` or `\u0000` too: its text becomes storable here, as a rollout's does.
    payload, _ = storable_json(payload)
    try:
        return Stage1Extraction.model_validate(payload)
    except ValidationError as error:
        raise Stage1OutputError(f"output does not match the stage-1 schema: {_describe_errors(error)}") from None


_MAX_LOCATION_CHARS = 60


def _describe_errors(error: ValidationError) -> str:
    # Field locations and error kinds only: pydantic's default message quotes the input value,
    # which could be a secret the model echoed.
    parts = []
    for detail in error.errors(include_url=False, include_input=False):
        location = ".".join(str(piece) for piece in detail["loc"])[:_MAX_LOCATION_CHARS] or "<root>"
        parts.append(f"{location}: {detail['type']}")
    return "; ".join(sorted(parts))
