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

import base64
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from codex_memories import paths
from codex_memories.evidence.screen import line_rules, logical_lines
from codex_memories.paths import HELD_NOTE_DIRS
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder, SymlinkRefusedError, UnsafePathError
from codex_memories.scopes import marked_project_key, project_marker
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


def add_ad_hoc_note(
    root_dir: Path, note: str, *, slug: str | None = None, now: datetime | None = None, project_key: str | None = None
) -> Path:
    """Write `note` as a new ad-hoc note named from `now` (UTC) and `slug`; returns its path.
    `project_key`: the project it is for (None: every project)."""
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
            name = note_filename(chosen[: NOTE_SLUG_MAX_LENGTH - len(suffix)].rstrip("-") + suffix, moment)
            return write_ad_hoc_note(root_dir, name, note, project_key=project_key)
        except NoteAlreadyExists:
            continue
    raise NoteAlreadyExists(
        f"{MAX_NAME_ATTEMPTS} notes named {note_filename(chosen, moment)!r} and its numbered variants already exist; "
        "notes are never overwritten: give another slug"
    )


def write_ad_hoc_note(root_dir: Path, filename: str, note: str, *, project_key: str | None = None) -> Path:
    """Create `extensions/ad_hoc/notes/<filename>` holding exactly `note` (and, for a project's
    note, a last line with its `project=<key>` marker); never overwrites."""
    validate_note_filename(filename)
    _require_note_text(note)
    text = redact_secrets(note)
    if project_key:
        text = text.rstrip("\n") + "\n\n" + project_line(project_key) + "\n"
    return _create_in(root_dir, paths.ad_hoc_notes_dir(), filename, text)


def _create_in(root_dir: Path, notes_dir: str, filename: str, text: str) -> Path:
    folder = SandboxedFolder(root_dir)
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


# -- notes held back: written by an agent (pending), or refused by phase 2's gate (quarantined) ------

# A note the MCP tool receives was written by an agent, which a web page or a tool output may
# have steered: it is evidence, not the user's word. It waits in `PENDING_DIR` until the user
# accepts it (`accept_held_note`) or drops it; a live note that phase 2's injection gate refuses
# waits in `QUARANTINE_DIR`. Both sit under `extensions/` so a phase 2 that publishes a copy of
# the folder keeps them (and sees one written meanwhile), but nothing reads them as memory: the
# SessionStart hook and the heuristic consolidator read `notes/*.md` only, the gate and the
# provenance check leave these folders out (`paths.HELD_NOTE_DIRS`), and the text is stored base64-encoded
# in a JSON record, so a consolidation agent or an MCP `read` that opens one sees no instruction.
PENDING_DIR, QUARANTINE_DIR = HELD_NOTE_DIRS
HELD_SUFFIX = ".json"
HELD_RECORD_VERSION = 1
PENDING = "pending"
QUARANTINED = "quarantined"

# Markup a reader does not see but a model reads: HTML comments, raw HTML tags (a `<span hidden>`
# keeps no text worth hiding), Markdown link titles, format characters (zero-width, bidi, tags).
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LINK_TITLE = re.compile(r"(\]\(\s*<?[^\s()<>]*>?)\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\))\s*\)")
_REFERENCE_TITLE = re.compile(r"^(\s*\[[^\]]+\]:\s*\S+)\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\))\s*$", re.MULTILINE)
_PROJECT_LINE = re.compile(r"^\(project=[^\s()]+\)$")


class HeldNoteNotFound(NoteError):
    """No held note has that name (or the name matches several)."""


@dataclass(frozen=True)
class HeldNote:
    """A note that is not live: `status` is `PENDING` or `QUARANTINED`."""

    name: str  # the note's file name (`<timestamp>-<slug>.md`): what `note --accept` takes
    status: str
    text: str
    project_key: str | None
    origin: str  # "agent" (the MCP tool) or "user"
    reasons: tuple[str, ...]  # the screen's or the gate's rules, empty when nothing was flagged
    held_at: str

    @property
    def record_path(self) -> str:
        return f"{PENDING_DIR if self.status == PENDING else QUARANTINE_DIR}/{self.name.removesuffix(NOTE_SUFFIX)}{HELD_SUFFIX}"


