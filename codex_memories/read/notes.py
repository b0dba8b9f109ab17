"""Write ad-hoc memory notes into `<root>/extensions/ad_hoc/notes/` (spec 7.1).

Contract:
- `write_ad_hoc_note(root_dir, filename, note)` validates the file name (spec 7.1 regex, length
  24…128) and the note (non-blank, valid Unicode, at most `NOTE_MAX_BYTES`: `NoteTooLong`), creates `extensions/ad_hoc/notes` if needed and writes the note
  (UTF-8, no newline translation) into a new file. Returns the path written.
- Secrets never reach the memory folder: the text goes through `redact.redact_secrets` first
  (a note without secrets is written verbatim). Every caller (the CLI, the MCP tool) writes
  through here.
- `add_ad_hoc_note(root_dir, note, slug=…, now=…)` builds the name
  `<YYYY-MM-DDTHH-MM-SS>-<slug>.md` from `now` in UTC (the current time by default) and a slug
  (given, or derived from the note text), then calls `write_ad_hoc_note`. When that name is
  taken (a second note with the same slug in the same second) it takes the first free
  `<slug>-2`, `<slug>-3`, ...: a note is never lost and never overwrites another.
- Written through `sandbox.SandboxedFolder` (descriptor-relative, `O_NOFOLLOW` on every
  component). Append-only: the target is opened with exclusive create, so an existing note is never
  overwritten (`NoteAlreadyExists`); calling twice with the same name is an error, not a no-op.
- Refuses (`UnsafeNotesDirectory`) when `extensions`, `extensions/ad_hoc` or
  `extensions/ad_hoc/notes` is a symlink or not a directory, so a note can never land outside the
  memory root. The root itself may be a symlink (users relocate `~/.codex`).
- Every failure is a `NoteError` subclass whose `kind` is its class name, the error code the MCP
  tool reports; its message is a sentence a user can act on (the CLI prints only the message).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from codex_memories import paths
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder, SymlinkRefusedError
from codex_memories.storable import utf8_size

NOTE_FILENAME_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[a-z0-9][a-z0-9-]{0,79}\.md")
NOTE_FILENAME_MIN_LENGTH = 24
NOTE_FILENAME_MAX_LENGTH = 128
NOTE_SLUG_MAX_LENGTH = 80
# Notes are never pruned and every one reaches the phase-2 agent in the workspace diff: a note is
# a few sentences the user asked to keep, not a document.
NOTE_MAX_BYTES = 16_384
NOTE_TIMESTAMP_FORMAT = "%Y-%m-%dT%H-%M-%S"
NOTE_SUFFIX = ".md"
FALLBACK_SLUG = "note"
# How many `-2`, `-3`, ... a taken name may try before the note is refused.
MAX_NAME_ATTEMPTS = 100

_SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
_NOT_SLUG_CHARACTERS = re.compile(r"[^a-z0-9]+")


class NoteError(Exception):
    """A note could not be written; `kind` names the reason."""

    @property
    def kind(self) -> str:
        return type(self).__name__


class InvalidNote(NoteError):
    """The note text is empty after trimming."""


class InvalidNoteFilename(NoteError):
    """The file name (or slug) breaks the spec 7.1 naming rules."""


class NoteTooLong(NoteError):
    """The note is longer than `NOTE_MAX_BYTES` in UTF-8."""


class NoteAlreadyExists(NoteError):
    """A note with this file name exists; notes are never overwritten."""


class UnsafeNotesDirectory(NoteError):
    """A component of `extensions/ad_hoc/notes` is a symlink or not a directory."""


def validate_note_filename(name: str) -> None:
    """Raise `InvalidNoteFilename` unless `name` is a valid ad-hoc note file name."""
    length = len(name.encode("utf-8", "surrogatepass"))  # a lone surrogate fails the pattern below
    if not NOTE_FILENAME_MIN_LENGTH <= length <= NOTE_FILENAME_MAX_LENGTH:
        raise InvalidNoteFilename(
            f"a note's file name must be {NOTE_FILENAME_MIN_LENGTH} to {NOTE_FILENAME_MAX_LENGTH} bytes long; {name!r} has {length}"
        )
    if not NOTE_FILENAME_PATTERN.fullmatch(name):
        raise InvalidNoteFilename(f"a note's file name must look like YYYY-MM-DDTHH-MM-SS-<slug>.md (slug: a-z, 0-9, -), not {name!r}")


def slug_from_note(note: str) -> str:
    """A file-name slug from the note text: lowercase ASCII words joined by `-`, at most 80 chars."""
    slug = _NOT_SLUG_CHARACTERS.sub("-", note.lower()).strip("-")
    slug = slug[:NOTE_SLUG_MAX_LENGTH].rstrip("-")
    return slug or FALLBACK_SLUG


def note_filename(slug: str, now: datetime) -> str:
    """`<UTC timestamp>-<slug>.md`; a naive `now` is taken to be UTC already."""
    moment = now.astimezone(UTC) if now.tzinfo is not None else now
    return f"{moment.strftime(NOTE_TIMESTAMP_FORMAT)}-{slug}{NOTE_SUFFIX}"


def add_ad_hoc_note(root_dir: Path, note: str, *, slug: str | None = None, now: datetime | None = None) -> Path:
    """Write `note` as a new ad-hoc note named from `now` (UTC) and `slug`; returns its path."""
    if slug is not None and not _SLUG_PATTERN.fullmatch(slug):
        shown = repr(slug[:NOTE_SLUG_MAX_LENGTH]) + ("..." if len(slug) > NOTE_SLUG_MAX_LENGTH else "")
        raise InvalidNoteFilename(
            f"the slug {shown} may hold only a-z, 0-9 and -, must start with a letter or a digit and have at most "
            f"{NOTE_SLUG_MAX_LENGTH} characters"
        )
    _require_note_text(note)
    # The slug is derived from the redacted text, so a secret cannot reach the file name either.
    chosen = slug if slug is not None else slug_from_note(redact_secrets(note))
    moment = now or datetime.now(UTC)
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        suffix = "" if attempt == 1 else f"-{attempt}"
        try:
            return write_ad_hoc_note(root_dir, note_filename(chosen[: NOTE_SLUG_MAX_LENGTH - len(suffix)].rstrip("-") + suffix, moment), note)
        except NoteAlreadyExists:
            continue
    raise NoteAlreadyExists(
        f"{MAX_NAME_ATTEMPTS} notes named {note_filename(chosen, moment)!r} and its numbered variants already exist; "
        "notes are never overwritten: give another slug"
    )


def write_ad_hoc_note(root_dir: Path, filename: str, note: str) -> Path:
    """Create `extensions/ad_hoc/notes/<filename>` holding exactly `note`; never overwrites."""
    validate_note_filename(filename)
    _require_note_text(note)
    text = redact_secrets(note)
    folder = SandboxedFolder(root_dir)
    notes_dir = paths.ad_hoc_notes_dir()
    try:
        folder.makedirs(notes_dir)
        # Exclusive create also refuses a dangling symlink planted at the target name.
        folder.create_new_bytes(f"{notes_dir}/{filename}", text.encode("utf-8"))
    except FileExistsError as error:
        raise NoteAlreadyExists(f"a note named {filename!r} already exists, and notes are never overwritten: give another name") from error
    except SymlinkRefusedError as error:
        raise UnsafeNotesDirectory(f"{error}: notes are never written through a link, so this note was not written") from None
    except NotADirectoryError as error:
        raise UnsafeNotesDirectory(f"{error.filename} in the memory folder is not a directory, so the note cannot be written there") from None
    return Path(root_dir) / notes_dir / filename


def _require_note_text(note: str) -> None:
    if not note.strip():
        raise InvalidNote("the note is empty: give the text to remember (or to forget)")
    size = utf8_size(note)
    if size is None:
        raise InvalidNote("the note is not valid Unicode text (it holds a lone surrogate)")
    if size > NOTE_MAX_BYTES:
        raise NoteTooLong(f"the note is {size} bytes; a note is at most {NOTE_MAX_BYTES} bytes (keep the few sentences worth remembering)")
