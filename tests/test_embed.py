"""The numpy MiniLM encoder against an independent float64 reference written plainly, per sequence."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file
from scipy.special import erf

from graphstrata.embed import MiniLMEmbedder, get_embedder, model_dir


def reference_embedding(text: str) -> np.ndarray:
    """BERT forward pass for ONE sequence, float64, no batching, no fused weights: the textbook form."""
    path = model_dir()
    cfg = json.loads((path / "config.json").read_text())
    w = {k: v.astype(np.float64) for k, v in load_file(str(path / "model.safetensors")).items()}
    enc = get_embedder().tokenizer.encode(text)  # tokenisation itself is HF tokenizers' job
    ids = np.array(enc.ids)

    def ln(x, p):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + cfg["layer_norm_eps"]) * w[
            p + ".weight"
        ] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)]
    x = ln(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    h = cfg["num_attention_heads"]
    d = x.shape[1] // h
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        heads = []
        for j in range(h):
            sl = slice(j * d, (j + 1) * d)
            q = lin(x, f"{p}.attention.self.query")[:, sl]
            k = lin(x, f"{p}.attention.self.key")[:, sl]
            v = lin(x, f"{p}.attention.self.value")[:, sl]
            a = q @ k.T / np.sqrt(d)
            a = np.exp(a - a.max(1, keepdims=True))
            heads.append((a / a.sum(1, keepdims=True)) @ v)
        x = ln(x + lin(np.hstack(heads), f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        inter = lin(x, f"{p}.intermediate.dense")
        inter = 0.5 * inter * (1 + erf(inter / np.sqrt(2)))
        x = ln(x + lin(inter, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    v = x.mean(0)
    return v / np.linalg.norm(v)


TEXTS = [
    "A man is eating food.",
    "Neo4j stores graphs; GDS runs PageRank, Leiden and k-core on projections of them.",
    "Ünïcödé, emoji 🚀 and CJK 图数据库 are tokenised too.",
]


@pytest.mark.parametrize("text", TEXTS)
def test_matches_float64_reference(text: str) -> None:
    ours = get_embedder().embed([text])[0]
    ref = reference_embedding(text)
    assert ours.dtype == np.float32 and ours.shape == (384,)
    assert np.abs(ours - ref).max() < 2e-5
    assert float(ours @ ref) > 0.99999


def test_padding_does_not_change_a_vector() -> None:
    emb = get_embedder()
    short = "Paris is the capital of France."
    alone = emb.embed([short])[0]
    batched = emb.embed([short, "word " * 200, "A much longer sentence, padded against the short one in a batch."])[0]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_semantics_and_shape() -> None:
    emb = get_embedder()
    v = emb.embed(["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply."])
    assert v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.6 > 0.2 > v[0] @ v[2]
    assert emb.embed([]).shape == (0, 384)
    # empty text still gives a unit vector rather than NaN
    assert np.isfinite(emb.embed([""])).all()


def test_long_text_is_truncated_not_rejected() -> None:
    emb = MiniLMEmbedder(batch_size=2)
    v = emb.embed(["token " * 5000])
    assert v.shape == (1, 384) and np.isfinite(v).all()
