"""What Codex admits from a hook's `additionalContext`, as measured on Codex 0.147.0 and 0.171.0.

Contract (pure; docs/codex-integration.md has the measurements and the commands):
- Codex counts a hook's text in its own tokens, `ceil(UTF-8 bytes / 4)` (`codex_token_count`), not
  with a tokenizer: 10,000 ASCII bytes or 5,000 `é` pass whole, 10,001 bytes are cut.
- A command handler without `additionalContextLimit` admits `CODEX_HOOK_CONTEXT_LIMIT_TOKENS`
  (2,500 of those tokens, 10,000 bytes). A longer text is replaced by "Warning: truncated output
  (original token count: N)", a head and a tail, and the whole text is written to a world-readable
  file under the system temp folder (`hook_outputs/`).
- `"additionalContextLimit": N` with N > 0 moves that cut to N tokens (4N bytes; the same warning,
  head, tail and file beyond it); N = 0 turns the cut off. The key is part of the handler's trust
  hash (`codex_trust`).
- `session_start_context_limit(budget_tokens)`: the limit our SessionStart handler gets for a
  SessionStart budget, None when Codex's default admits it. The budget is in Codex's own count
  (`read.injection` builds the text to fit it by construction), so the limit is the budget itself.
"""

from __future__ import annotations

import math

CODEX_HOOK_CONTEXT_LIMIT_TOKENS = 2_500
CODEX_BYTES_PER_TOKEN = 4
ADDITIONAL_CONTEXT_LIMIT_KEY = "additionalContextLimit"


def codex_token_count(text: str) -> int:
    """How many tokens Codex counts for `text` when it checks a hook's context against its limit."""
    return math.ceil(len(text.encode("utf-8")) / CODEX_BYTES_PER_TOKEN)


def fits_codex_hook_limit(text: str, limit_tokens: int = CODEX_HOOK_CONTEXT_LIMIT_TOKENS) -> bool:
    """Whether Codex delivers `text` whole under a handler limit of `limit_tokens` (0: no limit)."""
    return limit_tokens == 0 or codex_token_count(text) <= limit_tokens


def session_start_context_limit(budget_tokens: int) -> int | None:
    """The `additionalContextLimit` for a SessionStart text of at most `budget_tokens` of Codex's
    tokens: None when Codex's default admits it, else the budget."""
    return None if budget_tokens <= CODEX_HOOK_CONTEXT_LIMIT_TOKENS else budget_tokens
