"""A credential handed over in a sentence with nothing that announces it: "use root /
Kestrel!2291 on the test box", "hard-coded (`CxA6RG...`)", "用root登，a~v6qK... 这个".

Contract: `PASSWORD_IN_PROSE`, one rule of `prose.PROSE_SHAPES` (the engine runs it with them).
It takes a token of printable ASCII standing alone among words of prose (three words, or six
letters of a spaceless script, on its line inside its JSON string; no code around it), 10 to 64
characters with a digit, password-like or generated (`values.looks_like_password`), and not a
name (`values.reads_as_identifier`: `Llama-3.1-8B`, `e2e-Tests`), an id (hex, UUID, ULID, a
ticket, `Class#method`), a version, a file, an address, a `name=value` pair, URL-encoded text or
what follows the word "public" (a public key). No word or provider is named: the look of the
value and the prose around it decide. Measured on blind round 5 (benchmarks/README.md, "Secrets
by class").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.rules import REDACTED, Rule
from codex_memories.redact.values import is_placeholder, looks_like_password, reads_as_identifier

Span = tuple[int, int]


# A token of printable ASCII standing alone between words: after a blank, an opening bracket or
# quote, a letter or mark of another script (raw or JSON-escaped: `，`, `\uff0c`), up to a blank,
# a closing mark, such a letter or the end (an ASCII colon glued before it is a prefix:
# `SHA256:...`); no colon, quote, bracket, brace, `<>` or backslash inside (`[settings 3fa9...]`
# is a tag around a hex digest). The escape's four digits are
# spelt out: the screen's loosening (`screen.loosened`) would make `{4}` a variable-width look-behind.
_STANDALONE_TOKEN = r"""(?:(?<=[\s(\['"`]|[^\x00-\x7f])|(?<=\\u[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F])|^)[!#-&*+\--9=?-Z^_a-z|~]{10,64}(?=[\s)\]}"'`,;:.!?\\]|[^\x00-\x7f]|$)"""
_NOT_A_SECRET_TOKEN = lazy_compile(
    # `Class#method`, a version (`1.0.0-rc.1+build.415`), a ticket id, hex (hashes, ids), a date, a UUID.
    r"[A-Za-z_]\w*#[a-z_]\w*|v?\d+(?:\.\d+)+(?:[-+][\w.]+)*|[A-Z][A-Z0-9]+-\d+|[0-9a-fA-F]{7,64}"
    r"|\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?|[0-9a-fA-F-]{36}"
    # A ULID (Crockford base32, upper case, 26 characters): request and record ids.
    r"|[0-9A-HJKMNP-TV-Z]{26}"
)
_FILE_EXTENSION = lazy_compile(r"\.[A-Za-z]{2,5}$")
# An e-mail address, a handle (`@dana`), a name at a tag or host in lower case
# (`nginx@sha256`, `deploy@web1`, `lodash@4.17.21`), a `name=value` pair of code, config or logs
# (`request_id=...`, `DATABASE_URL=...`); `XX=FEN9ej...` and `=q8bnA...` are passwords with a sign in them.
_ADDRESS_OR_ASSIGNMENT = lazy_compile(r"^@|\w@[\w-]+\.\w|^[a-z0-9._-]+@[a-z0-9._-]+$|^[A-Za-z_][A-Za-z0-9_.-]{2,}=")
# Code and markup around the token: an assignment, braces, a statement's end, a keyword, a
# command's option, a link, a call.
_CODE_AROUND = lazy_compile(r"\s=\s|==|=>|[{}]|;\s*$|\bdef\b|\breturn\b|\bimport\b|^\s*\$\s|\s--?[a-z]|https?:|\(\)")
# A word of two letters or more, or a run of JSON-escaped letters (CJK as `\uXXXX`).
_PROSE_WORD = lazy_compile(r"[^\W\d_]{2,}|(?:\\+u[0-9a-fA-F]{4}){2,}")
PROSE_WORDS_AROUND = 3
# A language written without spaces is prose by its letters: kana, CJK, Hangul (or their escapes).
_SPACELESS_LETTER = lazy_compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|\\u(?:3[0-9a-f]|[4-9][0-9a-f]|a[0-9a-f]|[bc][0-9a-f]|d[0-7])[0-9a-f]{2}")
PROSE_SPACELESS_LETTERS = 6
_AROUND = 100


_URL_ENCODED = lazy_compile(r"%[0-9A-Fa-f]{2}.*%[0-9A-Fa-f]{2}")
# What is public is no secret: a public key, a certificate's fingerprint.
_PUBLIC = lazy_compile(r"\bpublic\b|\bpublique\b|\bpública\b|\bpublica\b|öffentlich|публичн|公钥|公開鍵|공개 ?키|\bfingerprint\b", re.IGNORECASE)
_PUBLIC_REACH = 30
_TOKEN_LEAD = lazy_compile(r"""[\s(\['"`]+|\\u[0-9a-fA-F]{4}|[^\x00-\x7f]+""")


def _token_starts(text: str) -> Iterator[int]:
    """Where a standalone token can start: the text's start and after a blank, an opening mark or
    a comma (the pattern is tried there only, not at every position)."""
    yield 0
    for lead in _TOKEN_LEAD.finditer(text):
        yield lead.end()


def _words_around(text: str, start: int, end: int) -> str:
    """The text beside a token on its line and inside its JSON string (up to an unescaped quote),
    at most `_AROUND` characters each side."""
    escaped = text.rfind("\\n", 0, start)
    left = max(text.rfind("\n", 0, start) + 1, escaped + 2 if escaped >= 0 else 0, start - _AROUND)
    for index in range(start - 1, left - 1, -1):
        if text[index] == '"' and (index == 0 or text[index - 1] != "\\"):
            left = index + 1
            break
    right = min(len(text), end + _AROUND)
    for index in range(end, right):
        if text[index] == "\n" or text.startswith("\\n", index) or (text[index] == '"' and text[index - 1] != "\\"):
            right = index
            break
    return text[left:start] + " " + text[end:right]


def _locate_standalone_password(match: re.Match[str], text: str) -> Span | None:
    """A password or generated token standing alone in a sentence ("use root / Kestrel!2291 on the
    test box", "hard-coded (`CxA6RG...`)"): password-like by its look, not a name, an id, a
    version, a file, an address or an assignment, among words of prose and no code."""
    raw = match.group(0)
    # Markdown's emphasis around it is not part of it (`**Settings**`).
    core = raw.strip(raw[0]) if raw[0] in "*_~" else raw
    bare = core.rstrip(".!?")
    if "/" in core or "\\" in core or "REDACTED" in core or _URL_ENCODED.search(core) or not any(char.isdigit() for char in core):
        return None  # a path or a link, an escape, a marker already there, URL-encoded text; a word (what is generated or chosen has a digit)
    if _ADDRESS_OR_ASSIGNMENT.search(bare) or _NOT_A_SECRET_TOKEN.fullmatch(bare) or _FILE_EXTENSION.search(bare):
        return None
    # Its own last sign first (`Chengzi2020!`, `Huanghe99*`), else without the sentence's mark.
    token = next((form for form in (core, bare) if len(form) >= 10 and looks_like_password(form)), None)
    if token is None:
        return None
    if is_placeholder(token) or reads_as_identifier(token):
        return None
    start = match.start() + raw.index(token)
    end = start + len(token)
    if _PUBLIC.search(text, max(0, start - _PUBLIC_REACH), start):
        return None  # "the server's public key yAnz5TF+..."
    around = _words_around(text, start, end)
    if _CODE_AROUND.search(around):
        return None
    if len(_PROSE_WORD.findall(around)) < PROSE_WORDS_AROUND and len(_SPACELESS_LETTER.findall(around)) < PROSE_SPACELESS_LETTERS:
        return None
    return start, end


PASSWORD_IN_PROSE = Rule(
    "password_in_prose",
    _STANDALONE_TOKEN,
    (REDACTED,),
    (),  # no word announces it: every text
    locate=_locate_standalone_password,
    starts=_token_starts,
)
