"""The one list of words that make a name say "secret" (`DB_PASSWORD`, `apiSecret`, `auth_key`).

Contract:
* `STRONG_WORDS`: a name ending in one of these holds a secret whatever its value looks like
  (`password`, `token`, `api key`, ...). `WEAK_WORDS`: a name ending in one of these holds a
  secret only when the value looks generated (`SORT_KEY=created_at` is not one,
  `JWT_SIGNING_KEY=Zx81...` is). Each entry is a tuple of words: `("api", "key")` also matches
  `apikey`, `api_key`, `api-key`, `apiKey` and `API.KEY`.
* `name_strength(name)` says which list the last words of `name` come from ("strong", "weak" or
  None), splitting it into words at `_`, `-`, `.`, spaces and camel-case humps, so `bypass`,
  `compass` and `oauth_provider` name nothing and `pass`, `user_pwd` and `proxyAuth` do; words
  such as `value` and `data` after the secret word (`token_value`, `client-key-data`) are skipped,
  and `public` before it (`PublicKey`) names no secret.
* `words_pattern(words)` is the same list as a regular expression over lower-cased text, for the
  rules in `codex_memories.redact.rules` and `.shapes`.

Every rule that decides from a name, and the transcript reader's fallback
(`codex_memories.ingest.transcript`), reads these lists; nothing else keeps its own copy.
"""

from __future__ import annotations

import re

STRONG_WORDS: tuple[tuple[str, ...], ...] = (
    ("password",),
    ("passwd",),
    ("passphrase",),
    ("pass",),
    ("pwd",),
    ("secret",),
    ("token",),
    ("api", "key"),
    ("secret", "key"),
    ("access", "key"),
    ("private", "key"),
    ("credential",),
    ("credentials",),
    ("auth",),
    ("psk",),
)

WEAK_WORDS: tuple[tuple[str, ...], ...] = (
    ("key",),
    ("signature",),
    ("sig",),
    ("cookie",),
    ("session",),
    ("salt",),
    ("seed",),
)

# Words after the secret word that do not change what the name holds: `token_value`,
# `client-key-data`, `SecretString`, `key_material`, `password_b64`.
TRANSPARENT_WORDS = frozenset({"value", "data", "string", "str", "material", "b64", "base64", "hex", "raw", "plain", "text"})
# Words before the secret word that say it is not one: `PublicKey`, `public_key`.
PUBLIC_WORDS = frozenset({"public", "pub"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> list[str]:
    """`name` cut into lower-case words: `DB_PASSWORD` -> db, password; `apiSecret` -> api,
    secret; `X-Auth-Token` -> x, auth, token; `HTTPProxyPass` -> http, proxy, pass."""
    return [word.lower() for word in _WORD_SPLIT.split(name) if word]


def _ends_with(words: list[str], entries: tuple[tuple[str, ...], ...]) -> bool:
    for entry in entries:
        if tuple(words[-len(entry) :]) == entry:
            return True
        if len(entry) > 1 and words and words[-1] == "".join(entry):  # `apikey`, `secretkey`
            return True
    return False


def name_strength(name: str) -> str | None:
    """"strong" when the last words of `name` are a strong secret word, "weak" for a weak one,
    else None. Trailing `TRANSPARENT_WORDS` are skipped; a `PUBLIC_WORDS` word right before the
    secret word makes it no secret."""
    words = name_words(name)
    while words and words[-1] in TRANSPARENT_WORDS:
        words.pop()
    if not words or (len(words) >= 2 and words[-2] in PUBLIC_WORDS):
        return None
    if _ends_with(words, STRONG_WORDS):
        return "strong"
    if _ends_with(words, WEAK_WORDS):
        return "weak"
    return None


def words_pattern(entries: tuple[tuple[str, ...], ...]) -> str:
    """An alternation matching each entry in lower-cased text, its words joined by nothing,
    `_`, `-` or `.` (longest first, so `passwd` is tried before `pass`)."""
    alternatives = sorted((r"[_\-.]?".join(map(re.escape, entry)) for entry in entries), key=len, reverse=True)
    return "(?:" + "|".join(alternatives) + ")"
