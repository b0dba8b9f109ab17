"""Secrets by where they stand in a structured document, in a URL, inside base64, or as wallet
material; and values that are secrets by their look alone.

Contract: data only, like `rules.py` (plus the checks each rule calls on its match). The engine
runs `DOCUMENT_SHAPES` after `prose.PROSE_SHAPES` and `decoded_shapes(redact_secrets)` last of all. Whether a
field's name says secret is `names.name_strength` (a strong name takes any value that is not a
placeholder, a weak one a generated or password-like value); whether a value is generated is `values.py`.

* `table_secret_column`: a markdown, CSV or TSV table (or `column -t` output, or a psql / mysql
  result with its rule and border rows) whose header names a secret column (its cells quoted or
  not, a label such as `Use this:` before it): that column's cells in the rows below.
* `sql_insert_secret_column`: `INSERT INTO t (..., password, ...) VALUES (...), (...)`: the
  values in that column of every row; in other columns, or with no column list, a generated or
  password-shaped value (in a table of accounts, `names.names_accounts`, a weaker one too).
* `xml_secret_element`: `<password>X</password>`, `<apiKey>X</apiKey>` (settings.xml, app
  servers' configs), or an element whose `name`, `key` or `id` attribute names a secret
  (`<property name="hibernate.connection.password">X</property>`, `<entry key="smtp.password">`).
* `name_value_pair`: a field that names a secret and the value field beside it: `{"name":
  "DB_PASSWORD", "value": "X"}`, `- name: API_TOKEN\n  value: X`, `<add key="ApiKey"
  value="X"/>`, `define('DB_PASSWORD', 'X')`.
* `json_secret_container`: `"unseal_keys_b64": ["X", "Y"]`, `"github-oauth": {"github.com":
  "X"}`: every string in the array or object under a key that names a secret.
* `labelled_index_secret`: `Unseal Key 1: X`, `Recovery Code #2 = X` (a label, an index, a value).
* `url_secret_part`: a webhook or collector URL's token, in its path (a generated segment, or
  hex / a UUID after a host or segment such as `webhook`, `hooks`, `input`, `key`, `events`,
  `intake`, `telemetry`) or in its query (a key that names a secret, or a generated value).
* `wallet_mnemonic`, `wallet_key_array`, `base58check_private_key`: 12 to 24 words of a BIP-39
  list (every language `mnemonic` ships; composed or decomposed, raw or JSON-escaped, after a
  label glued to the first word), a JSON array of 32 or 64 bytes (a keypair file), a WIF key or an
  extended private key whose Base58Check checksum holds.
* `base64_wrapped_secret` (`decoded_shapes`): base64 whose decoded text holds a secret (the
  whole redaction, which the engine passes in, applied to it, recursively) or is a
  `user:password` pair.
A random value on its own, with nothing around it that says credential, is left alone: base64
of random bytes is as often a public key, a certificate line or a test fixture
(`tests/support/secret_formats.ordinary_texts`).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import cache

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.names import name_strength, names_accounts
from codex_memories.redact.rules import REDACTED, Rule
from codex_memories.redact.shapes import (
    _NAME_HINTS,
    _SECRET_NAME_END,
    _looks_generated,
    _secret_word_starts,
    _token_run_starts,
)
from codex_memories.redact.values import HEX_DIGITS, is_indirect, is_placeholder, looks_like_password

Span = tuple[int, int]

_LINE_BREAK = lazy_compile(r"\r?\n|\\+(?:r\\+)?n")
_MARKER_UPPER = REDACTED


def _is_marker_at(text: str, position: int) -> bool:
    return text[position : position + len(REDACTED)].upper() == _MARKER_UPPER


def _secret_for(strength: str | None, value: str) -> bool:
    """A value under a name of `strength`: strong names take any real value (3+ characters, not
    a placeholder, not a pointer or number), weak ones a generated or password-like value."""
    value = value.strip()
    if strength is None or len(value) < 3 or REDACTED.lower() in value.lower() or is_placeholder(value):
        return False
    if any(char.isspace() for char in value):
        return False  # a title or a description (`"title": "Aws Secret Access Key"`), not a value
    if value.lower() in ("null", "none", "true", "false", "nil", "undefined", "n/a", "-", "***", "empty"):
        return False
    if strength == "strong":
        return not is_indirect(value) or (value.isdigit() and len(value) >= 6)
    # A weak name (`AUTH_SALT`, `session_key`) with a value no person would write as a word or
    # name: generated, or password-like with a digit (`p{9Kq!vL2#mX7@wR`); not a reference such
    # as `"Key": {"$ref": "#/definitions/MapKey"}`, which mixes kinds of character too.
    return _looks_generated(value) or (looks_like_password(value) and any(char.isdigit() for char in value))


# ---- tables -------------------------------------------------------------------------------------


def _lines_from(text: str, start: int, limit: int = 200) -> list[Span]:
    """Spans of up to `limit` lines from `start` (raw or JSON-escaped line breaks)."""
    spans = []
    position = start
    for _ in range(limit):
        found = _LINE_BREAK.search(text, position)
        end = found.start() if found is not None else len(text)
        spans.append((position, end))
        if found is None:
            break
        position = found.end()
    return spans


_CELL_QUOTES = " \t\"'\\`"


def _cells(text: str, span: Span, delimiter: str) -> list[Span]:
    start, end = span
    line = text[start:end]
    cells = []
    position = 0
    for piece in line.split(delimiter):
        piece_start = start + position
        piece_end = piece_start + len(piece)
        while piece_start < piece_end and text[piece_start] in _CELL_QUOTES:
            piece_start += 1
        while piece_end > piece_start and text[piece_end - 1] in _CELL_QUOTES:
            piece_end -= 1
        cells.append((piece_start, piece_end))
        position += len(piece) + len(delimiter)
    return cells


_DELIMITERS = ("|", "\t", "\\t", ",", ";")
# A few words and a colon, no delimiter or quote among them.
_TABLE_LABEL = lazy_compile(r"[^|,;\t\"'\\:\n]{1,60}:[ \t]+")
_HEADER_NAME = lazy_compile(r"[A-Za-z_#][\w .#/\-]{0,39}")


def _string_quote_before(text: str, start: int, end: int, depth: int) -> int | None:
    """The position after the last quote in `text[start:end]` that delimits a JSON string whose
    line breaks are escaped with `depth` backslashes (the quote has `depth - 1` before it)."""
    found = None
    for quote in re.finditer(r'(\\*)"', text[start:end]):
        if len(quote.group(1)) == depth - 1:
            found = start + quote.end()
    return found


def _row_end(text: str, span: Span, depth: int) -> Span:
    """`span` cut at the quote that closes its JSON string (see `_string_quote_before`)."""
    if not depth:
        return span
    for quote in re.finditer(r'(\\*)"', text[span[0] : span[1]]):
        if len(quote.group(1)) == depth - 1:
            return span[0], span[0] + quote.start()
    return span


def _locate_table(match: re.Match[str], text: str) -> list[Span]:
    """The header line holding the match, its delimiter, the secret columns; then their cells in
    every following row with the same delimiter (a markdown rule row `|---|` is skipped)."""
    # The characters beside the cell, past the rest of its name and its quotes (`db_password`,
    # `"password"`, `\\"api_key\\"`: quoted CSV, raw or JSON-escaped).
    before, after = match.start(), match.end()
    while before > 0 and (text[before - 1].isalnum() or text[before - 1] in "_-."):
        before -= 1
    while before > 0 and text[before - 1] in _CELL_QUOTES:
        before -= 1
    while after < len(text) and text[after] in _CELL_QUOTES:
        after += 1
    around = text[max(0, before - 2) : after + 2]
    if not any(delimiter in around for delimiter in ("|", ",", ";", "\t", "\\t", "  ")):
        return []  # a word in prose or code, not a header cell
    line_start = 0
    for found in _LINE_BREAK.finditer(text, max(0, match.start() - 2000), match.start()):
        line_start = found.end()
    header_end_match = _LINE_BREAK.search(text, match.end())
    if header_end_match is None:
        return []
    depth = header_end_match.group().count("\\")
    if depth:
        # JSON text: the table is the content of a string; its line starts after the string's
        # opening quote when that is on the same line (`[\"bash\", \"-lc\", \"id,email,...`).
        opening = _string_quote_before(text, line_start, match.start(), depth)
        if opening is not None:
            line_start = opening
    if text[line_start : line_start + 1] == "+":
        line_start += 1  # an added line of a patch
    # A label before the table on its first line (`Use this: "id","user","password"`).
    label = _TABLE_LABEL.match(text, line_start, match.start())
    header = (label.end() if label is not None else line_start, header_end_match.start())
    header_text = text[header[0] : header[1]]
    for delimiter in _DELIMITERS:
        if header_text.count(delimiter) >= 1:
            break
    else:
        # Columns aligned with blanks (`column -t`, cloud CLIs' table output).
        delimiter = "  "
        if "  " not in header_text:
            return []
    names = [text[a:b] for a, b in _cells(text, header, delimiter)]
    # A header is a row of names (`id,email,api_key`), not code (`include_secrets=include_secrets,`).
    named_cells = [name for name in names if name]
    if len(named_cells) < 2 or not all(_HEADER_NAME.fullmatch(name) for name in named_cells):
        return []
    strengths = [name_strength(name) if 0 < len(name) <= 40 else None for name in names]
    if not any(strengths):
        return []
    spans = []
    for row in _lines_from(text, header_end_match.end(), 500):
        row = _row_end(text, row, depth)
        if text[row[0] : row[0] + 1] == "+" and line_start > 0 and text[line_start - 1] == "+":
            row = (row[0] + 1, row[1])
        row_text = text[row[0] : row[1]]
        if row_text.strip() and re.fullmatch(r"[\s|:\-+=]*", row_text):
            # A rule row, whatever its delimiter: markdown's `|---|`, psql's `----+----`, the
            # borders of mysql's boxes `+----+----+`.
            continue
        if delimiter == "  ":
            cells = [(row[0] + m.start(), row[0] + m.end()) for m in re.finditer(r"\S+(?: \S+)*", row_text)]
        else:
            if delimiter not in row_text:
                break
            cells = _cells(text, row, delimiter)
        if not row_text.strip() or (delimiter != "  " and len(cells) < 2):
            break
        if len(cells) != len(names) if delimiter != "  " else len(cells) != len(named_cells):
            break  # not a row of this table
        named = [n for n in names if n] if delimiter == "  " else names
        for index, (cell_start, cell_end) in enumerate(cells):
            if index >= len(named):
                break
            strength = strengths[index] if delimiter != "  " else name_strength(named[index]) if len(named[index]) <= 40 else None
            if strength is not None and not _is_marker_at(text, cell_start) and _secret_for(strength, text[cell_start:cell_end]):
                spans.append((cell_start, cell_end))
    return spans


# ---- SQL ------------------------------------------------------------------------------------------

_SQL_VALUE = lazy_compile(r"\\*'((?:[^'\\]|'')*)\\*'|(-?\d+(?:\.\d+)?|null|true|false|default|\w{1,40}\([^()]{0,200}\))", re.IGNORECASE)
# Blanks between SQL tokens, line breaks raw or JSON-escaped.
_SQL_GAP = lazy_compile(r"(?:\s|\\+[nrt]|\+)*")  # `+`: an added line of a patch


def _split_sql_tuple(text: str, start: int) -> tuple[list[Span | None], int] | None:
    """The values of one `( ... )` starting at `start` (the `(`): the span of each quoted
    value's content (None for a number or NULL) and the position after the `)`."""
    position = start + 1
    values: list[Span | None] = []
    while position < len(text):
        position = _SQL_GAP.match(text, position).end()
        found = _SQL_VALUE.match(text, position)
        if found is None:
            return None
        values.append(found.span(1) if found.group(1) is not None else None)
        position = _SQL_GAP.match(text, found.end()).end()
        if position < len(text) and text[position] == ",":
            position += 1
            continue
        if position < len(text) and text[position] == ")":
            return values, position + 1
        return None
    return None


