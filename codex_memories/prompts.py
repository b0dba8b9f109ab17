"""Render the Markdown prompt templates kept in the repository's top-level `prompts/` folder.

The folder is installed as the package `codex_memories_prompts` (pyproject.toml maps it), so the
templates ship in the wheel without a generic top-level `prompts` name.

Contract:
- A template is `prompts/<name>.md`; placeholders are written `{{ name }}` (spaces optional).
- `render_prompt(name, **values)` substitutes every placeholder in one pass, so a value that itself
  contains `{{ ... }}` (a rollout quoting a template, say) is never expanded again.
- A placeholder without a value, a value without a placeholder, an unknown template or a value that
  is not a string is a `PromptTemplateError`: a prompt is never sent half-rendered.
- The result records the template name and the SHA-256 of the rendered text, so a run can say
  exactly which prompt it sent. Pure: reads package data, writes nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

PROMPTS_PACKAGE = "codex_memories_prompts"
TEMPLATE_SUFFIX = ".md"

STAGE_ONE_SYSTEM_TEMPLATE = "stage_one_system"
STAGE_ONE_INPUT_TEMPLATE = "stage_one_input"

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_TEMPLATE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


class PromptTemplateError(ValueError):
    """A template could not be rendered exactly as asked."""


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    template_name: str
    sha256: str


def load_template(template_name: str) -> str:
    """The raw text of `prompts/<template_name>.md`."""
    if not _TEMPLATE_NAME.match(template_name):
        raise PromptTemplateError(f"invalid template name: {template_name!r}")
    resource = resources.files(PROMPTS_PACKAGE).joinpath(template_name + TEMPLATE_SUFFIX)
    if not resource.is_file():
        raise PromptTemplateError(f"unknown prompt template: {template_name!r}")
    return resource.read_text(encoding="utf-8")


def template_placeholders(template_text: str) -> set[str]:
    return {match.group(1) for match in _PLACEHOLDER.finditer(template_text)}


def render_template_text(template_text: str, template_name: str, values: dict[str, str]) -> RenderedPrompt:
    """Render an already loaded template (split out so tests and callers can render in-memory text)."""
    expected = template_placeholders(template_text)
    missing = sorted(expected - values.keys())
    unknown = sorted(values.keys() - expected)
    if missing:
        raise PromptTemplateError(f"template {template_name!r} is missing values for: {', '.join(missing)}")
    if unknown:
        raise PromptTemplateError(f"template {template_name!r} has no placeholder for: {', '.join(unknown)}")
    not_text = sorted(name for name, value in values.items() if not isinstance(value, str))
    if not_text:
        raise PromptTemplateError(f"template {template_name!r} values must be strings: {', '.join(not_text)}")

    text = _PLACEHOLDER.sub(lambda match: values[match.group(1)], template_text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return RenderedPrompt(text=text, template_name=template_name, sha256=digest)


def render_prompt(template_name: str, **values: str) -> RenderedPrompt:
    """Render `prompts/<template_name>.md` with exactly the placeholders it declares."""
    return render_template_text(load_template(template_name), template_name, values)


def render_stage_one_prompts(
    *, rollout_path: str, rollout_cwd: str, rollout_transcript: str, rollout_updated_at: str = "unknown"
) -> tuple[RenderedPrompt, RenderedPrompt]:
    """The (system, user) prompt pair for one stage-1 extraction.

    `rollout_updated_at` (RFC 3339) is what a temporary rule's expiry ("this week") counts from."""
    system = render_prompt(STAGE_ONE_SYSTEM_TEMPLATE)
    user = render_prompt(
        STAGE_ONE_INPUT_TEMPLATE,
        rollout_path=rollout_path,
        rollout_cwd=rollout_cwd,
        rollout_updated_at=rollout_updated_at,
        rollout_transcript=rollout_transcript,
    )
    return system, user
