"""Token counting and middle truncation with the real `o200k_base` tokenizer, offline; and Codex's
own count of a hook's text, with the cut Codex makes in it.

Codex budgets transcripts with a fixed 4 bytes per token, which overflows the context window on
dense JSON and code (spec section 11, issue #35093). We count with the tokenizer itself, from
the `bpe-openai` package, which bundles `o200k_base` and needs no download (tiktoken fetches its
files at first use and fails offline).

`bpe_openai.Encoding.encode` refuses inputs of a million characters or more and more than
200,000 tokens, so encoding and counting go through the package's Rust tokenizer
(`bpe_openai._bindings`, the typed binding the wrapper itself uses), which has neither limit;
decoding uses the public wrapper. Both are created once and cached.

`truncate_middle` keeps the head and the tail of a text and replaces the middle with one marker
line `…N tokens truncated…`. It works on token ids, never splits a character, always fits
`max_tokens` (marker included) and only encodes as much of a large text as it keeps.

Codex's own count, for the text a hook hands it (measured on Codex 0.147.0 and 0.171.0;
docs/codex-integration.md has the measurements and the commands). Here because the read path
(`read.injection`), the team memory file (`memory_folder.team_memory`) and the installer
(`codex.install`, `codex.doctor`) all need it, and this module sits below all three:
- Codex counts a hook's text in its own tokens, `ceil(UTF-8 bytes / 4)` (`codex_token_count`), not
  with a tokenizer: 10,000 ASCII bytes or 5,000 `é` pass whole, 10,001 bytes are cut.
- A command handler without `additionalContextLimit` admits `CODEX_HOOK_CONTEXT_LIMIT_TOKENS`
  (2,500 of those tokens, 10,000 bytes). A longer text is replaced by "Warning: truncated output
  (original token count: N)", a head and a tail, and the whole text is written to a world-readable
  file under the system temp folder (`hook_outputs/`).
- `"additionalContextLimit": N` with N > 0 moves that cut to N tokens (4N bytes; the same warning,
  head, tail and file beyond it); N = 0 turns the cut off. The key is part of the handler's trust
  hash (`codex.trust`).
- `session_start_context_limit(budget_tokens)`: the limit our SessionStart handler gets for a
  SessionStart budget, None when Codex's default admits it. The budget is in Codex's own count
  (`read.injection` builds the text to fit it by construction), so the limit is the budget itself.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import bpe_openai

ENCODING_NAME = "o200k_base"
# Longest o200k token, in bytes: k tokens never cover more than this many characters times k.
_MAX_TOKEN_BYTES = 128
# First guess of characters per token when cutting a prefix / suffix to encode.
_CHARS_PER_TOKEN_GUESS = 8
_BINDINGS_MODULE = "bpe_openai._bindings"


@cache
def _bindings() -> ModuleType:
    """The Rust binding, loaded without the `bpe_openai` package's `__init__`.

    Importing the package builds the tiktoken-compatible rank tables in `bpe_openai.compat`
    (0.6-1.2 s measured), which counting never uses; the Codex hooks count tokens on the user's
    critical path. The binding is registered under its own name, so a later `import bpe_openai`
    (for decoding) reuses this very module instead of initialising the extension twice.
    """
    loaded = sys.modules.get(_BINDINGS_MODULE)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("bpe_openai")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the bpe-openai package is not installed")
    for folder in package.submodule_search_locations:
        for candidate in sorted(Path(folder).glob("_bindings*")):
            if any(candidate.name.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES):
                loader = importlib.machinery.ExtensionFileLoader(_BINDINGS_MODULE, str(candidate))
                spec = importlib.util.spec_from_file_location(_BINDINGS_MODULE, str(candidate), loader=loader)
                if spec is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                sys.modules[_BINDINGS_MODULE] = module
                loader.exec_module(module)
                return module
    raise ImportError(f"no compiled {_BINDINGS_MODULE} in {package.submodule_search_locations}")


@cache
def _tokenizer() -> Any:
    return _bindings().tokenizer_for_encoding(ENCODING_NAME)


@cache
def _encoding() -> bpe_openai.Encoding:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Exact number of `o200k_base` tokens in `text` (special-token text counts as plain text)."""
    if not text:
        return 0
    return _tokenizer().count(text)


def encode(text: str) -> list[int]:
    return _tokenizer().encode(text) if text else []


def marker_line(truncated_tokens: int) -> str:
    return f"…{truncated_tokens} tokens truncated…"


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """`kept_tokens` counts tokens of the original text that survived (marker excluded);
    `truncated_tokens = original_tokens - kept_tokens`; `count_tokens(text) <= max_tokens`."""

    text: str
    original_tokens: int
    kept_tokens: int
    truncated_tokens: int