def _unnamed_sql_secret(value: str, accounts: bool) -> bool:
    """A value in a column whose name says nothing (or with no column list at all): generated or
    password-shaped, but not a UUID (an id) nor hex alone (a digest, a commit) unless the table
    holds accounts (`names_accounts`: a key in hex); there, also letters and digits in three
    kinds of character (`Cobalt-7712`), as a connector lets in after a password word."""
    value = value.strip()
    if len(value) < 8 or any(char.isspace() for char in value) or REDACTED.lower() in value.lower() or is_placeholder(value):
        return False
    if is_indirect(value) or _UUID.fullmatch(value):
        return False
    if all(char in HEX_DIGITS for char in value):
        return accounts and len(value) >= 32 and _looks_generated(value)
    if _looks_generated(value) or looks_like_password(value):
        return True
    if not accounts or not any(char.isdigit() for char in value) or re.fullmatch(r"[\w\-]+\.[A-Za-z]{1,5}", value):
        return False
    kinds = any(char.islower() for char in value) + any(char.isupper() for char in value) + any(char.isdigit() for char in value)
    return kinds >= 3


def _locate_sql_insert(match: re.Match[str], text: str) -> list[Span]:
    """The values of every row that the column's name (`_secret_for`) or, for a column named
    nothing secret or no column list, the value's own look (`_unnamed_sql_secret`) says are
    secrets."""
    accounts = names_accounts(match.group("table").strip("`\"[]\\"))
    if match.group("columns") is not None:
        columns = [column.strip().strip("`\"[]\\") for column in match.group("columns").split(",")]
        strengths = [name_strength(column) for column in columns]
    else:
        strengths = []
    spans = []
    position = match.end()
    for _ in range(1000):
        parsed = _split_sql_tuple(text, position - 1) if text[position - 1 : position] == "(" else None
        if parsed is None:
            break
        values, after = parsed
        for index, value in enumerate(values):
            if value is None:
                continue
            strength = strengths[index] if index < len(strengths) else None
            content = text[value[0] : value[1]]
            if _secret_for(strength, content) if strength is not None else _unnamed_sql_secret(content, accounts):
                spans.append(value)
        following = re.compile(r"(?:\s|\\+[nrt]|\+)*,(?:\s|\\+[nrt]|\+)*\(").match(text, after)
        if following is None:
            break
        position = following.end()
    return spans


