"""Secret redaction: the one function every path uses (state DB, files, logs, model requests).

Contract:
* `redact_secrets(text)` replaces every secret it recognises with `REDACTED`; everything else is
  returned unchanged. It is idempotent (`redact_secrets(redact_secrets(x)) == redact_secrets(x)`)
  and `REDACTED` itself matches no pattern.
* `find_secret_kinds(text)` names the rules that still find an unredacted secret;
  `find_secret_kinds(redact_secrets(x)) == []`, which is what the data-quality check asserts.
* `SECRET_PATTERNS` is the ordered table of `(name, pattern)` of every rule; `pattern.search(text)`
  answers like a compiled regex's but applies the rule's value checks too (see "Generic tokens"
  below), so it agrees with `find_secret_kinds`.

Where the rules come from, in the order they run:
1. Codex's four rules (spec 1.9), in its order and with its replacements (`Bearer
   [REDACTED_SECRET]`; key, separator and opening quote kept for assignments).
2. Formats whose exact shape we know and that need more than a token match: PEM and PGP key
   blocks (also JSON-escaped, also cut short), PuTTY key bodies, URL passwords, Authorization
   headers, JSON-quoted secret fields, `.env` / config assignments whose *name* says secret,
   credentials on command lines (`curl -u`, `mysql -p`, `sshpass -p`, `--password`), connection
   strings and signed-URL parameters, URL-encoded fields, session cookies, and the provider
   tokens the detector below misses or matches only in part.
3. The regex plugins of Yelp's `detect-secrets` (a maintained detector, a dependency): every
   plugin with a `denylist`, as installed, except the few listed in `_SKIPPED_PLUGINS` with the
   reason. A plugin's match is widened to the whole token it sits in.
4. Generic tokens: `prefix_` / `prefix-` / `prefix.` followed by a random-looking body (provider
   tokens whose prefix nobody listed), random user parts of URLs (`https://<token>@host`), and
   the second half of a key the terminal wrapped onto the next line. "Random-looking" is decided
   by `looks_random` (character classes and Shannon entropy), never by a list of prefixes.

Every rule works on JSON-serialised text (phase 1 redacts the JSON of transcript items, whose
tool outputs often contain JSON again). One deliberate difference from Codex: a value stops at a
backslash, so the escaped quote (`\\"`) or newline (`\\n`) that ends a value inside a JSON
string is never replaced and the JSON stays well formed.

Import cost: importing this module compiles nothing and does not import `detect-secrets`
(≈ 0.1-0.2 s, it pulls in `requests`); both happen on the first call, once per process.

Performance (benchmarks/README.md, "Secrets": about half the throughput of the previous
17-rule table): every rule is precompiled, starts with a literal where it can, bounds its
repetitions, and is skipped outright when none of its literal hints occurs in the text (all the
hints of all the rules are found in one Aho-Corasick pass, `pyahocorasick`). Checks a
regex cannot do cheaply (word boundaries, "is this value random?") run in Python on matches only,
never as a look-behind tried at every position.
Case-insensitive rules run case-sensitively over a lower-cased copy of the text (same length, so
match positions carry over), which is several times faster than `re.IGNORECASE`.
Before any rule runs, `codex_memories.secret_screen` scans the text once with Hyperscan for all
the rules' patterns (loosened, in prefilter mode) and hints: only the rules it reports run, so
the output is the same; building transcripts took half the time (benchmarks/README.md, "Ingest").
The screen is built once a process has redacted about 8 MB, or when it says bulk work is coming
(`prepare_screen`). Before that, without Hyperscan, or for a text it cannot judge, every rule is
checked as above.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import ahocorasick

from codex_memories.secret_screen import ScreenRule, SecretScreen, build_screen

REDACTED = "[REDACTED_SECRET]"

# Values never start with an existing marker: keeps every rule idempotent and lets
# `find_secret_kinds` run over redacted text without false alarms. Lower case because the
# case-insensitive rules are also run over lower-cased text.
_NOT_REDACTED = r"(?!\[(?:REDACTED_SECRET|redacted_secret)\])"
# Assignment values: no whitespace, no quotes, no backslash (see module docstring).
_VALUE = r"[^\s\"'\\]"
# A quote as it appears in plain text or inside (possibly nested) JSON strings.
_QUOTE = r"(?:\\{0,31}[\"'])"
# A line break as it appears in plain text or inside (possibly nested) JSON strings.
_NEWLINE = r"(?:\r?\n|(?:\\{1,31}r)?\\{1,31}n)"


def _at_boundary(text: str, position: int, excluded: frozenset[str]) -> bool:
    """True when `text[position - 1]` is not in `excluded`. A JSON escape (`\\n`, `\\t`, ...)
    right before counts as a boundary (see `_word_start`), and so does the `+` that starts an
    added line of a patch."""
    if position == 0 or text[position - 1] not in excluded:
        return True
    before = text[max(0, position - 3) : position]
    return (len(before) >= 2 and before[-2] == "\\" and before[-1] in "nrtbf") or before.endswith(("\n+", "\\n+"))


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NAME_CHARS = _WORD_CHARS | {"-"}
_TOKEN_START_EXCLUDED = _NAME_CHARS | set("./+%\\")


def _word_start(literal: str) -> str:
    """`literal` not preceded by a word character, written literal-first for speed.

    A JSON escape right before it counts as a boundary: in serialized transcripts a line such
    as `Authorization: ...` after a newline reads `\\nAuthorization: ...`, and the `n` of the
    escape must not hide it."""
    escaped = re.escape(literal)
    return literal + r"(?:(?<![A-Za-z0-9_]" + escaped + r")|(?<=\\[nrtbf]" + escaped + "))"


# ---- how a value looks ------------------------------------------------------------------------

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _entropy(value: str) -> float:
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
            and _entropy(run) >= entropy_floor
            and (digits > 0 or len(run) >= 20)
        )
    # One case only (or no letters): one long run, dense in digits, with letters and digits
    # interleaved (`errpep484585container` has one block of digits).
    run = max(runs, key=len)
    digits = sum(char.isdigit() for char in run)
    switches = sum(1 for a, b in zip(run, run[1:]) if a.isdigit() != b.isdigit())
    return len(run) >= 16 and len(run) * 0.15 <= digits < len(run) and switches >= 4 and _entropy(run) >= 3.2


# ---- the rule table ---------------------------------------------------------------------------

# A replacement is a sequence of parts: an int keeps that group of the match, a str is inserted.
_Template = tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: str
    template: _Template
    # Literals (lower case); the rule only runs when one of them occurs in the lowered text.
    # Empty: always runs.
    hints: tuple[str, ...]
    case_insensitive: bool = False
    # Called with the match (in the original text); the match is redacted only when it says so.
    accept: Callable[[re.Match[str], str], bool] | None = None
    # Instead of template and accept: the span to redact inside the match, or None.
    locate: Callable[[re.Match[str], str], tuple[int, int] | None] | None = None
    # Characters that must not come right before the match (checked in Python: a look-behind
    # at the start of a pattern costs a check at every position of the text).
    boundary: frozenset[str] | None = None
    # Where in the text a match can start (every match starts at one of these positions,
    # ascending): the regex is then tried there only, instead of at every position.
    starts: Callable[[str], Iterator[int]] | None = None


def _value_looks_random(match: re.Match[str], text: str) -> bool:
    start, end = match.span("value")
    return looks_random(text[start:end])


_TOKEN_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]{0,24}[_\-.]")
_UPPER_OR_DIGIT = re.compile(r"[0-9A-Z]")


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
    return (start, end) if _token_looks_random(text[start:end]) else None


def _token_looks_random(token: str) -> bool:
    """A prefix of letters and digits, a separator, then a random body of 16+ characters."""
    lead = _TOKEN_PREFIX.match(token)
    if lead is None or len(token) - lead.end() < 16 or not _UPPER_OR_DIGIT.search(token, lead.end()):
        return False
    prefix = token[: lead.end() - 1]
    if prefix.lower() in _HASH_NAMES:
        return False
    # Long hex after a prefix is a token only after `_` (shpat_, sbp_, dop_v1_) or an upper-case
    # prefix (PMAK-): content hashes are written `sha256-`, `pip-`, `build-`, `Linux-pip-`.
    tail = re.match(r"(?:(?:[A-Za-z]+|v\d+)[_\-.])*", token)
    hex_tail = token[tail.end() :]
    if hex_tail and all(char in _HEX_DIGITS for char in re.sub(r"[-_.]", "", hex_tail)):
        separator = token[tail.end() - 1] if tail.end() else ""
        if separator != "_" and not prefix.isupper():
            return False
        return looks_random(hex_tail)
    return looks_random(token[len(prefix) + 1 :])


def _user_part_looks_random(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    return looks_random(value) or _token_looks_random(value)


def _session_cookie_name(match: re.Match[str], text: str) -> bool:
    """`sessionid=`, `_gh_sess=`, `connect.sid=`, `JSESSIONID=`, `PHPSESSID=`, but not
    `consider=` or `inside=`: the word starts the name or follows `_`, `.`, `-`, `j` or `php`.
    Session values are random; `session=session` in code is not one."""
    start = match.start()
    for lead in ("", "j", "php", "asp.net_"):
        at = start - len(lead)
        if at >= 0 and text[at:start].lower() == lead and _at_boundary(text, at, _WORD_CHARS - {"_"}):
            return _value_looks_random(match, text)
    return False


_CODE_VALUE = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(?:\(.*|[,)].*)?")


def _not_code(match: re.Match[str], text: str) -> bool:
    """`password=password,` and `auth_token=self.token)` are keyword arguments in code, not
    credentials: an identifier (or call) followed by `,` or `)`, or None / True / False."""
    value = text[match.start("value") : match.end("value")]
    if value in ("None", "True", "False", "null"):
        return False
    return not (_CODE_VALUE.fullmatch(value) and (value.endswith((",", ")")) or "(" in value or text[match.end("value") : match.end("value") + 1] in (",", ")")))


def _not_an_identifier(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    return not re.fullmatch(r"[0-9a-fA-F\-]{36}|\d+|true|false|null|none", value, re.IGNORECASE)


_HASH_NAMES = frozenset(
    {"sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake3", "crc32", "h1", "sum", "hash", "digest"}
)

_SECRET_WORDS = (
    r"password|passwd|pass|pwd|secret|token|api[_\-]?key|apikey|secret[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|auth|credentials?"
)

_RULES_SPEC: tuple[_Rule, ...] = (
    # --- 1. Codex's four rules (spec 1.9), same order and replacements. ---------------------
    _Rule(
        "openai_api_key",
        r"sk-[A-Za-z0-9]{20,}",
        (REDACTED,),
        ("sk-",),
    ),
    _Rule(
        "aws_access_key_id",
        _word_start("AKIA") + r"[0-9A-Z]{16}\b",
        (REDACTED,),
        ("akia",),
    ),
    _Rule(
        "bearer_token",
        _word_start("bearer") + r"\s+[a-z0-9._\-]{16,}",
        ("Bearer ", REDACTED),
        ("bearer",),
        case_insensitive=True,
    ),
    _Rule(
        "secret_assignment",
        r"("
        + "|".join(
            _word_start(word) for word in ("api_key", "api-key", "apikey", "token", "secret", "password")
        )
        + r")(\s*[:=]\s*)([\"']?)"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, 2, 3, REDACTED),
        ("api", "token", "secret", "password"),
        case_insensitive=True,
    ),
    # --- 2. Known shapes. ------------------------------------------------------------------
    _Rule(
        # Whole PEM / PGP blocks, also with JSON-escaped newlines. The body class has no quote,
        # so a block can never run across JSON strings.
        "private_key_block",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)"
        r"[A-Za-z0-9+/=\s\\:,.\-]{0,20000}?"
        r"(-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)",
        (1, REDACTED, 2),
        ("private key",),
    ),
    _Rule(
        # A key block cut short (e.g. by output truncation): redact what follows the header.
        "private_key_unterminated",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)"
        + _NOT_REDACTED
        + r"[A-Za-z0-9+/=\s\\:.\-]{64,}",
        (1, REDACTED),
        ("private key",),
    ),
    _Rule(
        "putty_private_key",
        r"(Private-Lines: ?\d{1,4})" + _NOT_REDACTED + r"[A-Za-z0-9+/=\s\\]{16,20000}",
        (1, REDACTED),
        ("private-lines",),
    ),
    _Rule(
        "age_secret_key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        (REDACTED,),
        ("age-secret-key-1",),
    ),
    _Rule(
        # Project / service-account / Anthropic keys: `sk-` followed by dashes or underscores.
        # The left boundary, the length and the required digit keep slugs such as
        # `disk-usage-report` or `sk-learn` intact.
        "dashed_sk_key",
        r"sk-(?:(?<![A-Za-z0-9_\-]sk-)|(?<=\\[nrtbf]sk-))(?=[A-Za-z_\-]{0,300}[0-9])[A-Za-z0-9_\-]{32,}",
        (REDACTED,),
        ("sk-",),
    ),
    _Rule(
        "github_token",
        r"(?:"
        + _word_start("gh")
        + r"[pousr]_[A-Za-z0-9]{30,255}|"
        + _word_start("github_pat_")
        + r"[A-Za-z0-9_]{22,255})\b",
        (REDACTED,),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Rule(
        # Slack bot, user and app-level tokens (detect-secrets' pattern stops at upper case).
        "slack_token",
        r"(?:"
        + _word_start("xox")
        + r"[abposr]|"
        + _word_start("xapp")
        + r")-[A-Za-z0-9][A-Za-z0-9\-]{9,250}",
        (REDACTED,),
        ("xox", "xapp-"),
    ),
    _Rule(
        "slack_webhook",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]{16,300}",
        (1, REDACTED),
        ("hooks.slack.com",),
    ),
    _Rule(
        "discord_webhook",
        r"(discord(?:app)?\.com/api/webhooks/\d{5,30}/)[A-Za-z0-9_\-]{16,300}",
        (1, REDACTED),
        ("/api/webhooks/",),
    ),
    _Rule(
        "google_api_key",
        r"AIza(?:(?<![A-Za-z0-9_\-]AIza)|(?<=\\[nrtbf]AIza))[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])",
        (REDACTED,),
        ("aiza",),
    ),
    _Rule(
        "stripe_key",
        # Secret and restricted keys (live and test) and live publishable keys.
        r"[srp]k_(?:live|test)_(?<![A-Za-z0-9_][srp]k_live_)(?<![A-Za-z0-9_][srp]k_test_)"
        r"(?<!pk_test_)[0-9A-Za-z]{16,255}",
        (REDACTED,),
        ("_live_", "_test_"),
    ),
    _Rule(
        "jwt",
        _word_start("eyJ") + r"[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,4096}",
        (REDACTED,),
        ("eyj",),
    ),
    _Rule(
        # scheme://user:password@host -> scheme, user and host kept, password redacted.
        "url_password",
        r"(://(?<=[a-z0-9+.\-]://)[^\s:/?#@\"'\\\[\]]{0,128}:)"
        + r"(?!\[(?:REDACTED_SECRET|redacted_secret)\]@)"
        + r"[^\s/?#@\"'\\]{1,256}(?=@)",
        (1, REDACTED),
        ("://",),
        case_insensitive=True,
    ),
    _Rule(
        # Any scheme (Basic, Token, Bearer, Digest, ...) or a bare credential. The optional
        # scheme is atomic so that `Bearer [REDACTED_SECRET]` cannot be re-read as a bare
        # credential "Bearer".
        "authorization_header",
        r"("
        + _word_start("authorization")
        + _QUOTE
        + r"?[ \t]{0,4}[:=][ \t]{0,4}"
        + _QUOTE
        + r"?(?>(?:[a-z][a-z0-9_\-]{0,30}[ \t]{1,4})?))"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, REDACTED),
        ("authorization",),
        case_insensitive=True,
    ),
    _Rule(
        # X-API-Key: ..., X-Auth-Token: ..., Api-Token ...: headers whose name says secret.
        "secret_header",
        r"((?:api-?key|auth-?token|access-?token|api-?token|session-?token|secret)"
        + _QUOTE
        + r"?[ \t]{0,4}:[ \t]{0,4}"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + r"(?P<value>"
        + _VALUE
        + r"{16,4096})",
        (1, REDACTED),
        ("key", "token", "secret"),
        case_insensitive=True,
        accept=_value_looks_random,
    ),
    _Rule(
        "aws_secret_access_key",
        r"((?:"
        + _word_start("aws")
        + r")[_\-]?(?:secret[_\-]?access[_\-]?key|secret[_\-]?key|session[_\-]?token)"
        r"(?:"
        + _QUOTE
        + r"?\s{0,4}[:=]\s{0,4})"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + r"[A-Za-z0-9/+=]{16,2048}",
        (1, REDACTED),
        ("aws",),
        case_insensitive=True,
    ),
    _Rule(
        # "password": "...", \"api_key\":\"...\", 'client_secret': '...', "auth": "...": a quoted
        # key whose name ends in a secret word, a colon, and a quoted value.
        "json_secret_field",
        r"((?:password|passwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
        r"|credentials?|auth|sessionid|session_key)"
        + _QUOTE
        + r"\s{0,4}:\s{0,4}"
        + _QUOTE
        + r")"
        + _NOT_REDACTED
        + r"[^\"'\\\r\n]{8,4096}",
        (1, REDACTED),
        ("password", "passwd", "secret", "token", "key", "credential", "auth", "session"),
        case_insensitive=True,
    ),
    _Rule(
        # Password=...; Pwd=...; AccountKey=...; SharedAccessKey=...; ?sig=...&: connection
        # strings, signed URLs and query parameters that carry credentials.
        "credential_parameter",
        r"((?:pwd|password|accountkey|sharedaccesskey|sharedaccesssignature|sig|signature"
        r"|x-amz-signature|x-amz-security-token|x-goog-signature|access_token|refresh_token|id_token"
        r"|client_secret|auth_token|session_token|apikey|api_key)=)"
        + _NOT_REDACTED
        + r"(?P<value>[^\s&;\"'\\#]{3,4096})",
        (1, REDACTED),
        ("pwd=", "password=", "key=", "sig", "signature=", "token=", "secret="),
        case_insensitive=True,
        accept=_not_code,
        boundary=_NAME_CHARS,
    ),
    _Rule(
        # DB_PASSWORD=..., DB_PASS=..., GITHUB_TOKEN: ..., client_secret = ...: a name that ends
        # in a secret word after `_` or `-`, then an assignment.
        "named_secret_assignment",
        r"([_\-](?<=[a-z0-9][_\-])(?:" + _SECRET_WORDS + r")"
        + _QUOTE
        + r"?\s{0,4}[:=]\s{0,4}"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, REDACTED),
        ("pass", "pwd", "secret", "token", "key", "auth", "credential"),
        case_insensitive=True,
    ),
    _Rule(
        # PGPASSWORD=..., newPassword: ..., passwd = ...: the word at the end of a longer name.
        "password_assignment",
        r"((?:password|passwd)"
        + _QUOTE
        + r"?\s{0,4}[:=]\s{0,4}"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, REDACTED),
        ("passw",),
        case_insensitive=True,
    ),
    _Rule(
        # pass = ..., pwd: ...: the short forms as a name of their own (not OLDPWD, not bypass).
        "short_password_assignment",
        r"((?:pass|pwd)"
        + _QUOTE
        + r"?\s{0,4}[:=]\s{0,4}"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, REDACTED),
        ("pass", "pwd"),
        case_insensitive=True,
        boundary=_NAME_CHARS,
    ),
    _Rule(
        # JWT_SIGNING_KEY=..., RAILS_MASTER_KEY=..., MAILCHIMP_KEY=...: names ending in `_key`
        # say secret only when the value is random (SORT_KEY=created_at is not).
        "named_key_assignment",
        r"([_\-](?<=[a-z0-9][_\-])key"
        + _QUOTE
        + r"?\s{0,4}[:=]\s{0,4}"
        + _QUOTE
        + r"?)"
        + _NOT_REDACTED
        + r"(?:base64:)?(?P<value>"
        + _VALUE
        + r"{16,4096})",
        (1, REDACTED),
        ("key",),
        case_insensitive=True,
        accept=_value_looks_random,
    ),
    _Rule(
        # %22api_key%22%3A%22...%22 and password%3D...: the same fields URL-encoded.
        "url_encoded_secret",
        r"((?:" + _SECRET_WORDS + r")(?:%22)?(?:%3a|%3d)(?:%20)*(?:%22)?)"
        + _NOT_REDACTED
        + r"[^\s&\"'\\%]{4,4096}",
        (1, REDACTED),
        ("%3a", "%3d"),
        case_insensitive=True,
    ),
    _Rule(
        # sessionid=..., PHPSESSID=..., JSESSIONID=..., connect.sid=..., _gh_sess=...: session
        # cookies in headers, curl -b and logs.
        "session_cookie",
        r"((?:sess|sessid|sessionid|session|session_id|sid|remember_token|remember_me)=)"
        + _NOT_REDACTED
        + r"(?P<value>[^\s;,\"'\\]{8,4096})",
        (1, REDACTED),
        ("sess", "sid=", "remember"),
        case_insensitive=True,
        accept=_session_cookie_name,
    ),
    _Rule(
        # curl -u user:password, --user "user:password", --proxy-user ...: user kept.
        "cli_user_password",
        r"((?:-u|--user|--proxy-user|-U)(?:\s{1,4}|=)" + _QUOTE + r"?[^\s:\"'\\]{1,64}:)"
        + _NOT_REDACTED
        + r"(?P<value>[^\s\"'\\]{1,512})",
        (1, REDACTED),
        ("-u", "--user"),
        accept=_not_an_identifier,
        boundary=_NAME_CHARS,
    ),
    _Rule(
        # --password hunter2, --token=..., --api-key ..., -Dsonar.token=...: flags named secret.
        "cli_secret_flag",
        r"((?:--?|-D[a-z.]{0,40}\.)(?:password|passwd|pass|pwd|secret|token|api-key|api_key|apikey"
        r"|auth-token|access-token|client-secret|secret-key|private-key|key-password|with-token)"
        r"(?:=|\s{1,4})" + _QUOTE + r"?)"
        + _NOT_REDACTED
        + r"(?![\-<$])"
        + _VALUE
        + r"{3,512}",
        (1, REDACTED),
        ("pass", "pwd", "secret", "token", "key"),
        case_insensitive=True,
        boundary=_NAME_CHARS,
    ),
    _Rule(
        # mysql -psecret, sshpass -p secret, docker login -p ..., redis-cli -a ..., twine -p ...:
        # short flags that mean "password" for the command they follow (same line).
        "cli_short_password_flag",
        r"((?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump|sshpass|login|upload|redis-cli"
        r"|mongo|mongosh)\b[^\n;|&]{0,300}?\s-[pa](?:\s{1,4})?" + _QUOTE + r"?)"
        + _NOT_REDACTED
        + r"(?![\-<$])"
        + _VALUE
        + r"{3,512}",
        (1, REDACTED),
        ("mysql", "mariadb", "sshpass", "login", "upload", "redis-cli", "mongo"),
        boundary=_NAME_CHARS,
    ),
    _Rule(
        # htpasswd -b file user password; .netrc "login user password secret".
        "positional_password",
        r"((?:htpasswd\s{1,4}(?>(?:-[a-z]{1,6}\s{1,4})+)[^\s\-]\S{0,255}\s{1,4}\S{1,64}|login\s{1,4}\S{1,64}"
        r"\s{1,4}password)\s{1,4})"
        + _NOT_REDACTED
        + _VALUE
        + r"{3,512}",
        (1, REDACTED),
        ("htpasswd", "password"),
    ),
)

# ---- 3. detect-secrets ----------------------------------------------------------------------

# Plugins whose denylist is not used, and why.
_SKIPPED_PLUGINS = {
    "IPPublicDetector": "an IP address is not a credential; transcripts are full of them",
    "PrivateKeyDetector": "matches the header line only; the key-block rules above redact the body",
    "CloudantDetector": "keyword-style `name = value` regexes for one IBM service, 12-20 MB/s each on "
    "transcript text (benchmarks/secret_redaction.py); the name-based assignment rules cover that shape",
    "IbmCloudIamDetector": "same as CloudantDetector (13 MB/s)",
    "IbmCosHmacDetector": "same as CloudantDetector",
    "SoftlayerDetector": "same as CloudantDetector (45 MB/s)",
    "KeywordDetector": "no denylist; its keyword list feeds nothing here (the assignment rules cover it)",
    "Base64HighEntropyString": "no denylist; its fixed 4.5-bit limit misses every token under ~24 "
    "characters and flags base64 test fixtures (see benchmarks/README.md)",
    "HexHighEntropyString": "no denylist; its 3.0-bit limit flags every commit SHA and sha256",
}

# Regexes (on the original text) that every match of a plugin must contain, for speed only: the
# plugin runs only on texts where its gate matches. A plugin not listed always runs.
_DETECTOR_GATES = {
    "ArtifactoryDetector": r"AKC|AP[0-9A-F]",
    "DiscordBotTokenDetector": r"\.[a-zA-Z0-9_\-]{6}\.[a-zA-Z0-9_\-]{27}",
    "TelegramBotTokenDetector": r":[0-9A-Za-z_\-]{35}",
}

# Literal hints (lower case) per plugin, for speed only: a plugin not listed always runs.
_DETECTOR_HINTS = {
    "ArtifactoryDetector": ("akc", "ap"),
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": ("cl",),
    "DiscordBotTokenDetector": (".",),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": (
        "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-",
    ),
    "IbmCloudIamDetector": ("ibm", "iam", "cloud", "api"),
    "IbmCosHmacDetector": ("secret",),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": ("_authtoken",),
    "OpenAIDetector": ("t3blbkfj",),
    "PypiTokenDetector": ("pypi-",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack"),
    "SoftlayerDetector": ("softlayer", "sl"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": (":",),
    "TwilioKeyDetector": ("ac", "sk"),
}

# ---- 4. generic tokens ----------------------------------------------------------------------

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


_GENERIC_RULES: tuple[_Rule, ...] = (
    _Rule(
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
    _Rule(
        # https://<token>@github.com, https://<token>:x-oauth-basic@...: a random user part.
        "url_token_user",
        r"(://)(?P<value>[A-Za-z0-9_\-.~%]{16,256})(?=@|:[^\s/?#@\"'\\]{0,256}@)",
        (1, REDACTED),
        ("://",),
        accept=_user_part_looks_random,
    ),
    _Rule(
        # The rest of a key the terminal wrapped onto the next line.
        "wrapped_key_continuation",
        r"(\[REDACTED_SECRET\]" + _NEWLINE + r"[+]?)(?P<value>[A-Za-z0-9+/=_\-]{8,1000})(?=[\s\"'\\]|$)",
        (1, REDACTED),
        ("[redacted_secret]",),
        accept=_value_looks_random,
    ),
)


# ---- compiled rules ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _CompiledRule:
    name: str
    public: re.Pattern[str]  # matches the original text
    fast: re.Pattern[str]  # matches the lower-cased text when case-insensitive, else = public
    template: _Template
    hints: tuple[str, ...]
    case_insensitive: bool
    accept: Callable[[re.Match[str], str], bool] | None
    widen: bool
    locate: Callable[[re.Match[str], str], tuple[int, int] | None] | None
    boundary: frozenset[str] | None
    gate: re.Pattern[str] | None = None
    starts: Callable[[str], Iterator[int]] | None = None
    # More regexes of the same rule (a detect-secrets plugin has several): one hint check.
    extra: tuple[re.Pattern[str], ...] = ()

    def edits(self, text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, replacement) of every secret this rule finds in `text`, left to right."""
        if self.extra:
            # Several regexes: their finds merged left to right.
            found = sorted(edit for regex in (self.public, *self.extra) for edit in self._edits(regex, text, text))
            yield from found
            return
        if self.case_insensitive and len(lowered) == len(text):
            haystack, regex = lowered, self.fast
        else:
            # Unicode lower-casing changed the length (e.g. "İ"): positions would not carry over.
            haystack, regex = text, self.public
        yield from self._edits(regex, text, haystack)

    def _matches(self, regex: re.Pattern[str], haystack: str) -> Iterator[re.Match[str]]:
        """What `regex.finditer(haystack)` finds; tried at `starts` only when the rule has them
        (matches cannot overlap: a match at each start not inside the previous one)."""
        if self.starts is None:
            yield from regex.finditer(haystack)
            return
        last_end = 0
        for start in self.starts(haystack):
            if start < last_end:
                continue
            match = regex.match(haystack, start)
            if match is not None:
                last_end = match.end()
                yield match

    def _edits(self, regex: re.Pattern[str], text: str, haystack: str) -> Iterator[tuple[int, int, str]]:
        for match in self._matches(regex, haystack):
            if self.boundary is not None and not _at_boundary(text, match.start(), self.boundary):
                continue
            if self.accept is not None and not self.accept(match, text):
                continue
            if self.widen or self.locate is not None:
                span = self.locate(match, text) if self.locate is not None else _widened_span(match, text)
                if span is not None:
                    yield span[0], span[1], REDACTED
                continue
            yield match.start(), match.end(), _render(self.template, text, match)