def _whole_chars(data: bytes, *, from_start: bool) -> str:
    """Decode token bytes cut out of valid UTF-8, dropping a character split at the cut edge."""
    if from_start:
        # A head piece may end inside a character: drop the incomplete trailing bytes.
        return data.decode("utf-8", errors="ignore") if _ends_mid_char(data) else data.decode("utf-8")
    # A tail piece may start inside a character: skip continuation bytes at the front.
    skip = 0
    while skip < len(data) and skip < 4 and 0x80 <= data[skip] < 0xC0:
        skip += 1
    return data[skip:].decode("utf-8")


def _decode_whole_chars(ids: list[int], *, from_start: bool) -> str:
    """`ids` decoded by the Rust binding, whose decoder refuses a sequence that splits a UTF-8
    character; trimming tokens at the cut edge (at most 3: a character has at most 4 bytes) finds
    one that does not. Only if that fails are the exact bytes decoded with the Python wrapper
    (which costs the wrapper's rank tables, about a second)."""
    tokenizer = _tokenizer()
    for trim in range(0, min(4, len(ids) + 1)):
        piece = ids[: len(ids) - trim] if from_start else ids[trim:]
        try:
            return tokenizer.decode(piece)
        except ValueError:
            continue
    return _whole_chars(_encoding().decode_bytes(ids), from_start=from_start)


def _ends_mid_char(data: bytes) -> bool:
    # Walk back over at most 3 continuation bytes to the lead byte and compare lengths.
    index = len(data) - 1
    continuation = 0
    while index >= 0 and continuation < 4 and 0x80 <= data[index] < 0xC0:
        index -= 1
        continuation += 1
    if index < 0:
        return continuation > 0
    lead = data[index]
    if lead < 0x80:
        return continuation > 0
    expected = 2 if lead >= 0xC0 and lead < 0xE0 else 3 if lead < 0xF0 else 4
    return continuation + 1 < expected


def _head(text: str, n_tokens: int) -> tuple[str, int]:
    """The longest whole-character prefix made of at most the first `n_tokens` tokens."""
    if n_tokens <= 0:
        return "", 0
    window = n_tokens * _CHARS_PER_TOKEN_GUESS
    while True:
        piece = text[:window]
        ids = encode(piece)
        if len(ids) > n_tokens or len(piece) == len(text) or window >= n_tokens * _MAX_TOKEN_BYTES:
            break
        window *= 2
    kept = ids[:n_tokens]
    head = _decode_whole_chars(kept, from_start=True)
    return head, count_tokens(head)


def _tail(text: str, n_tokens: int) -> tuple[str, int]:
    """The longest whole-character suffix made of at most the last `n_tokens` tokens."""
    if n_tokens <= 0:
        return "", 0
    window = n_tokens * _CHARS_PER_TOKEN_GUESS
    while True:
        piece = text[-window:]
        ids = encode(piece)
        if len(ids) > n_tokens or len(piece) == len(text) or window >= n_tokens * _MAX_TOKEN_BYTES:
            break
        window *= 2
    kept = ids[-n_tokens:]
    tail = _decode_whole_chars(kept, from_start=False)
    return tail, count_tokens(tail)


def truncate_middle(text: str, max_tokens: int) -> TruncationResult:
    """Keep about half of `max_tokens` from each end of `text`, with a marker line between.

    A text that fits is returned unchanged. When even the marker does not fit, the result is
    the empty string.
    """
    if max_tokens < 0:
        raise ValueError("max_tokens must not be negative")
    original = count_tokens(text)
    if original <= max_tokens:
        return TruncationResult(text, original, original, 0)

    # Marker size with the largest N it can show, so the final marker never outgrows it.
    marker_budget = count_tokens("\n" + marker_line(original) + "\n")
    content_budget = max_tokens - marker_budget
    while content_budget > 0:
        head, head_tokens = _head(text, content_budget // 2)
        tail, tail_tokens = _tail(text, content_budget - content_budget // 2)
        kept = head_tokens + tail_tokens
        result = f"{head}\n{marker_line(original - kept)}\n{tail}"
        excess = count_tokens(result) - max_tokens
        if excess <= 0:
            return TruncationResult(result, original, kept, original - kept)
        # Tokens can merge differently across the joins; shrink and retry.
        content_budget -= max(excess, 1)

    marker = marker_line(original)
    if count_tokens(marker) <= max_tokens:
        return TruncationResult(marker, original, 0, original)
    return TruncationResult("", original, 0, original)


# -- Codex's own count and the cut it makes in a hook's text (see the module docstring) ----------------

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