def project_line(project_key: str) -> str:
    """The last line of a project's note: its `project=<key>` marker (`scopes.project_marker`)."""
    return f"({project_marker(project_key)})"


def strip_hidden_markup(text: str) -> str:
    """`text` without what a reader does not see (see `_HTML_COMMENT` and below)."""
    visible = _HTML_COMMENT.sub("", text)
    visible = _LINK_TITLE.sub(r"\1)", visible)
    visible = _REFERENCE_TITLE.sub(r"\1", visible)
    visible = _HTML_TAG.sub("", visible)
    return "".join(char for char in visible if unicodedata.category(char) != "Cf")


def screen_note(text: str) -> tuple[str, ...]:
    """The injection gate's rules a note's text breaks, hidden parts included (a `curl | sh` in an
    HTML comment is a reason to hold the note even though stripping removes it), plus
    `hidden_markup` when there was markup to strip."""
    rules: list[str] = []
    for _, line in logical_lines(text):
        rules += [rule for rule in line_rules(line) if rule not in rules]
    if strip_hidden_markup(text) != text:
        rules.append("hidden_markup")
    return tuple(rules)


def hold_agent_note(
    root_dir: Path, note: str, *, filename: str | None = None, slug: str | None = None, now: datetime | None = None
) -> HeldNote:
    """A note written by an agent (the MCP tool): screened, stripped of hidden markup, redacted
    and held `PENDING` until the user accepts it. Never live before that."""
    _require_note_text(note)
    if filename is not None:
        validate_note_filename(filename)
    reasons = screen_note(note)
    text = redact_secrets(strip_hidden_markup(note)).strip()
    if not text:
        raise InvalidNote("the note holds nothing but hidden markup, so there is nothing to keep")
    moment = now or datetime.now(UTC)
    if slug is not None and not _SLUG_PATTERN.fullmatch(slug):
        raise InvalidNoteFilename(f"the slug {slug[:NOTE_SLUG_MAX_LENGTH]!r} may hold only a-z, 0-9 and -")
    chosen = slug if slug is not None else slug_from_note(text)
    names = [filename] if filename is not None else [
        note_filename(chosen[: NOTE_SLUG_MAX_LENGTH - len(suffix)].rstrip("-") + suffix, moment)
        for suffix in ["", *[f"-{attempt}" for attempt in range(2, MAX_NAME_ATTEMPTS + 1)]]
    ]
    for name in names:
        if _note_exists(root_dir, name):
            continue
        held = HeldNote(name, PENDING, text, None, "agent", reasons, moment.astimezone(UTC).isoformat(timespec="seconds"))
        try:
            _create_in(root_dir, PENDING_DIR, Path(held.record_path).name, _record_json(held))
        except NoteAlreadyExists:
            continue
        return held
    raise NoteAlreadyExists(f"a note named {names[0]!r} already exists, and notes are never overwritten: give another name")