# ---- fields ------------------------------------------------------------------------------------------


# The attribute that names what an element holds: `<property name="db.password">`,
# `<entry key="smtp.password">`, `<setting id="ApiSecret">` (Hibernate, Java properties, .NET).
_XML_NAME_ATTRIBUTE = lazy_compile(
    r"(?<![\w\-:])(?:name|key|id)\s{0,3}=\s{0,3}\\*[\"']([\w.:\-]{1,80})\\*[\"']", re.IGNORECASE
)


def _locate_xml_element(match: re.Match[str], text: str) -> Span | None:
    strength = name_strength(match.group("tag").split(":")[-1])
    if strength is None and match.group("attributes"):
        named = _XML_NAME_ATTRIBUTE.search(match.group("attributes"))
        strength = name_strength(named.group(1)) if named is not None else None
    start, end = match.span("value")
    return (start, end) if _secret_for(strength, text[start:end]) else None


_JSON_STRING = lazy_compile(r"\\*\"((?:[^\"\\]|\\+[^\"\\])*)\\*\"")
_JSON_NUMBERS = lazy_compile(r"\s*(?:-?\d+(?:\.\d+)?\s*,?\s*(?:\\+n\s*)?)+\]")


def _locate_container(match: re.Match[str], text: str) -> list[Span]:
    """Every string value inside the array or object that follows a key naming a secret; in an
    object, values under keys that name no secret are kept only when the key is a host or an
    id-like name (`"github.com": "X"`: composer's auth.json)."""
    strength = name_strength(match.group("name"))
    if strength is None:
        return []
    opener = match.group("open")
    closer = "]" if opener == "[" else "}"
    depth = 0
    position = match.end() - 1
    end = min(len(text), position + 20000)
    spans = []
    expecting_key = opener == "{"
    while position < end:
        char = text[position]
        if char in "[{":
            depth += 1
            expecting_key = char == "{"
            position += 1
            continue
        if char in "]}":
            depth -= 1
            position += 1
            if depth == 0:
                break
            continue
        if char == ":":
            expecting_key = False
            position += 1
            continue
        if char == ",":
            expecting_key = text[position - 1 : position] != "]" and closer == "}"
            position += 1
            continue
        found = _JSON_STRING.match(text, position)
        if found is None:
            position += 1
            continue
        value_start, value_end = found.span(1)
        if expecting_key:
            key = found.group(1)
            expecting_key = False
            if name_strength(key) is None and re.search(r"(?i)user|name|email|login|type|url|host|scheme", key):
                # `"username": "..."` inside a secret object: skip its value.
                skip = re.compile(r"\s*:\s*").match(text, found.end())
                if skip is not None:
                    after = _JSON_STRING.match(text, skip.end())
                    if after is not None:
                        position = after.end()
                        continue
        elif _secret_for(strength, text[value_start:value_end]):
            spans.append((value_start, value_end))
        position = found.end()
    return spans


