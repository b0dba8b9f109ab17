"""Every path into the memory folder redacts secrets: ad-hoc notes from the library, the MCP
tool and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.memory_folder import notes
from codex_memories.read import memory_tools
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

KINDS = ["openai_api_key", "aws_access_key_id", "github_token", "bearer_token", "password_assignment"]


def written_notes(root: Path) -> list[Path]:
    return sorted((root / paths.ad_hoc_notes_dir()).glob("*.md"))


def stored_notes(root: Path) -> list[tuple[str, str]]:
    """(file name, every text stored) of the live notes and the held ones (record and decoded text)."""
    live = [(note.name, note.read_text()) for note in written_notes(root)]
    held = [(held.record_path, (root / held.record_path).read_text() + held.text) for held in notes.list_held_notes(root)]
    return live + held


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
    [held] = notes.list_held_notes(tmp_path)
    assert SECRET_VALUES["aws_secret_access_key"] not in held.text
    assert SECRET_VALUES["aws_secret_access_key"] not in (tmp_path / held.record_path).read_text()


def test_a_note_without_secrets_is_written_verbatim(tmp_path: Path) -> None:
    text = "Prefer pnpm.\r\nKeep CRLF and   spacing.\n"
    notes.write_ad_hoc_note(tmp_path, "2026-01-02T03-04-05-plain.md", text)
    assert written_notes(tmp_path)[0].read_bytes() == text.encode()


# Token formats the current redactor catches through its named-assignment rule (`HF_TOKEN=`,
# `DB_PASSWORD=`): they must be redacted on every note path today.
ASSIGNED_SECRETS = {
    "HF_TOKEN=hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z": "hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z",
    "DB_PASSWORD=" + "s3cr3t-Pa55word-for-prod": "s3cr3t-Pa55word-for-prod",
}
# Bare formats that rely on the redactor recognising them on their own (the `hf_` prefix, and
# `PGPASSWORD=` with no `_` before the secret word); the redaction work in progress adds them.
BARE_SECRETS = {
    "use hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z to pull": "hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z",
    "PGPASSWORD=" + "s3cr3t-Pa55word-for-prod psql -h db": "s3cr3t-Pa55word-for-prod",
}


def note_paths(tmp_path: Path) -> dict[str, object]:
    return {
        "library": lambda text: notes.add_ad_hoc_note(tmp_path, text, slug="creds"),
        "mcp": lambda text: memory_tools.add_ad_hoc_note(tmp_path, text, filename="2026-01-02T03-04-05-creds.md"),
    }


@pytest.mark.parametrize("route", ["library", "mcp"])
@pytest.mark.parametrize("snippet", sorted(ASSIGNED_SECRETS))
def test_hugging_face_tokens_and_database_passwords_in_assignments_are_redacted(tmp_path: Path, route: str, snippet: str) -> None:
    note_paths(tmp_path)[route](f"Remember: {snippet}")
    [(name, text)] = stored_notes(tmp_path)
    assert ASSIGNED_SECRETS[snippet] not in text
    assert ASSIGNED_SECRETS[snippet] not in name
    assert "[REDACTED_SECRET]" in text


@pytest.mark.parametrize("route", ["library", "mcp"])
@pytest.mark.parametrize("snippet", sorted(BARE_SECRETS))
def test_bare_hugging_face_tokens_and_pgpassword_are_redacted(tmp_path: Path, route: str, snippet: str) -> None:
    note_paths(tmp_path)[route](f"Remember: {snippet}")
    [(_, text)] = stored_notes(tmp_path)
    assert BARE_SECRETS[snippet] not in text


def test_the_cli_note_command_redacts(tmp_path: Path) -> None:
    from tests.support.memory_home import MemoryHome

    home = MemoryHome(tmp_path)
    snippet = "HF_TOKEN=hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z"
    result = home.cli("note", f"Remember: {snippet}", "--slug", "creds")
    assert result.returncode == 0, result.stderr
    [note] = sorted((home.memory_root / paths.ad_hoc_notes_dir()).glob("*.md"))
    assert ASSIGNED_SECRETS[snippet] not in note.read_text()
    assert ASSIGNED_SECRETS[snippet] not in result.stdout + result.stderr


def test_every_note_route_goes_through_the_one_redactor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_redactor(text: str) -> str:
        calls.append(text)
        return text.replace("hf_", "[REDACTED]")

    monkeypatch.setattr(notes, "redact_secrets", fake_redactor)
    memory_tools.add_ad_hoc_note(tmp_path, "token hf_value", filename="2026-01-02T03-04-05-mcp.md")
    notes.write_ad_hoc_note(tmp_path, "2026-01-02T03-04-06-lib.md", "token hf_value")
    assert "token hf_value" in calls
    assert all("hf_" not in note.read_text() for note in written_notes(tmp_path))
