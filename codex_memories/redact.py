"""Secret redaction: the one function every path uses (state DB, files, logs, model requests).

Contract:
* `redact_secrets(text)` replaces every secret it recognises with `REDACTED`; everything else is
  returned unchanged. It is idempotent (`redact_secrets(redact_secrets(x)) == redact_secrets(x)`)
  and `REDACTED` itself matches no pattern.
* The first four rules reproduce Codex's sanitizer (spec 1.9) in its order and with its
  replacements (`Bearer [REDACTED_SECRET]`; key, separator and opening quote kept for
  assignments). The rules after them close the gaps listed in spec section 11 (JSON-quoted keys,
  private keys, GitHub / Slack / Google / Stripe tokens, JWTs, URL passwords, Authorization
  headers, AWS secret keys by name).
* Every rule also works on JSON-serialised text (phase 1 redacts the JSON of transcript items,
  whose tool outputs often contain JSON again). One deliberate difference from Codex: a value
  stops at a backslash, so the escaped quote (`\\"`) or newline (`\\n`) that ends a value inside a
  JSON string is never replaced and the JSON stays well formed.
* `SECRET_PATTERNS` is the public ordered table of `(name, compiled regex)`. The regexes never
  match already-redacted text, so `find_secret_kinds(redact_secrets(x)) == []`, which is what the
  data-quality check asserts.

Performance: inputs can be large. Every rule is precompiled, starts with a literal where it can
(word boundaries are checked by a look-behind placed after the literal, which lets the regex
engine skip ahead quickly), bounds its repetitions, and is skipped outright when none of its
literal hints occurs in the text. Case-insensitive rules are run case-sensitively over a
lower-cased copy of the text (same length, so match positions carry over), which is several
times faster than `re.IGNORECASE`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REDACTED = "[REDACTED_SECRET]"

# Values never start with an existing marker: keeps every rule idempotent and lets
# `find_secret_kinds` run over redacted text without false alarms. Lower case because the
# case-insensitive rules are also run over lower-cased text.
_NOT_REDACTED = r"(?!\[(?:REDACTED_SECRET|redacted_secret)\])"
# Assignment values: no whitespace, no quotes, no backslash (see module docstring).
_VALUE = r"[^\s\"'\\]"
# A quote as it appears in plain text or inside (possibly nested) JSON strings.
_QUOTE = r"(?:\\{0,31}[\"'])"


def _word_start(literal: str) -> str:
    """`literal` not preceded by a word character, written literal-first for speed.

    A JSON escape right before it counts as a boundary: in serialized transcripts a line such
    as `Authorization: ...` after a newline reads `\\nAuthorization: ...`, and the `n` of the
    escape must not hide it."""
    escaped = re.escape(literal)
    return literal + r"(?:(?<![A-Za-z0-9_]" + escaped + r")|(?<=\\[nrtbf]" + escaped + "))"


# A replacement is a sequence of parts: an int keeps that group of the match, a str is inserted.
_Template = tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: str
    template: _Template
    # Literals (lower case); the rule only runs when one of them occurs in the lowered text.
    hints: tuple[str, ...]
    case_insensitive: bool = False


_RULES_SPEC: tuple[_Rule, ...] = (
    # --- Codex's four rules (spec 1.9), same order and replacements. -----------------------
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
    # --- Our additions (spec section 11, limitation 6). ------------------------------------
    _Rule(
        # Whole PEM blocks, also with JSON-escaped newlines. The body class has no quote, so a
        # block can never run across JSON strings.
        "private_key_block",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----)"
        r"[A-Za-z0-9+/=\s\\:,.\-]{0,20000}?"
        r"(-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----)",
        (1, REDACTED, 2),
        ("private key-----",),
    ),
    _Rule(
        # A key block cut short (e.g. by output truncation): redact what follows the header.
        "private_key_unterminated",
        r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----)"
        + _NOT_REDACTED
        + r"[A-Za-z0-9+/=\s\\]{64,}",
        (1, REDACTED),
        ("private key-----",),
    ),
    _Rule(
        # Project / service-account / Anthropic keys: `sk-` followed by dashes or underscores.
        # The left boundary, the length and the required digit keep slugs such as
        # `disk-usage-report` or `sk-learn` intact.
        "dashed_sk_key",
        r"sk-(?<![A-Za-z0-9_\-]sk-)(?=[A-Za-z_\-]{0,300}[0-9])[A-Za-z0-9_\-]{32,}",
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
        "slack_token",
        _word_start("xox") + r"[abprs]-[A-Za-z0-9][A-Za-z0-9\-]{9,250}",
        (REDACTED,),
        ("xox",),
    ),
    _Rule(
        "slack_webhook",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]{16,300}",
        (1, REDACTED),
        ("hooks.slack.com",),
    ),
    _Rule(
        "google_api_key",
        r"AIza(?<![A-Za-z0-9_\-]AIza)[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])",
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
        r"(://(?<=[a-z0-9+.\-]://)[^\s:/?#@\"'\\\[\]]{1,128}:)"
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
        # "password": "...", \"api_key\":\"...\", 'client_secret': '...': a quoted key whose name
        # ends in a secret word, a colon, and a quoted value.
        "json_secret_field",
        r"((?:password|passwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
        r"|credentials?)"
        + _QUOTE
        + r"\s{0,4}:\s{0,4}"
        + _QUOTE
        + r")"
        + _NOT_REDACTED
        + r"[^\"'\\\r\n]{8,4096}",
        (1, REDACTED),
        ("password", "passwd", "secret", "token", "key", "credential"),
        case_insensitive=True,
    ),
    _Rule(
        # DB_PASSWORD=..., GITHUB_TOKEN: ..., client_secret = ...: a name that ends in a secret
        # word after `_` or `-`, then an assignment.
        "named_secret_assignment",
        r"([_\-](?<=[a-z0-9][_\-])(?:password|passwd|secret|token|api[_\-]?key|apikey"
        r"|secret[_\-]?key|access[_\-]?key|private[_\-]?key|auth)"
        r"\s{0,4}[:=]\s{0,4}[\"']?)"
        + _NOT_REDACTED
        + _VALUE
        + r"{8,}",
        (1, REDACTED),
        ("password", "passwd", "secret", "token", "key", "auth"),
        case_insensitive=True,
    ),
)


@dataclass(frozen=True, slots=True)
class _CompiledRule:
    name: str
    public: re.Pattern[str]  # matches the original text
    fast: re.Pattern[str]  # matches the lower-cased text when case-insensitive, else = public
    template: _Template
    hints: tuple[str, ...]
    case_insensitive: bool


_RULES: tuple[_CompiledRule, ...] = tuple(
    _CompiledRule(
        name=rule.name,
        public=re.compile(rule.pattern, re.IGNORECASE if rule.case_insensitive else 0),
        fast=re.compile(rule.pattern),
        template=rule.template,
        hints=rule.hints,
        case_insensitive=rule.case_insensitive,
    )
    for rule in _RULES_SPEC
)

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((r.name, r.public) for r in _RULES)


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
    if rule.case_insensitive and len(lowered) == len(text):
        haystack, regex = lowered, rule.fast
    else:
        # Unicode lower-casing changed the length (e.g. "İ"): positions would not carry over.
        haystack, regex = text, rule.public
    pieces: list[str] = []
    last = 0
    for match in regex.finditer(haystack):
        pieces.append(text[last : match.start()])
        pieces.append(_render(rule.template, text, match))
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _applies(rule: _CompiledRule, lowered: str) -> bool:
    return any(hint in lowered for hint in rule.hints)


def redact_secrets(text: str) -> str:
    """Replace every recognised secret in `text` with `REDACTED` (rules applied in table order)."""
    if not text:
        return text
    lowered = text.lower()
    for rule in _RULES:
        if not _applies(rule, lowered):
            continue
        replaced = _apply(rule, text, lowered)
        if replaced != text:
            text = replaced
            lowered = text.lower()
    return text


def find_secret_kinds(text: str) -> list[str]:
    """Names of the patterns that still match an unredacted secret in `text` (table order)."""
    if not text:
        return []
    lowered = text.lower()
    same_length = len(lowered) == len(text)
    kinds = []
    for rule in _RULES:
        if not _applies(rule, lowered):
            continue
        if rule.case_insensitive and same_length:
            found = rule.fast.search(lowered)
        else:
            found = rule.public.search(text)
        if found:
            kinds.append(rule.name)
    return kinds