def _locate_labelled_index(match: re.Match[str], text: str) -> Span | None:
    strength = name_strength(match.group("name"))
    start, end = match.span("value")
    value = text[start:end]
    if strength is None or _is_marker_at(text, start):
        return None
    return (start, end) if _secret_for(strength, value) and (strength == "strong" or len(value) >= 12) else None


# ---- URLs ---------------------------------------------------------------------------------------------

# Words of a host or path that take events from clients authenticated by a token in the path
# (webhooks, collectors, intake and telemetry endpoints, error and event stores).
_CREDENTIAL_PATH_WORD = lazy_compile(
    r"(?i)webhook|hooks?\b|trigger|\bkeys?\b|tokens?|secret|\binput\b|ingest|collect|\bbot|apikey|api_key|notify|beacon|push"
    r"|\bevents?\b|intake|telemetry|\bcapture\b|\btrack(?:ing)?\b|\breport(?:ing)?\b|\bsink\b|\bdsn\b"
)
_CODE_HOSTING_SEGMENT = lazy_compile(r"(?i)commits?|blob|tree|compare|pull|sha|releases|tags?|raw|archive|actions|runs|packages|ipfs|objects|blobs|manifests|builds?|jobs?|artifacts?|issues|snapshots?")
_UUID = lazy_compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _token_segment(segment: str) -> bool:
    """Hex of 24+, a UUID, or 16+ letters and digits mixed (an id or key in a hook URL)."""
    if _UUID.fullmatch(segment) or (len(segment) >= 24 and all(char in HEX_DIGITS for char in segment)):
        return True
    body = segment.replace("-", "").replace("_", "")
    return len(body) >= 16 and body.isalnum() and body.isascii() and any(c.isdigit() for c in body) and any(c.isalpha() for c in body)


