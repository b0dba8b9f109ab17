"""Every path into the memory folder redacts secrets: ad-hoc notes from the library, the MCP
tool and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths

from codex_memories.read import memory_tools, notes
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

KINDS = ["openai_api_key", "aws_access_key_id", "github_token", "bearer_token", "password_assignment"]


def written_notes(root: Path) -> list[Path]:
    return sorted((root / paths.ad_hoc_notes_dir()).glob("*.md"))


@pytest.mark.parametrize("kind", KINDS)
def test_a_secret_in_a_note_is_redacted_before_it_is_written(tmp_path: Path, kind: str) -> None:
    notes.add_ad_hoc_note(tmp_path, f"Remember: {PLANTED_SECRETS[kind]}", slug="creds")
    [note] = written_notes(tmp_path)
    text = note.read_text()
    assert SECRET_VALUES[kind] not in text
    assert "[REDACTED_SECRET]" in text


def test_a_derived_slug_never_carries_the_secret_into_the_file_name(tmp_path: Path) -> None:
    notes.add_ad_hoc_note(tmp_path, f"key {SECRET_VALUES['openai_api_key']}")
    [note] = written_notes(tmp_path)
    assert SECRET_VALUES["openai_api_key"].lower() not in note.name


def test_the_mcp_note_tool_redacts_too(tmp_path: Path) -> None:
    memory_tools.add_ad_hoc_note(tmp_path, PLANTED_SECRETS["aws_secret_access_key"], filename="2026-01-02T03-04-05-aws.md")
    [note] = written_notes(tmp_path)
    assert SECRET_VALUES["aws_secret_access_key"] not in note.read_text()


def test_a_note_without_secrets_is_written_verbatim(tmp_path: Path) -> None:
    text = "Prefer pnpm.\r\nKeep CRLF and   spacing.\n"
    notes.write_ad_hoc_note(tmp_path, "2026-01-02T03-04-05-plain.md", text)
    assert written_notes(tmp_path)[0].read_bytes() == text.encode()