def list_held_notes(root_dir: Path) -> list[HeldNote]:
    """Every pending and quarantined note, oldest first (records that cannot be read are skipped:
    a half-written or foreign file is not a note)."""
    folder = SandboxedFolder(root_dir)
    found = []
    for directory, status in ((PENDING_DIR, PENDING), (QUARANTINE_DIR, QUARANTINED)):
        try:
            entries = folder.list_dir(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.kind != "file" or not entry.name.endswith(HELD_SUFFIX):
                continue
            held = _read_record(folder, f"{directory}/{entry.name}", status)
            if held is not None:
                found.append(held)
    return sorted(found, key=lambda held: held.name)


def find_held_note(root_dir: Path, name: str) -> HeldNote:
    """The held note named `name` (its file name, with or without `.md`, or a unique prefix)."""
    wanted = name.strip().removesuffix(NOTE_SUFFIX)
    matches = [held for held in list_held_notes(root_dir) if held.name.removesuffix(NOTE_SUFFIX).startswith(wanted)] if wanted else []
    exact = [held for held in matches if held.name.removesuffix(NOTE_SUFFIX) == wanted]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        raise HeldNoteNotFound(f"no pending or quarantined note is named {name!r}: `codex-memories show` lists them")
    raise HeldNoteNotFound(f"{len(matches)} held notes start with {name!r}: give more of the name")


def accept_held_note(root_dir: Path, held: HeldNote, *, project_key: str | None = None) -> Path:
    """Make a pending note live: written as an ad-hoc note under its own name (for `project_key`,
    or every project), then its pending record removed. A quarantined note is not accepted:
    the gate would refuse it again; it can only be dropped."""
    if held.status != PENDING:
        raise InvalidNote(f"{held.name} was quarantined by phase 2's injection gate ({', '.join(held.reasons)}); it can only be dropped")
    written = write_ad_hoc_note(root_dir, held.name, held.text, project_key=project_key)
    remove_held_note(root_dir, held)
    return written


def remove_held_note(root_dir: Path, held: HeldNote) -> None:
    """Delete a held note's record (dropping it, or once it went live)."""
    SandboxedFolder(root_dir).delete(held.record_path, missing_ok=True)


def restore_held_note(root_dir: Path, held: HeldNote) -> None:
    """Write a held note's record back (undoing a removal whose audit row could not be written)."""
    _create_in(root_dir, PENDING_DIR if held.status == PENDING else QUARANTINE_DIR, Path(held.record_path).name, _record_json(held))


def quarantine_note(root_dir: Path, relative_path: str, reasons: tuple[str, ...], *, now: datetime | None = None) -> HeldNote:
    """Move a live note (`extensions/ad_hoc/notes/<name>.md`) to quarantine: its record is written
    first, then the note removed, so a failure in between leaves it in both places, never in none."""
    folder = SandboxedFolder(root_dir)
    name = relative_path.rsplit("/", 1)[-1]
    text = folder.read_bytes(relative_path).decode("utf-8", "replace")
    lines = text.rstrip("\n").split("\n")
    project_key = marked_project_key(lines[-1]) if lines and _PROJECT_LINE.match(lines[-1].strip()) else None
    body = "\n".join(lines[:-1] if project_key else lines).strip()
    moment = now or datetime.now(UTC)
    held = HeldNote(name, QUARANTINED, body, project_key, "user", reasons, moment.astimezone(UTC).isoformat(timespec="seconds"))
    record = f"{QUARANTINE_DIR}/{Path(held.record_path).name}"
    folder.makedirs(QUARANTINE_DIR)
    folder.write_bytes(record, _record_json(held).encode("utf-8"), executable=False)
    folder.delete(relative_path, missing_ok=True)
    return held


def _note_exists(root_dir: Path, name: str) -> bool:
    folder = SandboxedFolder(root_dir)
    stem = name.removesuffix(NOTE_SUFFIX)
    candidates = (f"{paths.ad_hoc_notes_dir()}/{name}", f"{PENDING_DIR}/{stem}{HELD_SUFFIX}", f"{QUARANTINE_DIR}/{stem}{HELD_SUFFIX}")
    try:
        return any(folder.lstat(candidate) is not None for candidate in candidates)
    except NotADirectoryError:
        return False


def _record_json(held: HeldNote) -> str:
    return json.dumps(
        {
            "version": HELD_RECORD_VERSION,
            "name": held.name,
            "origin": held.origin,
            "project_key": held.project_key,
            "reasons": list(held.reasons),
            "held_at": held.held_at,
            # Encoded: whoever opens the record (an agent, an MCP read) reads no instruction in it.
            "text_base64": base64.b64encode(held.text.encode("utf-8")).decode("ascii"),
        },
        indent=1,
    ) + "\n"


def _read_record(folder: SandboxedFolder, relative: str, status: str) -> HeldNote | None:
    try:
        record = json.loads(folder.read_bytes(relative).decode("utf-8"))
        text = base64.b64decode(record["text_base64"], validate=True).decode("utf-8")
        name = str(record["name"])
        validate_note_filename(name)
        return HeldNote(
            name, status, text, record.get("project_key"), str(record.get("origin", "agent")),
            tuple(str(rule) for rule in record.get("reasons", [])), str(record.get("held_at", "")),
        )
    except (OSError, UnsafePathError, ValueError, KeyError, TypeError, NoteError):
        return None  # not one of our records, or half written: not a note
