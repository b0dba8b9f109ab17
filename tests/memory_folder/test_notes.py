"""Ad-hoc notes (spec 7.1, scenario 71)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone

import pytest

from codex_memories import paths
from codex_memories.memory_folder.notes import (
    InvalidNote,
    InvalidNoteFilename,
    NoteAlreadyExists,
    UnsafeNotesDirectory,
    add_ad_hoc_note,
    slug_from_note,
    validate_note_filename,
    write_ad_hoc_note,
)

VALID_NAME = "2025-10-14T09-30-00-prefer-pnpm.md"


def test_valid_note_is_created_with_the_exact_text(tmp_path):
    note = "Prefer pnpm over npm in this repo.\r\n  Keep the lockfile.  \n"

    written = write_ad_hoc_note(tmp_path, VALID_NAME, note)

    assert written == tmp_path / paths.ad_hoc_notes_dir() / VALID_NAME
    assert written.read_bytes() == note.encode("utf-8")


def test_same_name_again_is_already_exists_and_leaves_the_file_unchanged(tmp_path):
    written = write_ad_hoc_note(tmp_path, VALID_NAME, "first")

    with pytest.raises(NoteAlreadyExists) as raised:
        write_ad_hoc_note(tmp_path, VALID_NAME, "second")

    assert raised.value.kind == "NoteAlreadyExists"
    assert written.read_text(encoding="utf-8") == "first"


@pytest.mark.parametrize("note", ["", "   ", "\n\t \n"])
def test_blank_note_is_rejected_and_nothing_is_written(tmp_path, note):
    with pytest.raises(InvalidNote):
        write_ad_hoc_note(tmp_path, VALID_NAME, note)

    assert not (tmp_path / paths.ad_hoc_notes_dir() / VALID_NAME).exists()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("2025-10-14T09-30-00-Prefer-pnpm.md", id="uppercase"),
        pytest.param("2025-10-14T09-30-00-prefer pnpm.md", id="space"),
        pytest.param("prefer-pnpm-without-a-timestamp.md", id="no timestamp"),
        pytest.param("2025-10-14T09-30-00-" + "a" * 105 + ".md", id="longer than 128 bytes"),
        pytest.param("2025-10-14T09-30-00-" + "a" * 81 + ".md", id="slug longer than 80"),
        pytest.param("2025-10-14T09-30-00-.md", id="empty slug, too short"),
        pytest.param("2025-10-14T09-30-00--dash-first.md", id="slug starts with a dash"),
        pytest.param("2025-10-14T09-30-00-prefer-pnpm.txt", id="not markdown"),
        pytest.param("2025-10-14T09-30-00-prefer-pnpm.md\n", id="trailing newline"),
        pytest.param("../2025-10-14T09-30-00-escape.md", id="path traversal"),
        pytest.param("２０２５-10-14T09-30-00-wide-digits.md", id="non-ascii digits"),
    ],
)
def test_names_breaking_the_rules_are_rejected(tmp_path, name):
    with pytest.raises(InvalidNoteFilename):
        validate_note_filename(name)
    with pytest.raises(InvalidNoteFilename):
        write_ad_hoc_note(tmp_path, name, "text")


@pytest.mark.parametrize(
    "name",
    ["2025-10-14T09-30-00-a.md", VALID_NAME, "2025-10-14T09-30-00-" + "a" * 80 + ".md"],
)
def test_names_following_the_rules_are_accepted(name):
    validate_note_filename(name)


def test_add_ad_hoc_note_names_the_file_from_utc_time_and_the_given_slug(tmp_path):
    plus_two = timezone(timedelta(hours=2))

    written = add_ad_hoc_note(
        tmp_path, "Use pnpm.", slug="prefer-pnpm", now=datetime(2025, 10, 14, 11, 30, 0, tzinfo=plus_two)
    )

    assert written.name == VALID_NAME
    assert written.read_text(encoding="utf-8") == "Use pnpm."


def test_add_ad_hoc_note_derives_the_slug_from_the_note(tmp_path):
    written = add_ad_hoc_note(tmp_path, "  Forget: the *old* API_KEY rotation!  ", now=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))

    assert written.name == "2025-01-02T03-04-05-forget-the-old-api-key-rotation.md"


@pytest.mark.parametrize(
    ("note", "slug"),
    [
        ("Prefer pnpm", "prefer-pnpm"),
        ("日本語だけ", "note"),
        ("---", "note"),
        ("word " * 40, ("word-" * 16)[:80].rstrip("-")),
        ("Café au lait", "caf-au-lait"),
    ],
)
def test_slug_from_note_is_lowercase_ascii_and_bounded(note, slug):
    derived = slug_from_note(note)

    assert derived == slug
    assert len(derived) <= 80
    validate_note_filename(f"2025-01-02T03-04-05-{derived}.md")


def test_invalid_slug_is_rejected(tmp_path):
    with pytest.raises(InvalidNoteFilename):
        add_ad_hoc_note(tmp_path, "text", slug="Not A Slug")


def test_symlinked_notes_directory_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "memories"
    (root / paths.EXTENSIONS_DIR / paths.AD_HOC_EXTENSION).mkdir(parents=True)
    os.symlink(outside, root / paths.ad_hoc_notes_dir())

    with pytest.raises(UnsafeNotesDirectory):
        write_ad_hoc_note(root, VALID_NAME, "text")

    assert list(outside.iterdir()) == []


def test_symlinked_extensions_directory_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "memories"
    root.mkdir()
    os.symlink(outside, root / paths.EXTENSIONS_DIR)

    with pytest.raises(UnsafeNotesDirectory):
        write_ad_hoc_note(root, VALID_NAME, "text")

    assert list(outside.iterdir()) == []


def test_a_file_where_the_notes_directory_should_be_is_refused(tmp_path):
    (tmp_path / paths.EXTENSIONS_DIR / paths.AD_HOC_EXTENSION).mkdir(parents=True)
    (tmp_path / paths.ad_hoc_notes_dir()).write_text("not a folder", encoding="utf-8")

    with pytest.raises(UnsafeNotesDirectory):
        write_ad_hoc_note(tmp_path, VALID_NAME, "text")


def test_a_dangling_symlink_at_the_target_name_is_not_followed(tmp_path):
    notes_dir = tmp_path / paths.ad_hoc_notes_dir()
    notes_dir.mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere.md", notes_dir / VALID_NAME)

    with pytest.raises(NoteAlreadyExists):
        write_ad_hoc_note(tmp_path, VALID_NAME, "text")

    assert not (tmp_path / "elsewhere.md").exists()


def test_a_taken_name_gets_the_next_free_number_and_nothing_is_overwritten(tmp_path):
    moment = datetime(2025, 10, 14, 9, 30, tzinfo=UTC)
    first = add_ad_hoc_note(tmp_path, "first", slug="dup", now=moment)
    second = add_ad_hoc_note(tmp_path, "second", slug="dup", now=moment)
    third = add_ad_hoc_note(tmp_path, "third", slug="dup", now=moment)

    assert [path.name for path in (first, second, third)] == [
        "2025-10-14T09-30-00-dup.md", "2025-10-14T09-30-00-dup-2.md", "2025-10-14T09-30-00-dup-3.md",
    ]
    assert [path.read_text(encoding="utf-8") for path in (first, second, third)] == ["first", "second", "third"]


def test_a_numbered_name_keeps_a_long_slug_within_the_limit(tmp_path):
    moment = datetime(2025, 10, 14, 9, 30, tzinfo=UTC)
    slug = "a" * 80
    add_ad_hoc_note(tmp_path, "first", slug=slug, now=moment)
    second = add_ad_hoc_note(tmp_path, "second", slug=slug, now=moment)
    validate_note_filename(second.name)
    assert second.name.endswith("-2.md")


def test_note_errors_are_sentences_a_user_can_act_on(tmp_path):
    with pytest.raises(InvalidNote, match="^the note is empty: give the text to remember"):
        add_ad_hoc_note(tmp_path, "  ")
    write_ad_hoc_note(tmp_path, VALID_NAME, "first")
    with pytest.raises(NoteAlreadyExists, match="already exists, and notes are never overwritten: give another name"):
        write_ad_hoc_note(tmp_path, VALID_NAME, "second")
