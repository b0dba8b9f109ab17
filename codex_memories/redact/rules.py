"""The rule record, the pieces rules are written with, and the rules for formats we know.

Contract: data only (plus the small checks a rule calls on its match); `codex_memories.redact.engine`
compiles and runs them. `RULES` is ordered: Codex's four rules (spec 1.9) first, in its order and
with its replacements, then the formats whose exact shape we know and that need more than a
token match (key blocks, URL passwords, headers, JSON fields, assignments whose name says
secret, connection strings, cookies, provider tokens the detector misses).

Every rule works on JSON-serialised text (phase 1 redacts the JSON of transcript items, whose tool
outputs often contain JSON again). One deliberate difference from Codex: a value stops at a
backslash, so the escaped quote (`\\"`) or newline (`\\n`) that ends a value inside a JSON string
is never replaced and the JSON stays well formed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.names import STRONG_WORDS, words_pattern
from codex_memories.redact.values import is_indirect, is_placeholder, looks_random

REDACTED = "[REDACTED_SECRET]"

# Values never start with an existing marker: keeps every rule idempotent and lets
# `find_secret_kinds` run over redacted text without false alarms. Lower case because the
# case-insensitive rules are also run over lower-cased text.
NOT_REDACTED = r"(?!\[(?:REDACTED_SECRET|redacted_secret)\])"
# Assignment values: no whitespace, no quotes, no backslash (see module docstring).
VALUE = r"[^\s\"'\\]"
# A quote as it appears in plain text or inside (possibly nested) JSON strings.
QUOTE = r"(?:\\{0,31}[\"'])"
# An assignment as config files, code and JSON write it: an optional closing quote, `:` or `=`,
# an optional opening quote (`"password": "`, `DB_PASS = '`, `token:`).
ASSIGNED = QUOTE + r"?\s{0,4}[:=]\s{0,4}" + QUOTE + r"?"
# A line break as it appears in plain text or inside (possibly nested) JSON strings.
NEWLINE = r"(?:\r?\n|(?:\\{1,31}r)?\\{1,31}n)"
# A shell line continuation (a backslash, then a line break) as it appears in plain text or in
# JSON text escaped once, twice or three times: 3, 6 or 12 backslashes before the `n`, where a
# plain escaped line break has 1, 2, 4 or 8, so the count tells them apart. Written right after
# a character that is not a backslash (a blank, a name, a value), where the count is exact.
CONTINUATION = r"(?:\\\r?\n|\\{3}n|\\{6}n|\\{12}n)"
# One character of the same line, in plain text or inside JSON strings: an escape that is not a
# line break (`\"`, `\t`) stays on the line, an escaped `n` ends it.
SAME_LINE_CHAR = r"(?:[^\n\\]|\\+[^n\\])"
# What comes between the words that announce a value and the value: a colon or a line break,
# then blanks, line breaks and a patch's `+` (`setup key:\n+abcd efgh ...`).
ANNOUNCED = r"(?::|" + NEWLINE + r")(?:\s|" + NEWLINE + r"\+?)*"
# After a line's last word: blanks, then a line break, the text's end or a JSON string's end.
LINE_END = r"(?=[ \t]*(?:" + NEWLINE + r"|$|\\*\"))"


def at_boundary(text: str, position: int, excluded: frozenset[str]) -> bool:
    """True when `text[position - 1]` is not in `excluded`. A JSON escape (`\\n`, `\\t`, ...)
    right before counts as a boundary (see `word_start`), and so does the `+` that starts an
    added line of a patch."""
    if position == 0 or text[position - 1] not in excluded:
        return True
    before = text[max(0, position - 3) : position]
    return (len(before) >= 2 and before[-2] == "\\" and before[-1] in "nrtbf") or before.endswith(("\n+", "\\n+"))


WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
NAME_CHARS = WORD_CHARS | {"-"}


def word_start(literal: str) -> str:
    """`literal` not preceded by a word character, written literal-first for speed.

    A JSON escape right before it counts as a boundary: in serialized transcripts a line such
    as `Authorization: ...` after a newline reads `\\nAuthorization: ...`, and the `n` of the
    escape must not hide it."""
    escaped = re.escape(literal)
    return literal + r"(?:(?<![A-Za-z0-9_]" + escaped + r")|(?<=\\[nrtbf]" + escaped + "))"



# A replacement is a sequence of parts: an int keeps that group of the match, a str is inserted.
Template = tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: str
    template: Template
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
    # Instead of template, accept and locate: every span to redact that the match stands for (a
    # table's header gives the cells of its secret column in the rows below it).
    locate_all: Callable[[re.Match[str], str], list[tuple[int, int]]] | None = None


def value_looks_random(match: re.Match[str], text: str) -> bool:
    start, end = match.span("value")
    return looks_random(text[start:end])



def _session_cookie_name(match: re.Match[str], text: str) -> bool:
    """`sessionid=`, `_gh_sess=`, `connect.sid=`, `JSESSIONID=`, `PHPSESSID=`, but not
    `consider=` or `inside=`: the word starts the name or follows `_`, `.`, `-`, `j` or `php`.
    Session values are random; `session=session` in code is not one."""
    start = match.start()
    for lead in ("", "j", "php", "asp.net_"):
        at = start - len(lead)
        if at >= 0 and text[at:start].lower() == lead and at_boundary(text, at, WORD_CHARS - {"_"}):
            return value_looks_random(match, text)
    return False


_CODE_VALUE = lazy_compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(?:\(.*|[,)].*)?")


def _not_code(match: re.Match[str], text: str) -> bool:
    """`password=password,` and `auth_token=self.token)` are keyword arguments in code, not
    credentials: an identifier (or call) followed by `,` or `)`, or None / True / False."""
    value = text[match.start("value") : match.end("value")]
    if value in ("None", "True", "False", "null"):
        return False
    return not (_CODE_VALUE.fullmatch(value) and (value.endswith((",", ")")) or "(" in value or text[match.end("value") : match.end("value") + 1] in (",", ")")))



def _not_placeholder(match: re.Match[str], text: str) -> bool:
    return not is_placeholder(text[match.start("value") : match.end("value")])


_BASE58 = lazy_compile(r"[1-9A-HJ-NP-Za-km-z]+")


def _is_base58(match: re.Match[str], text: str) -> bool:
    """The value, in the original text (the rule matches the lower-cased one), uses only the
    base58 alphabet."""
    return _BASE58.fullmatch(text, match.start("value"), match.end("value")) is not None


def _not_indirect(match: re.Match[str], text: str) -> bool:
    """`passwd: password updated`, `password = ${DB_PASSWORD}`: a value that only names or
    points at the secret (`values.is_indirect`) is left alone."""
    return not is_indirect(text[match.start("value") : match.end("value")])


# Names whose last word says secret (`DB_PASSWORD`, `GITHUB_TOKEN`): the one list, `names.py`.
SECRET_WORDS = words_pattern(STRONG_WORDS)

RULES: tuple[Rule, ...] = (
    # --- 1. Codex's four rules (spec 1.9), same order and replacements. ---------------------
    Rule(
        "openai_api_key",
        r"sk-[A-Za-z0-9]{20,}",
        (REDACTED,),
        ("sk-",),
    ),
    Rule(
        "aws_access_key_id",
        word_start("AKIA") + r"[0-9A-Z]{16}\b",
        (REDACTED,),
        ("akia",),
    ),
    Rule(
        "bearer_token",
        # Codex's `\s+`, plus a line continuation between the word and the token (`Bearer \`).
        word_start("bearer") + r"(?:\s|" + CONTINUATION + r"\+?)+[a-z0-9._\-]{16,}",
        ("Bearer ", REDACTED),
        ("bearer",),
        case_insensitive=True,
    ),
    Rule(
        "secret_assignment",
        r"("
        + "|".join(
            word_start(word) for word in ("api_key", "api-key", "apikey", "token", "secret", "password")
        )
        + r")(\s*[:=]\s*)([\"']?)"
        + NOT_REDACTED
        + r"(?P<value>"
        + VALUE
        + r"{8,})",
        (1, 2, 3, REDACTED),
        ("api", "token", "secret", "password"),
        case_insensitive=True,
        # Unlike Codex: a placeholder (`TOKEN=<your-token>`, `password: ${DB_PASSWORD}`,
        # `********`) is what docs and examples write, not a secret (issue 36).
        accept=_not_placeholder,
    ),
    # --- 2. Known shapes. ------------------------------------------------------------------
    Rule(
        # Whole PEM / PGP blocks, also with JSON-escaped newlines. The body class has no quote,
        # so a block can never run across JSON strings.
        "private_key_block",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)"
        r"[A-Za-z0-9+/=\s\\:,.\-]{0,20000}?"
        r"(-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)",
        (1, REDACTED, 2),
        ("private key",),
    ),
    Rule(
        # A key block cut short (e.g. by output truncation): redact what follows the header.
        "private_key_unterminated",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)"
        + NOT_REDACTED
        + r"[A-Za-z0-9+/=\s\\:.\-]{64,}",
        (1, REDACTED),
        ("private key",),
    ),
    Rule(
        "putty_private_key",
        r"(Private-Lines: ?\d{1,4})" + NOT_REDACTED + r"[A-Za-z0-9+/=\s\\]{16,20000}",
        (1, REDACTED),
        ("private-lines",),
    ),
    Rule(
        "age_secret_key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        (REDACTED,),
        ("age-secret-key-1",),
    ),
    Rule(
        # Project / service-account / Anthropic keys: `sk-` followed by dashes or underscores.
        # The left boundary, the length and the required digit keep slugs such as
        # `disk-usage-report` or `sk-learn` intact.
        "dashed_sk_key",
        r"sk-(?:(?<![A-Za-z0-9_\-]sk-)|(?<=\\[nrtbf]sk-))(?=[A-Za-z_\-]{0,300}[0-9])[A-Za-z0-9_\-]{32,}",
        (REDACTED,),
        ("sk-",),
    ),
    Rule(
        "github_token",
        r"(?:"
        + word_start("gh")
        + r"[pousr]_[A-Za-z0-9]{30,255}|"
        + word_start("github_pat_")
        + r"[A-Za-z0-9_]{22,255})\b",
        (REDACTED,),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(
        # Slack bot, user and app-level tokens (detect-secrets' pattern stops at upper case).
        "slack_token",
        r"(?:"
        + word_start("xox")
        + r"[abposr]|"
        + word_start("xapp")
        + r")-[A-Za-z0-9][A-Za-z0-9\-]{9,250}",
        (REDACTED,),
        ("xox", "xapp-"),
    ),
    Rule(
        "slack_webhook",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]{16,300}",
        (1, REDACTED),
        ("hooks.slack.com",),
    ),
    Rule(
        "discord_webhook",
        r"(discord(?:app)?\.com/api/webhooks/\d{5,30}/)[A-Za-z0-9_\-]{16,300}",
        (1, REDACTED),
        ("/api/webhooks/",),
    ),
    Rule(
        "google_api_key",
        r"AIza(?:(?<![A-Za-z0-9_\-]AIza)|(?<=\\[nrtbf]AIza))[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])",
        (REDACTED,),
        ("aiza",),
    ),
    Rule(
        "stripe_key",
        # Secret and restricted keys (live and test) and live publishable keys.
        r"[srp]k_(?:live|test)_(?<![A-Za-z0-9_][srp]k_live_)(?<![A-Za-z0-9_][srp]k_test_)"
        r"(?<!pk_test_)[0-9A-Za-z]{16,255}",
        (REDACTED,),
        ("_live_", "_test_"),
    ),
    Rule(
        "jwt",
        word_start("eyJ") + r"[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,4096}",
        (REDACTED,),
        ("eyj",),
    ),
    Rule(
        # scheme://user:password@host -> scheme, user and host kept, password redacted.
        "url_password",
        r"(://(?<=[a-z0-9+.\-]://)[^\s:/?#@\"'\\\[\]]{0,128}:)"
        + r"(?!\[(?:REDACTED_SECRET|redacted_secret)\]@)"
        # `#` and `?` belong to the password when an `@` follows (people write them unencoded).
        + r"[^\s/@\"'\\]{1,256}(?=@)",
        (1, REDACTED),
        ("://",),
        case_insensitive=True,
    ),
    Rule(
        # Any scheme (Basic, Token, Bearer, Digest, ...) or a bare credential. The optional
        # scheme is atomic so that `Bearer [REDACTED_SECRET]` cannot be re-read as a bare
        # credential "Bearer".
        "authorization_header",
        r"("
        + word_start("authorization")
        + QUOTE
        + r"?[ \t]{0,4}[:=][ \t]{0,4}"
        + QUOTE
        + r"?(?>(?:[a-z][a-z0-9_\-]{0,30}[ \t]{1,4})?))"
        + NOT_REDACTED
        + VALUE
        + r"{8,}",
        (1, REDACTED),
        ("authorization",),
        case_insensitive=True,
    ),
    Rule(
        # X-API-Key: ..., X-Auth-Token: ..., Api-Token ...: headers whose name says secret.
        "secret_header",
        r"((?:api-?key|auth-?token|access-?token|api-?token|session-?token|secret)"
        + QUOTE
        + r"?[ \t]{0,4}:[ \t]{0,4}"
        + QUOTE
        + r"?)"
        + NOT_REDACTED
        + r"(?P<value>"
        + VALUE
        + r"{16,4096})",
        (1, REDACTED),
        ("key", "token", "secret"),
        case_insensitive=True,
        accept=value_looks_random,
    ),
    Rule(
        "aws_secret_access_key",
        r"((?:"
        + word_start("aws")
        + r")[_\-]?(?:secret[_\-]?access[_\-]?key|secret[_\-]?key|session[_\-]?token)"
        r"(?:"
        + QUOTE
        + r"?\s{0,4}[:=]\s{0,4})"
        + QUOTE
        + r"?)"
        + NOT_REDACTED
        + r"[A-Za-z0-9/+=]{16,2048}",
        (1, REDACTED),
        ("aws",),
        case_insensitive=True,
    ),
    Rule(
        # "password": "...", \"api_key\":\"...\", 'client_secret': '...', "auth": "...": a quoted
        # key whose name ends in a secret word, a colon, and a quoted value.
        "json_secret_field",
        r"((?:password|passwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
        r"|credentials?|auth|sessionid|session_key)"
        + QUOTE
        + r"\s{0,4}:\s{0,4}"
        + QUOTE
        + r")"
        + NOT_REDACTED
        + r"[^\"'\\\r\n]{8,4096}",
        (1, REDACTED),
        ("password", "passwd", "secret", "token", "key", "credential", "auth", "session"),
        case_insensitive=True,
    ),
    Rule(
        # Password=...; Pwd=...; AccountKey=...; SharedAccessKey=...; ?sig=...&: connection
        # strings, signed URLs and query parameters that carry credentials.
        "credential_parameter",
        r"((?:pwd|password|accountkey|sharedaccesskey|sharedaccesssignature|sig|signature"
        r"|x-amz-signature|x-amz-security-token|x-goog-signature|access_token|refresh_token|id_token"
        r"|client_secret|auth_token|session_token|apikey|api_key)=)"
        + NOT_REDACTED
        # `#` too: a password holds one more often than a query string ends in a fragment.
        + r"(?P<value>[^\s&;\"'\\]{3,4096})",
        (1, REDACTED),
        ("pwd=", "password=", "key=", "sig", "signature=", "token=", "secret="),
        case_insensitive=True,
        accept=_not_code,
        boundary=NAME_CHARS,
    ),
    Rule(
        # DB_PASSWORD=..., DB_PASS=..., GITHUB_TOKEN: ..., client_secret = ...: a name that ends
        # in a secret word after `_` or `-`, then an assignment.
        "named_secret_assignment",
        r"([_\-](?<=[a-z0-9][_\-])" + SECRET_WORDS
        + ASSIGNED
        + r")"
        + NOT_REDACTED
        + VALUE
        + r"{8,}",
        (1, REDACTED),
        ("pass", "pwd", "secret", "token", "key", "auth", "credential"),
        case_insensitive=True,
    ),
    Rule(
        # PGPASSWORD=..., newPassword: ..., passwd = ...: the word at the end of a longer name.
        "password_assignment",
        r"((?:password|passwd)"
        + ASSIGNED
        + r")"
        + NOT_REDACTED
        + r"(?P<value>"
        + VALUE
        + r"{8,})",
        (1, REDACTED),
        ("passw",),
        case_insensitive=True,
        accept=_not_indirect,
    ),
    Rule(
        # pass = ..., pwd: ...: the short forms as a name of their own (not OLDPWD, not bypass).
        "short_password_assignment",
        r"((?:pass|pwd)"
        + ASSIGNED
        + r")"
        + NOT_REDACTED
        + r"(?P<value>"
        + VALUE
        + r"{8,})",
        (1, REDACTED),
        ("pass", "pwd"),
        case_insensitive=True,
        accept=_not_indirect,
        boundary=NAME_CHARS,
    ),
    Rule(
        # JWT_SIGNING_KEY=..., RAILS_MASTER_KEY=..., MAILCHIMP_KEY=...: names ending in `_key`
        # say secret only when the value is random (SORT_KEY=created_at is not).
        "named_key_assignment",
        r"([_\-](?<=[a-z0-9][_\-])key"
        + ASSIGNED
        + r")"
        + NOT_REDACTED
        + r"(?:base64:)?(?P<value>"
        + VALUE
        + r"{16,4096})",
        (1, REDACTED),
        ("key",),
        case_insensitive=True,
        accept=value_looks_random,
    ),
    Rule(
        # %22api_key%22%3A%22...%22 and password%3D...: the same fields URL-encoded.
        "url_encoded_secret",
        r"(" + SECRET_WORDS + r"(?:%22)?(?:%3a|%3d)(?:%20)*(?:%22)?)"
        + NOT_REDACTED
        + r"[^\s&\"'\\%]{4,4096}",
        (1, REDACTED),
        ("%3a", "%3d"),
        case_insensitive=True,
    ),
    Rule(
        # sessionid=..., PHPSESSID=..., JSESSIONID=..., connect.sid=..., _gh_sess=...: session
        # cookies in headers, curl -b and logs.
        "session_cookie",
        r"((?:sess|sessid|sessionid|session|session_id|sid|remember_token|remember_me)=)"
        + NOT_REDACTED
        + r"(?P<value>[^\s;,\"'\\]{8,4096})",
        (1, REDACTED),
        ("sess", "sid=", "remember"),
        case_insensitive=True,
        accept=_session_cookie_name,
    ),
    # --- Shapes from held-out round 4 (benchmarks/redaction_heldout4.py), fixed after it was
    # measured once: that round no longer measures generalisation for these.
    Rule(
        # A Nostr private key (NIP-19: bech32 `nsec1` + 58 characters of the bech32 alphabet).
        "nostr_private_key",
        word_start("nsec1") + r"[02-9ac-hj-np-z]{58}\b",
        (REDACTED,),
        ("nsec1",),
    ),
    Rule(
        # `AUTH [user] <password>` typed at a redis-cli prompt (`host:6379> AUTH default ...`).
        "redis_prompt_auth",
        r"(:\d{2,5}(?:\[\d+\])?>\s*auth\s+(?:\S+\s+)?)" + NOT_REDACTED
        # The password is the command's last word (`AUTH [username] password`).
        + r"(?P<value>[^\s\\\"']{6,})" + LINE_END,
        (1, REDACTED),
        ("> auth",),
        case_insensitive=True,
        accept=_not_placeholder,
    ),
    Rule(
        # A value piped into a Kubernetes secret (`echo -n <value> | kubectl create secret ...`,
        # `printf '%s' <value> | kubectl create secret`): whatever is piped in is the secret.
        "piped_into_kubectl_secret",
        r"((?:" + word_start("echo") + r"(?:\s+-[neE]+)*|" + word_start("printf") + r"\s+(?:'%s'|\\*\"%s\\*\"|%s))\s+(?:\\*[\"'])?)"
        + NOT_REDACTED
        + r"(?P<value>[^\s\\\"'|]{8,})(?=(?:\\*[\"'])?\s*\|\s*kubectl\s+create\s+secret)",
        (1, REDACTED),
        ("kubectl create secret",),
        accept=_not_placeholder,
    ),
    Rule(
        # A Kubernetes secret's field printed decoded (`kubectl get secret ... | base64 -d`): the
        # output line after the command is the secret.
        "kubectl_secret_decoded",
        r"(kubectl\s+get\s+secrets?\b" + SAME_LINE_CHAR + r"*\|\s*base64\s+(?:-d|--decode|-D)\b" + SAME_LINE_CHAR + r"*"
        + NEWLINE + r")" + NOT_REDACTED + r"(?!\$\s)(?P<value>[^\s\\\"']{8,})" + LINE_END,
        (1, REDACTED),
        ("kubectl get secret",),
        accept=_not_placeholder,
    ),
    Rule(
        # A TOTP setup key shown for manual entry, in groups of four base32 characters
        # ("Enter this setup key: c76n 4tj3 r4ep ..."): the words say what it is.
        "totp_setup_key",
        r"((?:setup|secret|manual(?:\s+entry)?)\s+key\b" + SAME_LINE_CHAR + r"{0,80}?" + ANNOUNCED + r")"
        + r"(?P<value>[a-z2-7]{4}(?: [a-z2-7]{4}){3,15})\b",
        (1, REDACTED),
        ("setup key", "secret key", "manual entry key", "manual key"),
        case_insensitive=True,
    ),
    Rule(
        # A keypair exported as base58 (Solana wallets: 64 bytes, 87 or 88 characters) after words
        # that say it is a private key ("Show Private Key gave me this: ..."). Transaction
        # signatures have the same shape, so the words are required.
        "private_key_base58",
        r"((?:private|secret)\s+key\b" + SAME_LINE_CHAR + r"{0,120}?" + ANNOUNCED + r")"
        + r"(?P<value>[1-9a-z]{86,88})\b",
        (1, REDACTED),
        ("private key", "secret key"),
        case_insensitive=True,
        accept=_is_base58,
    ),
)