def _locate_url(match: re.Match[str], text: str) -> list[Span]:
    spans: list[Span] = []
    host = match.group("host")
    path_start, path_end = match.span("path")
    context = host.lower()
    credential_context = _CREDENTIAL_PATH_WORD.search(host) is not None
    previous = ""
    for segment in re.finditer(r"[^/]+", text[path_start:path_end]):
        value = segment.group()
        start, end = path_start + segment.start(), path_start + segment.end()
        pieces = [(start, end, value)]
        if "@" in value or ":" in value:
            # Outlook's `<uuid>@<uuid>`, Telegram's `bot<id>:<token>`: each piece on its own.
            pieces = [(start + m.start(), start + m.end(), m.group()) for m in re.finditer(r"[^@:]+", value)]
        for piece_start, piece_end, piece in pieces:
            if REDACTED.lower() in piece.lower():
                continue
            generated = len(piece) >= 20 and not all(char in HEX_DIGITS or char == "-" for char in piece) and _looks_generated(piece)
            hooked = credential_context and not _CODE_HOSTING_SEGMENT.fullmatch(previous) and _token_segment(piece)
            if generated or hooked:
                spans.append((piece_start, piece_end))
        if _CREDENTIAL_PATH_WORD.search(value):
            credential_context = True
        previous = value
        context += "/" + value
    query_start, query_end = match.span("query")
    if query_start >= 0:
        for pair in re.finditer(r"([^&=?#]{1,60})=([^&#]*)", text[query_start:query_end]):
            key, value = pair.group(1), pair.group(2)
            start, end = query_start + pair.start(2), query_start + pair.end(2)
            if not value or REDACTED.lower() in value.lower():
                continue
            strength = name_strength(key) or ("weak" if key.lower() in ("code", "k", "sig", "hmac", "auth") else None)
            if _secret_for(strength, value) or (len(value) >= 20 and _looks_generated(value)):
                spans.append((start, end))
    return spans


# ---- wallets -------------------------------------------------------------------------------------------


@cache
def _mnemonic_words() -> dict[str, frozenset[str]]:
    """The BIP-39 word lists of every language the `mnemonic` package ships."""
    from mnemonic import Mnemonic

    # Compared in NFC: some lists are stored decomposed (`bastón` as `o` + a combining accent).
    return {
        language: frozenset(unicodedata.normalize("NFC", word) for word in Mnemonic(language).wordlist)
        for language in Mnemonic.list_languages()
    }


# Bytes of the text as marks: ASCII letters and every non-ASCII byte `a`, a blank ` `, anything
# else `x`. Twelve short words in a row show as `(a+ ){11}a`, found by a plain bytes regex.
_WORD_MARKS = bytes(
    0x61 if (65 <= code <= 90 or 97 <= code <= 122 or code >= 0x80) else 0x20 if code == 0x20 else 0x78 for code in range(256)
)
# Maximal runs of short words (the count is checked in `_locate_mnemonic`).
# A letter: as written, a combining mark (word lists printed decomposed, NFKD: `de\u0301givrer`,
# the Japanese list's voiced kana `\u304b\u3099`), or JSON-escaped (`t\\u00edmido`, `\\u8c37`:
# tool arguments are serialised with `ensure_ascii`). A blank: a space or an ideographic space
# (the Japanese list's), raw or escaped.
_MNEMONIC_LETTER = r"(?:[^\W\d_]|[\u0300-\u036f\u3099\u309a]|\\{1,8}u(?!3000)[0-9a-fA-F]{4})"
_MNEMONIC_BLANK = r"(?:[ \u3000]|\\{1,8}u3000)"
_MNEMONIC_RUN = lazy_compile(
    r"(?:(?<=\\[nrt])|(?<![^\W\d_])(?<!\\))(?:" + _MNEMONIC_LETTER + r"{1,12}" + _MNEMONIC_BLANK + r")+" + _MNEMONIC_LETTER
    + r"{1,12}(?![^\W\d_])"
)
_MNEMONIC_SEPARATOR = lazy_compile(_MNEMONIC_BLANK)
_ESCAPED_CHAR = lazy_compile(r"\\+u([0-9a-fA-F]{4})")
_ESCAPE_DEPTH = lazy_compile(r"\\+u")


@cache
def _escape_pattern(depth: int, blank: bool) -> re.Pattern[bytes]:
    """A JSON escape with exactly `depth` backslashes: of the ideographic space, or of any other
    character."""
    code = rb"3000" if blank else rb"(?!3000)[0-9a-fA-F]{4}"
    return re.compile(rb"(?<!\\)" + rb"\\" * depth + rb"u" + code)
