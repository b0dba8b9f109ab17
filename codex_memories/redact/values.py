"""How a value looks: generated (a credential) or written by a person (a word, a name, a path).

Contract: pure functions of one string, no I/O. `looks_random` is the test every "is this value a
credential?" rule applies (character classes and Shannon entropy, never a list of prefixes);
`token_looks_random` applies it to the body of a `prefix_body` token.
"""

from __future__ import annotations

import math
import re
from collections import Counter

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




_TOKEN_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]{0,24}[_\-.]")
_UPPER_OR_DIGIT = re.compile(r"[0-9A-Z]")


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
