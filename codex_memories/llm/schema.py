"""The stage-1 output contract: the JSON schema sent to the model and the strict parser of its answer.

The schema matches Codex (spec 1.7, scenario 78): an object with exactly `rollout_summary`
(string), `rollout_slug` (string or null) and `raw_memory` (string), all required, nothing else;
plus ours: `task_scopes`, one `user` or `project` per `### Task` block of `raw_memory`, in order
(issue 15; `extract.scope_tagging` writes them into the raw memory as `scope:` lines, so what is
stored stays Codex's text format). The pydantic model is the parser (spec 1.8): unknown fields
are rejected, types are not coerced, and `rollout_slug` may be null or absent (some servers drop
null keys); `task_scopes` may be absent (an older prompt, Codex's own answers): every block is
then project-level.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

STAGE1_SCHEMA_NAME = "stage1_memory"

STAGE1_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rollout_summary": {"type": "string"},
        "rollout_slug": {"type": ["string", "null"]},
        "raw_memory": {"type": "string"},
        "task_scopes": {"type": "array", "items": {"type": "string", "enum": ["user", "project"]}},
    },
    "required": ["rollout_summary", "rollout_slug", "raw_memory", "task_scopes"],
    "additionalProperties": False,
}


def stage1_output_schema() -> dict[str, Any]:
    """A fresh copy, so no caller can mutate the shared constant by accident."""
    return copy.deepcopy(STAGE1_OUTPUT_SCHEMA)


class Stage1Extraction(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    rollout_summary: str
    raw_memory: str
    rollout_slug: str | None = None
    task_scopes: list[Literal["user", "project"]] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """The "no output" outcome (spec 1.8): either text field empty, compared without trimming."""
        return self.raw_memory == "" or self.rollout_summary == ""


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