# Maximal runs of words between single blanks (no backtracking: each run is read once).
_WORD_RUNS = lazy_compile(rb"(?:a+ )+a+")
# A list word has up to 8 letters (9 with a JSON escape's `n`), 3 bytes each when not ASCII.
_LONGEST_WORD_BYTES = 27


def _word_run_byte_starts(marks: bytes, longest: int = _LONGEST_WORD_BYTES) -> Iterator[int]:
    """Byte offsets where 12 or more short words in a row may start: the start of every run of
    12+ words, and of the part after each word too long for a list (`longest` bytes)."""
    for run in _WORD_RUNS.finditer(marks):
        if run.group().count(b" ") < 11:
            continue
        position = run.start()
        yield position
        for word in re.finditer(rb"a+", run.group()):
            if word.end() - word.start() > longest:
                yield run.start() + word.end() + 1


def _word_run_starts(text: str) -> Iterator[int]:
    """Where a run of 12+ short words can start: in ASCII text, where the marks show one (a
    JSON escape's letter, `\\nword`, skipped); otherwise (byte offsets are not character
    offsets) where the rule's own regex finds a run, when the marks or an ideographic space
    (Japanese word lists) say there may be one."""
    ascii_only = text.isascii()
    data = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    if "\u3000" in text:
        yield from (match.start() for match in _MNEMONIC_RUN.finditer(text))
        return
    if ascii_only and "\\u" in text:
        # JSON-escaped letters are letters (`t\\u00edmido`); an escaped ideographic space ends a
        # word (`\\u3051\\u3093\\u3000...`). Replaced by letters of the same width, one depth
        # of escaping at a time (a constant replacement: no Python call per escape).
        longest = _LONGEST_WORD_BYTES
        for depth in range(8, 0, -1):
            if b"\\" * depth + b"u" in data:
                if b"u3000" in data:
                    data = _escape_pattern(depth, True).sub(b"a" * (depth + 4) + b" ", data)
                data = _escape_pattern(depth, False).sub(b"a" * (depth + 5), data)
                # A list word of escaped letters is longer: 9 of them (a JSON escape's `n`).
                longest = max(longest, 9 * (depth + 5))
        marks = data.translate(_WORD_MARKS)
        for start in _word_run_byte_starts(marks, longest):
            yield start + 1 if start > 0 and text[start - 1] == "\\" else start
        return
    marks = data.translate(_WORD_MARKS)
    byte_at, char_at = 0, 0
    for start in _word_run_byte_starts(marks):
        if not ascii_only:
            # Run starts are ASCII or the first byte of a letter: count the characters between.
            char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
            byte_at = start
            start = char_at
            # A label glued to the first word (`助记词：谷 银 ...`): the run may start after it.
            first = text[start : start + 40].split(" ", 1)[0]
            glued = max((index for index, char in enumerate(first) if not char.isalpha() and not unicodedata.combining(char)), default=-1)
            if glued >= 0:
                yield start + glued + 1
                continue
        yield start + 1 if start > 0 and text[start - 1] == "\\" else start


@cache
def _all_mnemonic_words() -> frozenset[str]:
    return frozenset().union(*_mnemonic_words().values())


def _plain_text(run: str) -> str:
    """A run of words as the word lists write them: JSON escapes decoded (a run holds letters,
    escapes and blanks only), in NFC."""
    if "\\" in run:
        if run.isascii():
            # One escape level, then the codec: no Python call per escape.
            run = _ESCAPE_DEPTH.sub(r"\\u", run).encode("ascii").decode("unicode_escape", "replace")
        else:
            run = _ESCAPED_CHAR.sub(lambda escape: chr(int(escape.group(1), 16)), run)
    return unicodedata.normalize("NFC", run)


def _twelve_known_in_a_row(words: list[str]) -> bool:
    known = _all_mnemonic_words()
    current = 0
    for word in words:
        if word in known:
            current += 1
            if current >= 12:
                return True
        else:
            current = 0
    return False


def _locate_mnemonic(match: re.Match[str], text: str) -> Span | None:
    run = match.group()
    # Most runs of short words are prose: twelve in a row from any list first (the run decoded
    # at once, one set lookup per word), then the words' offsets and each language.
    words = _plain_text(run).replace("\u3000", " ").split(" ")
    if len(words) < 12:
        return None
    first = words[0]
    if not first.isalpha():
        # A label glued to the first word (`助記詞：inherit`, escaped: the colon read as a letter).
        glued = max((index for index, char in enumerate(first) if not char.isalpha() and not unicodedata.combining(char)), default=-1)
        words[0] = first[glued + 1 :]
    if not _twelve_known_in_a_row(words):
        return None
    spans: list[Span] = []
    last = 0
    for blank in _MNEMONIC_SEPARATOR.finditer(run):
        spans.append((last, blank.start()))
        last = blank.end()
    spans.append((last, len(run)))
    if len(spans) != len(words):
        return None
    for unit in _ESCAPED_CHAR.finditer(run, 0, spans[0][1]):
        char = chr(int(unit.group(1), 16))
        if not (char.isalpha() or unicodedata.combining(char)):
            spans[0] = (unit.end(), spans[0][1])
    for language, wordlist in _mnemonic_words().items():
        run_start = 0
        best = (0, 0)
        for index, word in enumerate(words + [""]):
            if word not in wordlist:
                if index - run_start > best[1] - best[0]:
                    best = (run_start, index)
                run_start = index + 1
        if best[1] - best[0] >= 12:
            return match.start() + spans[best[0]][0], match.start() + spans[best[1] - 1][1]
    return None


