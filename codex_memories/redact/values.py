"""How a value looks: generated (a credential) or written by a person (a word, a name, a path).

Contract: pure functions of one string, no I/O, never a list of known values or prefixes.
* `looks_random`: generated (base62/64 noise, long hex), from character classes and Shannon
  entropy; `token_looks_random` applies it to the body of a `prefix_body` token.
* `looks_like_password`: what a person types as a password (mixes three kinds of character),
  as opposed to a word, a number, a name, a path, a version or a placeholder.
* `looks_like_word_and_number`: the password a person makes from words and a number joined by
  a sign (`Gato-47572016`, `Lantern-Juniper-Willow-19`, `Tiger#48662011`): a secret only where
  something says credential (prose after a password word, a login), never on its own.
* `looks_like_random_base64`: random bytes in base64 (a key), not an encoded text.
* `looks_like_fragment`: the shorter piece of a generated value cut by a line break (the rest of
  a wrapped key), judged with the weaker evidence that piece gives.
* `is_indirect`: a value that only points at the secret (`$TOKEN`, `${DB_PASS}`, `<password>`,
  `env:NAME`, `@file`, a path, a call) or is none (a number, `true`, the next `--option`),
  which is never redacted.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from codex_memories.redact.lazy import lazy_compile

HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    length = len(value)
    return -sum(count / length * math.log2(count / length) for count in Counter(value).values())


def looks_random(value: str) -> bool:
    """True for machine-generated credentials (base62/64 noise, long hex), false for words,
    identifiers, file names, paths and versions.

    Random mixed-case text has upper and lower case in similar amounts; identifiers
    (`AbstractSingletonProxyFactoryBean2`, `CODEX_MEMORIES_TEST_S3`) do not. Random single-case
    text is dense in digits *within one run*: `manylinux_2_17_x86_64` has digits only in short
    separate pieces. Separators (`-_.~%`, and base64's `+/=`) split the runs."""
    runs = [run for run in re.split(r"[-_.~%+/=]", value) if run]
    body = "".join(runs)
    if len(body) < 16 or not body.isalnum() or not body.isascii():
        return False
    letters = sum(char.isalpha() for char in body)
    upper = sum(char.isupper() for char in body)
    if upper and upper != letters:
        # Mixed case: random when both cases are well represented in the longest run (dotted
        # names such as `cin.TranslationUnit.PARSE_DETAILED_RECORD` mix cases across runs).
        run = max(runs, key=len)
        run_letters = sum(char.isalpha() for char in run)
        run_upper = sum(char.isupper() for char in run)
        digits = sum(char.isdigit() for char in run)
        if len(run) < 12 or not run_letters:
            return False
        share = run_upper / run_letters
        entropy_floor = min(3.6, math.log2(len(run)) - 0.4)
        # CamelCase has each capital followed by a small letter; random text often does not.
        irregular = sum(1 for a, b in zip(run, run[1:] + " ") if a.isupper() and not b.islower())
        return (
            0.2 <= share <= 0.8
            and (irregular >= 2 or digits >= 2)
            and entropy(run) >= entropy_floor
            and (digits > 0 or len(run) >= 20)
        )
    # One case only (or no letters): one long run, dense in digits, with letters and digits
    # interleaved (`errpep484585container` has one block of digits).
    run = max(runs, key=len)
    digits = sum(char.isdigit() for char in run)
    switches = sum(1 for a, b in zip(run, run[1:]) if a.isdigit() != b.isdigit())
    return len(run) >= 16 and len(run) * 0.15 <= digits < len(run) and switches >= 4 and entropy(run) >= 3.2


_TOKEN_PREFIX = lazy_compile(r"[A-Za-z][A-Za-z0-9]{0,24}[_\-.]")
_UPPER_OR_DIGIT = lazy_compile(r"[0-9A-Z]")


HASH_NAMES = frozenset(
    {"sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake3", "crc32", "h1", "sum", "hash", "digest"}
)



def token_looks_random(token: str) -> bool:
    """A prefix of letters and digits, a separator, then a random body of 16+ characters."""
    lead = _TOKEN_PREFIX.match(token)
    if lead is None or len(token) - lead.end() < 16 or not _UPPER_OR_DIGIT.search(token, lead.end()):
        return False
    prefix = token[: lead.end() - 1]
    if prefix.lower() in HASH_NAMES:
        return False
    # Long hex after a prefix is a token only after `_` (shpat_, sbp_, dop_v1_) or an upper-case
    # prefix (PMAK-): content hashes are written `sha256-`, `pip-`, `build-`, `Linux-pip-`.
    tail = re.match(r"(?:(?:[A-Za-z]+|v\d+)[_\-.])*", token)
    hex_tail = token[tail.end() :]
    if hex_tail and all(char in HEX_DIGITS for char in re.sub(r"[-_.]", "", hex_tail)):
        separator = token[tail.end() - 1] if tail.end() else ""
        if separator != "_" and not prefix.isupper():
            return False
        return looks_random(hex_tail)
    return looks_random(token[len(prefix) + 1 :])


# Punctuation a password holds and an identifier, a path or a version does not.
_PASSWORD_SYMBOLS = frozenset("!@#$%^&*+=?~;:,<>|()[]{}`'\"")
_PLACEHOLDER = lazy_compile(
    # A variable in braces (`${DB_PASSWORD:-x}`; the closing one may be trimmed), `%APPDATA%`,
    # or a command substitution (`$(cat /run/secrets/db)`, cut at its first space by the rules
    # that read a value). A bare `$NAME` is `_bare_variable`'s.
    r"""\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+][^{}]*)?\}?|%[A-Za-z_][A-Za-z0-9_]*%|\$\(.*|<[^<>]*>|\{\{.*\}\}|(?:env|file|fd|stdin|prompt)(?::.*)?"""
    r"""|(?:(?:your|my|the|some|new|old)[_\-]?)?(?:password|passwd|secret|token|key|api[_\-]?key)(?:[_\-]?here)?"""
    # Masked values, as tools and docs print them: `********`, `xxxx`, `••••`, `****abcd`.
    r"""|[*x.•·]{3,}[A-Za-z0-9]{0,6}|[A-Za-z0-9]{0,6}[*•]{3,}"""
    # Words that ask for a value: `your-token`, `YOUR_API_KEY`, `token_here`, `changeme`.
    r"""|your[_\-][A-Za-z0-9_\-]{1,40}|[A-Za-z0-9_\-]{1,40}[_\-]here|(?:replace|change)[_\-]?me|\[?redacted\]?""",
    re.IGNORECASE,
)
# Code: a call, or an attribute path of words (`self.token`, `os.environ["X"]`, `settings.API_KEY`);
# `qDuQUW8etRc.f` is not one (its capitals do not start words).
_WORD = r"(?:[a-z_][a-z0-9_]*|[A-Z][A-Z0-9_]*|(?:[A-Z]?[a-z][a-z0-9]*)(?:[A-Z][a-z][a-z0-9]*)*)"
_CALL_OR_ATTRIBUTE = lazy_compile(
    r"[A-Za-z_][A-Za-z0-9_]*\(.*\)?|" + _WORD + r"(?:\." + _WORD + r")+(?:\(.*\)?|\[.*\]?)?|[A-Za-z_][A-Za-z0-9_]*\[.*\]"
)
# A regular expression is not a password: classes, counted repeats, anchors, escapes, `.*`
# (two of them; one `$` at the end is a password's symbol).
_REGEX_SIGNS = lazy_compile(r"\[(?:\^)?[a-zA-Z0-9]-[a-zA-Z0-9]|\{\d+(?:,\d*)?\}|\\[dwsbDWS]|\.[*+]|^\^|\$$|\(\?")
# A template's field (`{password}`, `%(secret)s`, `{{ .Values.token }}`): the value is filled in
# later. A value starting `(`, `:` or a backtick is code or markup (`(self.user, ...`,
# `:py:class:`, ``exc_type=...``).
_TEMPLATE_FIELD = lazy_compile(r"\{[A-Za-z_][\w.]*\}|%\(\w+\)[sdr]|\{\{.*\}\}")
# The next option of a command (`--verbose`, `-xvf`, `--format=json`, `-storepass`,
# `-AsPlainText`), not a value; `-yMEwCNSaX...` is a value that starts with a dash.
_OPTION = lazy_compile(
    r"-|-[A-Za-z0-9]{1,3}|--?[a-z][a-z0-9]*(?:[\-_.][a-z0-9]+)*(?:=\S*)?|-[A-Z][a-z]+(?:[A-Z][a-z]+)*"
)
_EMAIL = lazy_compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_VERSION_OR_NUMBER = lazy_compile(r"v?\d+(?:[.:,\-]\d+)*[a-z]?")


# `$NAME` or PowerShell's `$env:NAME`, with a word after it (`$PGPASS-dev`, `$HOME.bak`).
_BARE_VARIABLE = lazy_compile(r"\$(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?:[-.][a-z]+)*")


def _bare_variable(value: str) -> bool:
    """`$DB_PASSWORD`, `$userToken2`, `$DBPass`: a name as people write one (words, or letters
    only). A generated password may start with `$` too (`$qSscGxt0G487y2` in an odbc.ini, or
    `$k9Lw-2x.Qp!`): it has digits and does not read as words."""
    match = _BARE_VARIABLE.fullmatch(value)
    if match is None:
        return False
    name = match.group(1)
    return re.fullmatch(_WORD, name) is not None or not any(char.isdigit() for char in name)


def is_placeholder(value: str) -> bool:
    """A value that stands for the secret and is none (`<your-token>`, `${DB_PASSWORD}`,
    `********`, `YOUR_API_KEY`, `{{ .Values.token }}`): what docs and examples write."""
    trimmed = value.strip("\"'`").rstrip(",;)]}")
    return bool(trimmed) and (
        _PLACEHOLDER.fullmatch(trimmed) is not None or _bare_variable(trimmed) or _TEMPLATE_FIELD.search(trimmed) is not None
    )


def is_indirect(value: str) -> bool:
    """A variable, a placeholder or template field, a path, a file reference, a call or attribute
    (code), an email address or a number: something that stands for the secret or is not one."""
    if not value:
        return True
    if value[0] == "/" or value.startswith(("./", "../", "~/")) or "://" in value or re.fullmatch(r"[~@][\w.\-]*/[\w./\-]*", value):
        return True
    if _OPTION.fullmatch(value) or value[0] in "(:`" or _TEMPLATE_FIELD.search(value):
        return True
    return bool(
        _PLACEHOLDER.fullmatch(value)
        or _bare_variable(value)
        or _CALL_OR_ATTRIBUTE.fullmatch(value)
        or _EMAIL.fullmatch(value)
        or _VERSION_OR_NUMBER.fullmatch(value)
        or value.lower() in ("none", "null", "nil", "true", "false", "undefined", "required", "optional", "string")
    )


def _character_kinds(value: str) -> int:
    return (
        any(char.islower() for char in value)
        + any(char.isupper() for char in value)
        + any(char.isdigit() for char in value)
        + any(char in _PASSWORD_SYMBOLS for char in value)
    )


# A piece of a name that is a size or a count with its unit (`7B`, `64k`, `8x`) or a version (`v0`).
_UNIT_OR_VERSION_PIECE = r"\d+[A-Za-z]{1,2}|[vV]\d+"


def reads_as_identifier(value: str) -> bool:
    """Words and numbers joined by `-_.` (`e2e-Tests`, `snake_case_2`, `Mipexmipex-69342`,
    `Llama-3.1-8B`, `Mistral-7B-Instruct-v0.3`): a name people write, even when it mixes cases and
    digits."""
    pieces = [piece for piece in re.split(r"[-_.]", value) if piece]
    return bool(pieces) and all(
        piece.isdigit() or re.fullmatch(_WORD, piece) or re.fullmatch(_UNIT_OR_VERSION_PIECE, piece) for piece in pieces
    )


def looks_like_password(value: str) -> bool:
    """A password a person chose or a generator made: 8 to 128 characters without spaces, not
    indirect, and either random or mixing three of lower case, upper case, digits and symbols
    (`Tr0ub4dor-x`, `hunter2!go`). `Python3Parser`, `release-2024`, `snake_case_2` are not:
    a name carries one number and `_-.` are not symbols."""
    if not 8 <= len(value) <= 128 or any(char.isspace() for char in value) or is_indirect(value):
        return False
    if len({sign.group() for sign in _REGEX_SIGNS.finditer(value)}) >= 2:
        return False
    if looks_random(value):
        return True
    kinds = _character_kinds(value)
    if kinds >= 3 and any(char in _PASSWORD_SYMBOLS for char in value):
        return True
    # Without a symbol: lower, upper and digits in two or more places (`s3cr3tP4ss`), not the one
    # number a name carries (`Python3Parser`, `utf8Decoder`).
    return kinds >= 3 and len(re.findall(r"\d+", value)) >= 2


# One to four words (any script) joined by a sign, then a number of 2+ digits after a sign or
# glued on, maybe a closing sign or a letter or two (`Pinecone-7731x`). `Release-2024` has this
# shape too, which is why only a credential position makes it a secret.
_WORDS_AND_NUMBER = lazy_compile(
    r"[^\W\d_]{3,16}(?:[\-_.#@!+*%~=&$][^\W\d_]{2,16}){0,3}(?:[\-_.#@!+*%~=&$]|(?<=[^\W\d_]))\d{2,10}(?:[!?#*]|[a-z]{1,2})?"
)


def looks_like_word_and_number(value: str) -> bool:
    """A chosen password: words joined to a number by a sign (`Gato-47572016`, `Tiger#48662011`,
    `Lantern-Juniper-Willow-19`), 8 to 64 characters with a capital or a sign other than `-_.`;
    a name with a number (`release-2024`, `ubuntu-22`, `python311`) or a version is not."""
    if not 8 <= len(value) <= 64 or _WORDS_AND_NUMBER.fullmatch(value) is None or is_indirect(value):
        return False
    return any(char.isupper() or char in "#@!+*%~=&$" for char in value)


def looks_like_fragment(value: str) -> bool:
    """The piece of a generated value on the line after a redacted one: random, or 8+ letters
    and digits that switch back and forth (`3zA5bC7d`) or mix the cases irregularly."""
    body = re.sub(r"[-_+/=]", "", value)
    if len(body) < 8 or not body.isascii() or not body.isalnum():
        return False
    if looks_random(value):
        return True
    switches = sum(1 for a, b in zip(body, body[1:]) if a.isdigit() != b.isdigit())
    irregular = sum(1 for a, b in zip(body, body[1:] + " ") if a.isupper() and not b.islower())
    return switches >= 3 or (irregular >= 2 and any(char.islower() for char in body))


_BASE64 = lazy_compile(r"[A-Za-z0-9+/]{22,}={0,2}|[A-Za-z0-9_\-]{22,}={0,2}")


def looks_like_random_base64(value: str) -> bool:
    """Padded base64 (standard or URL-safe) of 16 or more bytes that are not text: a key, not
    an encoded string or fixture (`aGVsbG8gd29ybGQ=` decodes to words). Any long run of letters
    decodes to some bytes, so the value must show it is base64: a length that is a multiple of
    four and a `=` pad or a `+` or `/`, and all three of upper case, lower case and digits.
    (`looks_random` splits at `+/=` and can miss such a value when its pieces are short.)"""
    if not _BASE64.fullmatch(value) or len(value) % 4 or not (value.endswith("=") or "+" in value or "/" in value):
        return False
    if not (re.search(r"[a-z]", value) and re.search(r"[A-Z]", value) and re.search(r"\d", value)):
        return False
    body = value.rstrip("=")
    try:
        decoded = base64.urlsafe_b64decode(body.replace("+", "-").replace("/", "_") + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return False
    if len(decoded) < 16:
        return False
    printable = sum(32 <= byte < 127 or byte in (9, 10, 13) for byte in decoded)
    return printable < 0.9 * len(decoded) and len(set(decoded)) >= 0.6 * len(decoded)
