"""Shapes of secrets no list names: generic tokens, random user parts of URLs, wrapped keys.

Contract: data only, like `rules.py`; these rules run after the detector (`engine.py`), so a
token a more precise rule already replaced is left alone. "Random-looking" is decided by
`values.looks_random`, never by a list of prefixes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from codex_memories.redact.rules import NEWLINE, REDACTED, Rule, value_looks_random
from codex_memories.redact.values import looks_random, token_looks_random

def _locate_prefixed_token(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The token a run of token characters is, if it is one. The run may start with the letter
    of a JSON escape (`\\nghp_...`): the token then starts one character later."""
    start, end = match.span()
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrtbf":
        start += 1
        if end - start < 17 or not text[start].isalpha():
            return None
    elif start > 0 and text[start - 1] == "+" and not text[max(0, start - 3) : start].endswith(("\n+", "\\n+")):
        return None  # inside base64 (`...+abc_...`), not a patch line
    return (start, end) if token_looks_random(text[start:end]) else None



def _user_part_looks_random(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    return looks_random(value) or token_looks_random(value)



# `prefixed_token` matches only characters of this class, at least 18 of them, and the character
# before a match is not of the class (its look-behind): so every match starts where a run of 18
# or more such characters starts. Found on the UTF-8 bytes mapped to one mark per class (every
# non-ASCII byte is outside it), where a plain substring search skips ahead quickly.
_TOKEN_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~"
_MIN_TOKEN_RUN = 18
_TOKEN_RUN_MARKS = bytes(0x61 if chr(code) in _TOKEN_RUN_CHARS else 0x20 for code in range(256))
_TOKEN_RUN = b"a" * _MIN_TOKEN_RUN


def _token_run_starts(text: str) -> Iterator[int]:
    """Start (a `text` index) of every maximal run of `_TOKEN_RUN_CHARS` of `_MIN_TOKEN_RUN` or
    more characters, ascending."""
    ascii_only = text.isascii()
    # surrogatepass: a lone surrogate (from a JSON escape) has no strict UTF-8 form.
    data = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    marks = data.translate(_TOKEN_RUN_MARKS)
    byte_at, char_at = 0, 0  # a run start seen last, as a byte offset and a text index
    found = marks.find(_TOKEN_RUN)
    while found >= 0:
        start = marks.rfind(b" ", 0, found) + 1
        if ascii_only:
            yield start
        else:
            # Run starts are ASCII characters, so character boundaries: count the characters
            # between the previous start and this one.
            char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
            byte_at = start
            yield char_at
        end = marks.find(b" ", found + _MIN_TOKEN_RUN)
        if end < 0:
            return
        found = marks.find(_TOKEN_RUN, end)


GENERIC_RULES: tuple[Rule, ...] = (
    Rule(
        # glpat-..., hf_..., npm_..., pypi-..., dop_v1_..., hvs....: a short prefix, a separator,
        # then a random body. The look-ahead skips lower-case identifiers without running the check.
        "prefixed_token",
        # Prefix and separator in the regex (possessive: no backtracking), randomness in Python.
        # A single-character look-behind is cheap; the letter of a JSON escape (`\\nghp_...`)
        # may start the match, `_locate_prefixed_token` then skips it.
        r"(?<![A-Za-z0-9_\-.~/%])[A-Za-z][A-Za-z0-9]{0,24}+[_\-.][A-Za-z0-9_\-.~]{15,999}[A-Za-z0-9_~]",
        (REDACTED,),
        (),
        locate=_locate_prefixed_token,
        starts=_token_run_starts,
    ),
    Rule(
        # https://<token>@github.com, https://<token>:x-oauth-basic@...: a random user part.
        "url_token_user",
        r"(://)(?P<value>[A-Za-z0-9_\-.~%]{16,256})(?=@|:[^\s/?#@\"'\\]{0,256}@)",
        (1, REDACTED),
        ("://",),
        accept=_user_part_looks_random,
    ),
    Rule(
        # The rest of a key the terminal wrapped onto the next line.
        "wrapped_key_continuation",
        r"(\[REDACTED_SECRET\]" + NEWLINE + r"[+]?)(?P<value>[A-Za-z0-9+/=_\-]{8,1000})(?=[\s\"'\\]|$)",
        (1, REDACTED),
        ("[redacted_secret]",),
        accept=value_looks_random,
    ),
)