def _locate_key_array(match: re.Match[str], text: str) -> Span | None:
    numbers = [int(number) for number in re.findall(r"\d+", match.group("numbers"))]
    if len(numbers) not in (32, 64) or max(numbers) > 255 or len(set(numbers)) < 16:
        return None
    return match.span("numbers")


def _locate_base58check(match: re.Match[str], text: str) -> Span | None:
    import base58

    try:
        decoded = base58.b58decode_check(match.group())
    except ValueError:
        return None
    # WIF: a version byte and 32 key bytes (and 0x01 when compressed); extended keys: 78 bytes.
    return match.span() if len(decoded) in (33, 34, 78) else None


# ---- base64 and generated values -------------------------------------------------------------------------

_PRINTABLE = lazy_compile(rb"[\x20-\x7e\t\r\n]*")
_USER_PASSWORD = lazy_compile(r"[^\s:]{1,64}:[^\s]{4,128}")


def decoded_text(blob: str) -> str | None:
    """`blob` decoded from base64 (standard or URL-safe, padding optional) when that gives UTF-8
    text of 6+ characters that is mostly printable; else None."""
    body = blob.rstrip("=")
    if len(body) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(body.replace("+", "-").replace("/", "_") + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(raw) < 6:
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(char.isprintable() or char in "\t\r\n" for char in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


def _locate_wrapped(match: re.Match[str], text: str, redact_whole: Callable[[str], str]) -> Span | None:
    start = match.start()
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrt":
        start += 1  # the `n` of a JSON-escaped line break (`\\nc2VydmVy...`), not the blob's
    if text[start] == "+" and (start == 0 or text[start - 1] == "\n" or text[max(0, start - 2) : start - 1] == "\\"):
        # The `+` of an added line in a patch (`+c2VydmVy...`), not the blob's: judged without it.
        start += 1
    blob = text[start : match.end()]
    span = (start, match.end())
    # Base64 of text has both cases and a digit or `+/=`; identifiers (`include_secrets`) do not.
    if blob.islower() or blob.isupper() or not any(char.isdigit() or char in "+/=" for char in blob):
        return None
    decoded = decoded_text(blob)
    if decoded is None:
        return None
    if _USER_PASSWORD.fullmatch(decoded):
        user, password = decoded.split(":", 1)
        if not password.isdigit() and not password.startswith("//") and not is_placeholder(password):
            return span
    return span if redact_whole(decoded) != decoded else None


DOCUMENT_SHAPES: tuple[Rule, ...] = (
    Rule(
        # A header cell that names a secret: found from the word (`_secret_word_starts`), the
        # header line and its delimiter read around it.
        "table_secret_column",
        r"(?:" + _SECRET_NAME_END + r")s?(?=[ \t\"'\\]*(?:[|,;\t]|\\t|  |\r?\n|\\+n|$))",
        (REDACTED,),
        _NAME_HINTS,
        case_insensitive=True,
        locate_all=_locate_table,
        starts=_secret_word_starts,
    ),
    Rule(
        "sql_insert_secret_column",
        # The column list is optional (`INSERT INTO t VALUES (...)`).
        r"(?i)insert\s+into\s+(?P<table>[\w.`\"\[\]\\]{1,128})(?:\s|\\+[nrt])*(?:\((?P<columns>[^()]{1,2000})\)(?:\s|\\+[nrt]|\+)*)?"
        r"values(?:\s|\\+[nrt]|\+)*\(",
        (REDACTED,),
        ("insert",),
        locate_all=_locate_sql_insert,
    ),
    Rule(
        "xml_secret_element",
        r"<(?P<tag>[A-Za-z_][\w:.\-]{0,60})(?P<attributes>\s[^<>]{0,200})?>(?P<value>[^<>\s\"\\][^<>\"\\]{0,1000}?)</(?P=tag)>",
        (REDACTED,),
        ("</",),
        locate=_locate_xml_element,
    ),
    Rule(
        "name_value_pair",
        r"(?:(?:name|key|keyname|parametername|parameterkey|variable|env)(?:\\*[\"'])?\s{0,4}[:=]\s{0,4}\\*[\"']?(?P<name>[\w.\-]{2,80})\\*[\"']?"
        # Other fields may stand between (`"permissions": "FULL",`), on the same object.
        # ... but not another pair's name (the search must not run past the pair it started).
        r"(?:(?:(?!name|key)[^{}\[\]<>]){0,200}?[\s,+{]|\\[nrt])(?:\\*[\"'])?(?:value|parametervalue|secretvalue)(?:\\*[\"'])?\s{0,4}[:=]\s{0,4}\\*[\"']?"
        r"|(?:define|setenv|putenv|getenv|fetch|set|get)\s{0,3}\(\s{0,3}\\*[\"'](?P<name2>[\w.\-]{2,80})\\*[\"']\s{0,3},\s{0,3}\\*[\"'])"
        r"(?P<value>[^\s\"'\\<>]{3,1000})",
        (REDACTED,),
        ("name", "key", "variable", "env", "define", "set", "get", "fetch"),
        case_insensitive=True,
        locate=lambda match, text: _locate_pair(match, text),
    ),
    Rule(
        "json_secret_container",
        r"\\*[\"'](?P<name>[\w.\- ]{2,80})\\*[\"']\s{0,4}:\s{0,4}(?P<open>[\[{])",
        (REDACTED,),
        ("[", "{"),
        locate_all=_locate_container,
    ),
    Rule(
        # `Unseal Key 1: ...`: a secret word, an index, a value.
        "labelled_index_secret",
        r"(?P<name>" + _SECRET_NAME_END + r")s?[ \t]{1,2}#?\d{1,3}[ \t]{0,2}[:=][ \t]{0,4}\\*[\"']?(?P<value>[^\s\"'\\]{6,512})",
        (REDACTED,),
        _NAME_HINTS,
        case_insensitive=True,
        locate=_locate_labelled_index,
        starts=_secret_word_starts,
    ),
    Rule(
        "url_secret_part",
        r"(?i)https?://(?P<host>[a-z0-9.\-]{1,253})(?::\d{1,5})?(?P<path>/[^\s?#\"'\\<>()]{0,2000})?(?:\?(?P<query>[^\s#\"'\\<>]{1,4000}))?",
        (REDACTED,),
        ("http",),
        locate_all=_locate_url,
    ),
    Rule(
        "wallet_mnemonic",
        _MNEMONIC_RUN.pattern,
        (REDACTED,),
        (),
        locate=_locate_mnemonic,
        starts=_word_run_starts,
    ),
    Rule(
        "wallet_key_array",
        r"\[(?P<numbers>\s{0,4}(?:\d{1,3}\s{0,4},\s{0,4}(?:\\+n\s{0,8})?){31,63}\d{1,3})\s{0,4}(?:\\+n\s{0,8})?\]",
        (REDACTED,),
        (",",),
        locate=_locate_key_array,
    ),
    Rule(
        "base58check_private_key",
        r"(?<![1-9A-HJ-NP-Za-km-z])(?:[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}|[xtyzuv]prv[1-9A-HJ-NP-Za-km-z]{107,108})(?![1-9A-HJ-NP-Za-km-z])",
        (REDACTED,),
        (),
        locate=_locate_base58check,
        starts=_token_run_starts,
    ),
)


def _locate_pair(match: re.Match[str], text: str) -> Span | None:
    # The name as written (the rule runs over lower-cased text; `ClearTextPassword` has humps).
    group = "name" if match.start("name") >= 0 else "name2"
    # `key1` is the first of several keys: the index says nothing about what it holds.
    name = text[match.start(group) : match.end(group)].rstrip("0123456789")
    strength = name_strength(name)
    start, end = match.span("value")
    value = text[start:end].rstrip(",;)")
    return (start, start + len(value)) if _secret_for(strength, value) else None


def decoded_shapes(redact_whole: Callable[[str], str]) -> tuple[Rule, ...]:
    """The rules that judge a value by its decoded text, which `redact_whole` (the engine's
    `redact_secrets`: the whole table) reads. Passed in rather than imported: the engine imports
    this module for its rules, and the two must not import each other."""
    return (
        Rule(
            "base64_wrapped_secret",
            # Standard base64 (what Kubernetes secrets, docker configs and `base64` print): a
            # URL-safe alphabet would take in every snake_case identifier.
            # One look-behind only: it is tried at every position (`_locate_wrapped` drops the `n` of a
            # JSON-escaped line break the match starts with).
            r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/]{16,65536}={0,2}(?![A-Za-z0-9+/_\-=])",
            (REDACTED,),
            (),
            locate=lambda match, text: _locate_wrapped(match, text, redact_whole),
        ),
    )
