"""Secret redaction: the one function every path uses (state DB, files, logs, model requests).

Contract:
* `redact_secrets(text)` replaces every secret it recognises with `REDACTED`; everything else is
  returned unchanged. It is idempotent (`redact_secrets(redact_secrets(x)) == redact_secrets(x)`)
  and `REDACTED` itself matches no pattern.
* `find_secret_kinds(text)` names the rules that still find an unredacted secret;
  `find_secret_kinds(redact_secrets(x)) == []`, which is what the data-quality check asserts.
* `SECRET_PATTERNS` is the ordered table of `(name, pattern)` of every rule; `pattern.search(text)`
  answers like a compiled regex's but applies the rule's value checks too, so it agrees with
  `find_secret_kinds`.
* `prepare_screen()` says bulk work is coming (see `engine.py`); it changes speed, never output.

Where the rules come from, in the order they run (one module each):
1. `rules.py`: Codex's four rules (spec 1.9), in its order and with its replacements, then the
   formats whose exact shape we know (key blocks, URL passwords, headers, JSON fields,
   assignments whose name says secret, connection strings, cookies, provider tokens).
2. `detector.py`: the regex plugins of Yelp's `detect-secrets`, as installed.
3. `shapes.py`: the shapes secrets share whatever their provider: generic `prefix_body`
   tokens, random user parts of URLs, wrapped keys.
4. `prose.py`: a value after (or before) a credential word in eighteen languages, after "log in
   as <user> with", in a command's credential position, in a list of recovery codes or a
   grouped recovery key. `documents.py`: a value in a credential field of a
   table, an SQL insert, XML, a name/value pair, a JSON container, a URL's path or query; wallet
   material; base64 whose decoded text holds any of these (the whole table, recursively).
A placeholder (`values.is_placeholder`) is never redacted, whichever rule reads it.
The words that make a name say "secret" are one list (`names.py`); "does this value look
generated?" is one test (`values.py`). `engine.py` runs the rules, `screen.py` (Hyperscan)
tells it which can match.
"""

from __future__ import annotations

from typing import Any

from codex_memories.redact.engine import find_secret_kinds, prepare_screen, redact_secrets
from codex_memories.redact.rules import REDACTED
from codex_memories.redact.values import looks_random

__all__ = ["REDACTED", "SECRET_PATTERNS", "find_secret_kinds", "looks_random", "prepare_screen", "redact_secrets"]


def __getattr__(name: str) -> Any:
    # SECRET_PATTERNS is built lazily, like the rules it lists.
    if name == "SECRET_PATTERNS":
        from codex_memories.redact import engine

        return engine.SECRET_PATTERNS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