def _compile(rule: _Rule) -> _CompiledRule:
    flags = re.IGNORECASE if rule.case_insensitive else 0
    return _CompiledRule(
        name=rule.name,
        public=re.compile(rule.pattern, flags),
        fast=re.compile(rule.pattern),
        template=rule.template,
        hints=rule.hints,
        case_insensitive=rule.case_insensitive,
        accept=rule.accept,
        widen=False,
        locate=rule.locate,
        boundary=rule.boundary,
        starts=rule.starts,
    )


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-]*")
_VALUE_END = re.compile(r"[\s\"'\\]")


def _widened_span(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The credential a detect-secrets match points at: its one capturing group when that is
    the value (8+ characters; a short group is a prefix such as `ghp`), else the whole match;
    trimmed of the delimiters some plugins include, cut at the end of the value, and widened to
    the end of the token (plugins match a fixed length or stop at upper case)."""
    start, end = match.span()
    if match.re.groups >= 1:
        group_start, group_end = match.span(1)
        if group_start >= 0 and group_end - group_start >= 8:
            start, end = group_start, group_end
    while start < end and text[start] in " \t\r\n=:\"'":
        start += 1
    stop = _VALUE_END.search(text, start, end)
    if stop is not None:
        end = stop.start()
    end = _TOKEN_CHARS.match(text, end).end()
    if end - start < 8 or text.startswith(REDACTED, start):
        return None
    return start, end


def _detector_rules() -> list[_CompiledRule]:
    """One rule per regex of every installed detect-secrets plugin (except `_SKIPPED_PLUGINS`)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    rules = []
    for plugin_class in get_mapping_from_secret_type_to_class().values():
        name = plugin_class.__name__
        if name in _SKIPPED_PLUGINS:
            continue
        regexes = tuple(plugin_class().denylist)
        if regexes:
            # The plugin's own flags stay with its regexes: they run on the original text.
            rules.append(
                _CompiledRule(
                    name=f"detect_secrets.{name}",
                    public=regexes[0],
                    fast=regexes[0],
                    extra=regexes[1:],
                    template=(REDACTED,),
                    hints=_DETECTOR_HINTS.get(name, ()),
                    case_insensitive=False,
                    accept=None,
                    widen=True,
                    locate=None,
                    boundary=None,
                    gate=re.compile(_DETECTOR_GATES[name]) if name in _DETECTOR_GATES else None,
                )
            )
    return rules


@cache
def _rules() -> tuple[_CompiledRule, ...]:
    """The whole table, compiled on first use (keeps `import codex_memories.redact` cheap)."""
    own = [_compile(rule) for rule in _RULES_SPEC]
    generic = [_compile(rule) for rule in _GENERIC_RULES]
    return (*own, *_detector_rules(), *generic)


@dataclass(frozen=True, slots=True)
class RulePattern:
    """One rule as `SECRET_PATTERNS` shows it: `search(text)` answers like `re.Pattern.search`
    (a match or None) but applies the rule's whole logic, value checks included."""

    rule: _CompiledRule

    @property
    def pattern(self) -> str:
        return self.rule.public.pattern

    def search(self, text: str) -> tuple[int, int, str] | None:
        return next(self.rule.edits(text, text.lower()), None) if _applies(self.rule, text, text.lower()) else None


def __getattr__(name: str) -> Any:
    # SECRET_PATTERNS is built lazily, like the rules it lists.
    if name == "SECRET_PATTERNS":
        return tuple((rule.name, RulePattern(rule)) for rule in _rules())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _render(template: _Template, text: str, match: re.Match[str]) -> str:
    # Groups are read from `text` by span: for case-insensitive rules the match was found in the
    # lower-cased copy, but the kept parts must keep their original case.
    parts = []
    for part in template:
        if isinstance(part, int):
            start, end = match.span(part)
            parts.append(text[start:end] if start >= 0 else "")
        else:
            parts.append(part)
    return "".join(parts)


def _apply(rule: _CompiledRule, text: str, lowered: str) -> str:
    pieces: list[str] = []
    last = 0
    for start, end, replacement in rule.edits(text, lowered):
        if start < last:
            continue
        pieces.append(text[last:start])
        pieces.append(replacement)
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


_MARKER_LOWER = REDACTED.lower()


def _applies(rule: _CompiledRule, text: str, lowered: str, present: frozenset[str] | None = None) -> bool:
    """Whether `rule` can match: one of its hints occurs and its gate matches.

    `present` is the set of hints that occur in the text as it was before any replacement
    (`_present_hints`). That is safe: a replacement only removes text and inserts the marker,
    so a hint absent before can only appear inside the marker, which no rule matches
    (`_NOT_REDACTED`); only the marker itself, as a hint, is looked up in the current text."""
    if rule.hints:
        for hint in rule.hints:
            if present is None or hint == _MARKER_LOWER:
                found = hint in lowered
            else:
                found = hint in present
            if found:
                break
        else:
            return False
    return rule.gate is None or rule.gate.search(text) is not None


# Hints this short (`sk`, `-u`, `.`) occur all over ordinary text: a substring search finds
# them within the first few characters, where the automaton would report every occurrence.
_SHORT_HINT_CHARS = 2


@cache
def _hint_search() -> tuple[ahocorasick.Automaton, tuple[str, ...]]:
    """(an Aho-Corasick automaton of the rules' longer hints, the short ones), the marker aside."""
    hints = {hint for rule in _rules() for hint in rule.hints if hint != _MARKER_LOWER}
    automaton = ahocorasick.Automaton()
    for hint in hints:
        if len(hint) > _SHORT_HINT_CHARS:
            automaton.add_word(hint, hint)
    automaton.make_automaton()
    return automaton, tuple(sorted(hint for hint in hints if len(hint) <= _SHORT_HINT_CHARS))


def _present_hints(lowered: str) -> frozenset[str]:
    """The rules' hints that occur in `lowered`: the same answer as `hint in lowered` for each
    hint (the automaton reports every occurrence, overlapping ones too), in one pass over the
    text instead of one substring search per hint (benchmarks/README.md, "Ingest")."""
    automaton, short = _hint_search()
    found = {hint for _end, hint in automaton.iter(lowered)}
    found.update(hint for hint in short if hint in lowered)
    return frozenset(found)


@cache
def _screen() -> SecretScreen | None:
    """The Hyperscan screen over the whole table (None without Hyperscan), built on first use."""
    screen_rules = []
    for rule in _rules():
        if rule.widen:  # a detect-secrets rule: its own regexes and flags, over the original text
            screen_rules.append(ScreenRule(patterns=(rule.public, *rule.extra), hints=rule.hints))
        elif rule.case_insensitive:  # run as `fast` over the lowered text (`_CompiledRule.edits`)
            screen_rules.append(ScreenRule(lowered_patterns=(rule.fast,), hints=rule.hints, screened=rule.starts is None))
        else:
            # Rules tried at `starts` only already skip most of the text, and their patterns
            # (long runs of a broad class) cost the screen more than they save.
            screen_rules.append(ScreenRule(patterns=(rule.public,), hints=rule.hints, screened=rule.starts is None))
    return build_screen(screen_rules)


# Building the screen costs about 0.6 s of CPU, what it saves on about 9 MB of text (0.064 s per
# MB on transcripts, benchmarks/README.md, "Ingest"). A process redacts this much without it
# first, so a hook, a note or a one-off command never pays the build, unless it announced bulk
# work (`prepare_screen`: phase 1's transcript worker does, off the claim path).
_SCREEN_AFTER_CHARS = 8_000_000
# Characters checked without the screen so far; racing threads can only delay the build.
_chars_unscreened = 0


def prepare_screen() -> None:
    """Build the screen now and use it from the next text on: the caller redacts in bulk."""
    global _chars_unscreened
    _screen()
    _chars_unscreened = _SCREEN_AFTER_CHARS


def _candidates(text: str, lowered: str) -> set[int] | None:
    """Indices (into `_rules()`) of the rules that can match `text`, hints and gates checked;
    None when the screen cannot tell or is not built yet (every rule is then checked as
    `_applies` does)."""
    global _chars_unscreened
    if _chars_unscreened < _SCREEN_AFTER_CHARS:
        _chars_unscreened += len(text)
        return None
    screen = _screen()
    candidates = None if screen is None else screen.candidates(text, lowered)
    if candidates is None:
        return None
    rules = _rules()
    return {index for index in candidates if rules[index].gate is None or rules[index].gate.search(text) is not None}


def redact_secrets(text: str) -> str:
    """Replace every recognised secret in `text` with `REDACTED` (rules applied in table order)."""
    if not text:
        return text
    lowered = text.lower()
    candidates = _candidates(text, lowered)
    # Without the screen, the hints that occur are found once, in the text as given (see `_applies`).
    present = _present_hints(lowered) if candidates is None else None
    for index, rule in enumerate(_rules()):
        if candidates is not None:
            if index not in candidates:
                continue
        elif not _applies(rule, text, lowered, present):
            continue
        replaced = _apply(rule, text, lowered)
        if replaced != text:
            text = replaced
            lowered = text.lower()
            if candidates is not None:
                # A replacement can make a later rule match (the marker starts
                # `wrapped_key_continuation`): screen the new text.
                candidates = _candidates(text, lowered)
    return text


def find_secret_kinds(text: str) -> list[str]:
    """Names of the rules that still find an unredacted secret in `text` (table order)."""
    if not text:
        return []
    lowered = text.lower()
    candidates = _candidates(text, lowered)
    return [
        rule.name
        for index, rule in enumerate(_rules())
        if (index in candidates if candidates is not None else _applies(rule, text, lowered))
        and next(rule.edits(text, lowered), None) is not None
    ]
