"""The `raw_memories.md` format (spec 8.2): the one place that writes and parses it.

Contract:
- `render_raw_memories(selection)` is pure and gives the exact bytes Codex writes: a header, then
  one `## Thread `<id>`` section per stage-1 output in ascending thread-id order, each with the
  header lines of `THREAD_HEADER_KEYS` and then the raw memory. `rollout_summary_stem` names the
  `rollout_summaries/` file a section's `rollout_summary_file:` line points at, so real Codex and
  this pipeline can share one memory folder.
- `escape_metadata(value)`: a session's metadata (cwd, branch, title) on one line, breaks and
  controls escaped; every header line written here and in the rollout summaries goes through it.
- `thread_sections(text)` splits a `raw_memories.md` back into `(thread_id, body)` pairs in file
  order; what a body means is the reader's business (the heuristic consolidator, the
  entry-expiry route).
- No I/O: the inputs sync (`memory_folder.inputs`) writes the file, the readers read it.

A top-level module rather than part of `consolidate/`, because `forget/` reads the format too and
must not import the phase-2 package.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from codex_memories.state.records import Stage1Output

RAW_MEMORIES_HEADER = "# Raw Memories\n\n"
RAW_MEMORIES_EMPTY = "No raw memories yet.\n"
RAW_MEMORIES_INTRO = "Merged stage-1 raw memories (stable ascending thread-id order):\n\n"
# The `key: value` lines between a section's heading and its raw memory, in written order.
THREAD_HEADER_KEYS = ("updated_at", "cwd", "rollout_path", "rollout_summary_file")

_THREAD_HEADING = re.compile(r"^## Thread `([^`\n]+)`[ \t]*$", re.MULTILINE)

STEM_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"
MAX_SLUG_CHARS = 60
_BASE62_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_HASH4_MODULUS = 62**4
_UUID_V7 = 7


@dataclass(frozen=True)
class ThreadSection:
    thread_id: str
    body: str  # everything after the heading line up to the next heading


# What a metadata value (a cwd, a git branch, a session title) must not carry into a `key: value`
# line of a file or a prompt: line and paragraph breaks (any Unicode form) and other controls.
_BREAKS_AND_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_VISIBLE_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_metadata(value: str) -> str:
    """`value` on one line: each break or control character becomes a visible escape (`\\n`,
    `\\x1b`, `\\u2028`). Why: a session's cwd or branch name is the session's own text, and a
    newline in it wrote a forged "User preferences" section into a rollout summary; escaped, it is
    one line of data wherever it goes (the state DB, the inputs files, a prompt)."""
    return _BREAKS_AND_CONTROLS.sub(lambda match: _VISIBLE_ESCAPES.get(match.group(), f"\\u{ord(match.group()):04x}"), value)


def rfc3339(epoch_seconds: int) -> str:
    """`2025-10-14T09:12:03+00:00`, the form Codex writes."""
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).isoformat()


def _parse_uuid(thread_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        return None


def _rolling_hash(text: str) -> int:
    value = 0
    for byte in text.encode("utf-8"):
        value = (value * 31 + byte) & 0xFFFFFFFF
    return value


def _base62_4(value: int) -> str:
    value %= _HASH4_MODULUS
    digits = []
    for _ in range(4):
        value, digit = divmod(value, 62)
        digits.append(_BASE62_ALPHABET[digit])
    return "".join(reversed(digits))


def sanitize_slug(rollout_slug: str | None) -> str:
    """Lowercase ASCII alphanumerics, everything else `_`, at most 60 chars, no trailing `_`."""
    if not rollout_slug:
        return ""
    characters = []
    for character in rollout_slug[:MAX_SLUG_CHARS]:
        characters.append(character.lower() if character.isascii() and character.isalnum() else "_")
    return "".join(characters).rstrip("_")


def rollout_summary_stem(thread_id: str, source_updated_at: int, rollout_slug: str | None) -> str:
    """`<ts>-<hash4>[-<slug>]` (spec 8.3)."""
    parsed = _parse_uuid(thread_id)
    if parsed is not None and (parsed.int >> 76) & 0xF == _UUID_V7:
        # A UUIDv7 starts with 48 bits of Unix milliseconds: the thread's creation time.
        seconds = (parsed.int >> 80) // 1000
    else:
        seconds = source_updated_at
    timestamp = datetime.fromtimestamp(seconds, tz=UTC).strftime(STEM_TIME_FORMAT)
    seed = parsed.int & 0xFFFFFFFF if parsed is not None else _rolling_hash(thread_id)
    stem = f"{timestamp}-{_base62_4(seed)}"
    slug = sanitize_slug(rollout_slug)
    return f"{stem}-{slug}" if slug else stem


def stem_for(output: Stage1Output) -> str:
    return rollout_summary_stem(output.thread_id, output.source_updated_at, output.rollout_slug)


def render_raw_memories(selection: list[Stage1Output]) -> str:
    if not selection:
        return RAW_MEMORIES_HEADER + RAW_MEMORIES_EMPTY
    parts = [RAW_MEMORIES_HEADER, RAW_MEMORIES_INTRO]
    for output in sorted(selection, key=lambda item: item.thread_id):
        header = {
            "updated_at": rfc3339(output.source_updated_at),
            "cwd": escape_metadata(output.cwd or ""),
            "rollout_path": escape_metadata(output.rollout_path or ""),
            "rollout_summary_file": f"{stem_for(output)}.md",
        }
        parts.append(
            f"## Thread `{output.thread_id}`\n"
            + "".join(f"{key}: {header[key]}\n" for key in THREAD_HEADER_KEYS)
            + "\n"
            + f"{output.raw_memory.strip()}\n"
            + "\n"
        )
    return "".join(parts)


def thread_sections(text: str) -> list[ThreadSection]:
    """The `## Thread` sections of a `raw_memories.md`, in file order."""
    headings = list(_THREAD_HEADING.finditer(text))
    sections = []
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        sections.append(ThreadSection(heading.group(1).strip(), text[heading.end() : end]))
    return sections
