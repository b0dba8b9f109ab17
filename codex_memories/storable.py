"""Text that can go anywhere we write it: the storable-text boundary of everything read from disk.

A rollout line is JSON, and JSON can carry what no store of ours accepts: a lone surrogate escape
(`"\\ud800"` decodes to a Python `str` that has no UTF-8 form, so SQLite, PostgreSQL, the memory
folder and an HTTP request to the model all refuse it) and `"\\u0000"` (PostgreSQL refuses NUL in
text). Folder and file names can be bytes that are not UTF-8 at all (Python keeps them as
`surrogateescape` code points, with the same effect).

Contract:
- `storable_text(text)` is `text` with every surrogate code point and NUL replaced by U+FFFD,
  plus how many it replaced of each (`REPAIR_LONE_SURROGATE`, `REPAIR_NUL_CHARACTER`). Text
  without them comes back as the same object, uncounted.
- `storable_json(value)` does the same to every string of a parsed JSON value, keys included,
  without recursion (a rollout line may nest 200 deep), and returns the new value and the counts.
- `might_need_repair(line)` is the cheap test on a raw JSON line (bytes) that must be true for
  `storable_json` to change anything in its parsed value: both characters only come from `\\u`
  escapes (the JSON parsers refuse raw NUL bytes and encoded surrogates).
- `shown_path(path)` is a path as storable text for messages and reports: bytes that are not
  UTF-8 appear as `\\xNN`. `path_decodes(name)` says whether a name read from the file system is
  UTF-8 (Python decodes the others with `surrogateescape`); `utf8_size(text)` is the UTF-8 length
  of text an argument brings, None when it has none (the callers' one check of size and form).
Pure functions; no I/O.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

REPLACEMENT = "\ufffd"
REPAIR_LONE_SURROGATE = "lone_surrogate"
REPAIR_NUL_CHARACTER = "nul_character"
# Decoding a line with bytes that are not UTF-8 (counted by the rollout reader, which decodes).
REPAIR_INVALID_UTF8 = "invalid_utf8"

_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")
# A `\u` escape of a surrogate or of NUL, in either case; a preceding backslash (an escaped
# backslash before a literal `u`) only costs a walk that changes nothing.
_REPAIRABLE_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")


def storable_text(text: str) -> tuple[str, Counter[str]]:
    counts: Counter[str] = Counter()
    if _UNSTORABLE.search(text) is None:
        return text, counts

    def replace(match: re.Match[str]) -> str:
        counts[REPAIR_NUL_CHARACTER if match.group() == "\x00" else REPAIR_LONE_SURROGATE] += 1
        return REPLACEMENT

    return _UNSTORABLE.sub(replace, text), counts


def might_need_repair(line: bytes) -> bool:
    # `in` stops at the first `\\u`, so a line without escapes costs next to nothing; a line with
    # many (nested JSON of non-ASCII text) costs one pass of the pattern (about 1 GB/s), which is
    # cheaper than three substring tests that each scan the whole line when absent.
    return b"\\u" in line and _REPAIRABLE_ESCAPE.search(line) is not None


def storable_json(value: Any) -> tuple[Any, Counter[str]]:
    counts: Counter[str] = Counter()

    def fixed(text: str) -> str:
        repaired, found = storable_text(text)
        counts.update(found)
        return repaired

    if isinstance(value, str):
        return fixed(value), counts
    if not isinstance(value, (dict, list)):
        return value, counts
    root: list[Any] = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        current = holder[key]
        if isinstance(current, str):
            holder[key] = fixed(current)
        elif isinstance(current, list):
            pending.extend((current, index) for index in range(len(current)))
        elif isinstance(current, dict):
            if any(_UNSTORABLE.search(name) for name in current):
                # Rebuilt in order; two keys that become equal keep the later value, as JSON does.
                current = {fixed(name): entry for name, entry in current.items()}
                holder[key] = current
            pending.extend((current, name) for name in current)
    return root[0], counts


def utf8_size(text: str) -> int | None:
    """Bytes of `text` in UTF-8; None when it has no UTF-8 form (it holds a lone surrogate)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def path_decodes(name: str) -> bool:
    return utf8_size(name) is not None


def shown_path(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte (from a `\\ud800` in JSON)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
