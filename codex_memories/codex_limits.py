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
  SessionStart budget counted in o200k tokens (`tokens.count_tokens`), None when Codex's default
  admits any text of that budget.
"""

from __future__ import annotations

import math

CODEX_HOOK_CONTEXT_LIMIT_TOKENS = 2_500
CODEX_BYTES_PER_TOKEN = 4
ADDITIONAL_CONTEXT_LIMIT_KEY = "additionalContextLimit"
# How many UTF-8 bytes one o200k token of our text may take, for sizing a limit: measured 2.9
# (paths) to 5.0 (prose prompts) bytes a token, 3.6 for Chinese; 8 leaves room for denser text.
# A budget of B tokens therefore needs up to 2B of Codex's tokens.
HEADROOM_BYTES_PER_TOKEN = 8


def codex_token_count(text: str) -> int:
    """How many tokens Codex counts for `text` when it checks a hook's context against its limit."""
    return math.ceil(len(text.encode("utf-8")) / CODEX_BYTES_PER_TOKEN)


def fits_codex_hook_limit(text: str, limit_tokens: int = CODEX_HOOK_CONTEXT_LIMIT_TOKENS) -> bool:
    """Whether Codex delivers `text` whole under a handler limit of `limit_tokens` (0: no limit)."""
    return limit_tokens == 0 or codex_token_count(text) <= limit_tokens


def session_start_context_limit(budget_tokens: int) -> int | None:
    """The `additionalContextLimit` for a SessionStart text of at most `budget_tokens` o200k
    tokens: None when Codex's default admits it even at `HEADROOM_BYTES_PER_TOKEN`, else a limit
    that does."""
    needed = math.ceil(budget_tokens * HEADROOM_BYTES_PER_TOKEN / CODEX_BYTES_PER_TOKEN)
    return None if needed <= CODEX_HOOK_CONTEXT_LIMIT_TOKENS else needed
