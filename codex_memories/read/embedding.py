"""Static sentence embeddings from the WordLlama weights that ship inside the `wordllama` wheel.

Contract:
- `embed_texts(texts)` returns a float32 matrix, one L2-normalised row per text (a text with no
  token gives a zero row): the mean of the token vectors of WordLlama `l2_supercat` (Llama-2
  tokenizer, 32,000 tokens, 256 dimensions), which is how WordLlama itself pools.
- `EMBEDDER_ID` names the model and dimension; an index built with another id is rebuilt.
- Offline by construction: the tokenizer JSON and the safetensors file are read from the
  installed package. We do not call `WordLlama.load()`: in wordllama 0.4.0.post1 it looks for the
  tokenizer under `wordllama/tokenizer/` while the wheel ships it under `wordllama/tokenizers/`,
  so it tries to download it from Hugging Face and fails offline. It also imports requests,
  pydantic and toml (0.36 s against 0.16 s for numpy + tokenizers).
- The weights are memory-mapped (16 MB, float16): a query touches only the rows of its tokens,
  so a fresh process pays for the tokenizer (about 0.09 s) and not for the whole matrix.
- Loaded once per process and cached; raises `EmbedderUnavailable` when the package files are
  missing (a broken install must not look like "no memories").
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codex_memories.read.safetensors import installed_package_dir, read_header

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PACKAGE = "wordllama"
TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"
WEIGHTS_FILE = "weights/l2_supercat_256.safetensors"
WEIGHTS_TENSOR = "embedding.weight"
DIMENSIONS = 256
EMBEDDER_ID = f"wordllama-l2_supercat-{DIMENSIONS}-mean"
# Token ids beyond this are not looked at: a chunk's gist is in its first few hundred tokens, and
# the cap keeps a megabyte query or a huge pasted block from costing more than a normal one.
MAX_TOKENS_PER_TEXT = 512
_BATCH = 256


class EmbedderUnavailable(RuntimeError):
    """The packaged WordLlama files cannot be found or read."""


def embed_texts(texts: list[str]) -> np.ndarray:
    """One unit-length float32 row per text (zero row for a text without tokens)."""
    model = _model()
    rows = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for start in range(0, len(texts), _BATCH):
        encodings = model.tokenizer.encode_batch(texts[start : start + _BATCH], add_special_tokens=False)
        for offset, encoding in enumerate(encodings):
            ids = encoding.ids[:MAX_TOKENS_PER_TEXT]
            if not ids:
                continue
            vector = np.asarray(model.weights[np.asarray(ids, dtype=np.int64)], dtype=np.float32).mean(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                rows[start + offset] = vector / norm
    return rows


class _Model:
    __slots__ = ("tokenizer", "weights")

    def __init__(self, tokenizer: Tokenizer, weights: np.ndarray) -> None:
        self.tokenizer = tokenizer
        self.weights = weights


@cache
def _model() -> _Model:
    from tokenizers import Tokenizer

    package = _package_dir()
    tokenizer_path = package / TOKENIZER_FILE
    weights_path = package / WEIGHTS_FILE
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as error:  # tokenizers raises its own Exception subclass for unreadable files.
        raise EmbedderUnavailable(f"cannot load the WordLlama tokenizer {tokenizer_path}: {error}") from error
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return _Model(tokenizer, _map_weights(weights_path))


def _package_dir() -> Path:
    folder = installed_package_dir(PACKAGE)
    if folder is None:
        raise EmbedderUnavailable(f"the {PACKAGE!r} package is not installed")
    return folder


def _map_weights(path: Path) -> np.ndarray:
    """The embedding matrix of a safetensors file, memory-mapped (format: u64 header size, JSON header, data)."""
    try:
        header, data_offset = read_header(path)
    except (OSError, ValueError) as error:
        raise EmbedderUnavailable(f"cannot read the WordLlama weights {path}: {error}") from error
    tensor = header.get(WEIGHTS_TENSOR) if isinstance(header, dict) else None
    if not isinstance(tensor, dict) or tensor.get("dtype") != "F16" or len(tensor.get("shape", ())) != 2:
        raise EmbedderUnavailable(f"{path} has no float16 matrix {WEIGHTS_TENSOR!r}")
    rows, columns = tensor["shape"]
    begin, end = tensor["data_offsets"]
    if columns != DIMENSIONS or end - begin != rows * columns * 2:
        raise EmbedderUnavailable(f"{path}: unexpected shape {tensor['shape']} for {WEIGHTS_TENSOR!r}")
    return np.memmap(path, dtype=np.float16, mode="r", offset=data_offset + begin, shape=(rows, columns))
