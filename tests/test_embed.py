"""The MiniLM encoder's two runtimes (numpy, onnxruntime) against an independent float64 reference
written plainly, per sequence, and against each other; the content-addressed vector cache."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from scipy.special import erf

from graphstrata.embed import RUNTIMES, EmbeddingError, MiniLMEmbedder, get_embedder, model_dir
from graphstrata.vector_cache import VectorCache


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


@pytest.fixture(autouse=True)
def _drop_the_tests_own_encoders() -> Iterator[None]:
    """Encoders a test builds for itself (another thread count, precision or model cache) go when it
    ends: the process would keep up to four (~300-500 MB each with their sessions' buffers)."""
    from graphstrata import embed

    before = set(embed._ENCODERS)
    yield
    with embed._ENCODERS_LOCK:
        for key in [k for k in embed._ENCODERS if k not in before]:
            del embed._ENCODERS[key]


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request) -> MiniLMEmbedder:
    """Each runtime with no vector cache: what is tested is computed, never read back."""
    return MiniLMEmbedder(runtime=request.param)


@pytest.mark.parametrize("text", TEXTS)
def test_matches_float64_reference(runtime: MiniLMEmbedder, text: str) -> None:
    ours = runtime.compute([text])[0]
    ref = reference_embedding(text)
    assert ours.dtype == np.float32 and ours.shape == (384,)
    assert np.abs(ours - ref).max() < 2e-5
    assert float(ours @ ref) > 0.99999


def test_onnx_matches_numpy_on_mixed_lengths() -> None:
    """Batches of every length bucket (names, sentences, passages, truncated text) agree to cosine 0.999."""
    words = [
        "graph",
        "retrieval",
        "augmented",
        "generation",
        "with",
        "Neo4j",
        "and",
        "personalized",
        "PageRank",
        "over",
        "entities",
    ]
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, size=n)) for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 400)]
    texts += [*TEXTS, "", "Kur"]
    ref = MiniLMEmbedder(runtime="numpy").compute(texts)
    fast = MiniLMEmbedder(runtime="onnx").compute(texts)
    cos = np.sum(ref * fast, axis=1)
    assert cos.min() > 0.999, cos
    assert np.abs(ref - fast).max() < 1e-4


def test_one_core_session_gives_the_same_vectors() -> None:
    """A question embedded beside a parse runs on the one-thread session: the same vectors, bit for
    bit, as the session with a thread per core (MLAS splits an operator's output, not its sums)."""
    from graphstrata.embed_onnx import OnnxEncoder

    model = MiniLMEmbedder(runtime="onnx", threads=2)
    assert isinstance(model._encode, OnnxEncoder)
    assert model._encode.single is not model._encode.session
    many = model.compute(TEXTS)
    assert np.array_equal(model.compute(TEXTS, one_core=True), many)
    assert np.array_equal(np.stack([model.embed_beside([t])[0] for t in TEXTS]), many)


def test_padding_does_not_change_a_vector(runtime: MiniLMEmbedder) -> None:
    short = "Paris is the capital of France."
    alone = runtime.compute([short])[0]
    batched = runtime.compute(
        [short, "word " * 200, "A much longer sentence, padded against the short one in a batch."]
    )[0]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


# --- int8: the encoder of stored texts ------------------------------------------------------------

PASSAGES = [
    "Paris is the capital and most populous city of France.",
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Chlorophyll absorbs mostly blue and red light and reflects green.",
    "The 1998 FIFA World Cup final was played at the Stade de France.",
    "Neo4j is a graph database; its Graph Data Science library runs PageRank and Leiden.",
    "Mount Everest, on the border of Nepal and China, is Earth's highest mountain above sea level.",
    "The Nile flows north through eleven countries into the Mediterranean Sea.",
]
QUESTIONS = [  # (question, the passage that answers it)
    ("Which city is the capital of France?", 0),
    ("What is the Eiffel Tower made of?", 1),
    ("How do plants turn light into sugar?", 2),
    ("Why are leaves green?", 3),
    ("Where was the 1998 World Cup final held?", 4),
    ("Which database runs graph algorithms like PageRank?", 5),
    ("What is the tallest mountain in the world?", 6),
    ("Into which sea does the Nile flow?", 7),
]


@pytest.fixture(scope="module")
def int8() -> MiniLMEmbedder:
    return MiniLMEmbedder(runtime="onnx", precision="int8")


def test_int8_vectors_stay_close_to_the_float64_reference(int8: MiniLMEmbedder) -> None:
    """Quantised weights and activations move a vector by a few thousandths of cosine, no more."""
    texts = [*TEXTS, *PASSAGES, "Kur", "word " * 300]
    got = int8.compute(texts)
    cos = np.array([float(v @ reference_embedding(t)) for v, t in zip(got, texts, strict=True)])
    assert cos.min() > 0.97 and cos.mean() > 0.99, cos
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_int8_passages_answer_float32_questions_as_float32_passages_do(int8: MiniLMEmbedder) -> None:
    """Stored int8 vectors against float32 questions: every question's best passage is the one the
    float32 passages give, which is the passage that answers it."""
    q = get_embedder().compute([t for t, _ in QUESTIONS])
    for passages in (int8.compute(PASSAGES), get_embedder().compute(PASSAGES)):
        assert list((q @ passages.T).argmax(1)) == [i for _, i in QUESTIONS]


def test_int8_vector_is_a_function_of_the_text_alone(int8: MiniLMEmbedder) -> None:
    """One scale per activation tensor would tie a text's vector to its batch-mates; run one text at a
    time, the vector is the same bit for bit whatever is embedded with it, and on one thread or two."""
    alone = int8.compute([PASSAGES[0]])[0]
    for others in ([PASSAGES[0], "word " * 200], ["short", PASSAGES[0], *PASSAGES[3:]]):
        got = int8.compute(others)
        assert np.array_equal(got[others.index(PASSAGES[0])], alone)
    two = MiniLMEmbedder(runtime="onnx", precision="int8", threads=2).compute([PASSAGES[0]])[0]
    one = MiniLMEmbedder(runtime="onnx", precision="int8", threads=1).compute([PASSAGES[0]])[0]
    assert np.array_equal(two, alone) and np.array_equal(one, alone)


def test_int8_texts_share_the_cores_and_keep_their_vectors() -> None:
    """Several texts at int8 run side by side, one single-threaded run per core, in order; each vector
    is the one the text gets alone on the whole pool, bit for bit."""
    emb = MiniLMEmbedder(runtime="onnx", precision="int8", threads=2)
    texts = ["short", *PASSAGES, "word " * 120, "Leland, North Carolina"]
    seen: list[int] = []
    together = emb.compute(texts, progress=seen.append)
    assert emb._pool is not None and sum(seen) == len(texts)  # the workers ran them, progress counted
    for text, got in zip(texts, together, strict=True):
        assert np.array_equal(got, emb.compute([text])[0]), text


def test_float32_batches_share_the_cores_and_keep_their_vectors() -> None:
    """Several float32 batches run side by side, one single-threaded run per core (longest first),
    and give the vectors of the same batches run one after the other, bit for bit, in the texts'
    order; a single batch keeps the pool of a thread per core."""
    texts = ["short", *PASSAGES, "word " * 120, "Leland, North Carolina", "a b c", "Kure Beach"]
    side = MiniLMEmbedder(runtime="onnx", threads=2, batch_size=2)
    seen: list[int] = []
    got = side.compute(texts, progress=seen.append)
    assert side._pool is not None and sum(seen) == len(texts)
    in_turn = MiniLMEmbedder(runtime="onnx", threads=1, batch_size=2)
    assert np.array_equal(got, in_turn.compute(texts))
    assert in_turn._pool is None
    one = MiniLMEmbedder(runtime="onnx", threads=2)
    one.compute(texts[:3])  # one batch
    assert one._pool is None


def test_int8_graph_is_quantised_once_and_kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quantised graph is written whole to the model cache, and a later build reads it back
    instead of quantising again; the encoder over the kept graph gives the same vectors."""
    from graphstrata import embed, embed_onnx

    monkeypatch.setattr(embed, "_ENCODERS", type(embed._ENCODERS)())  # this test builds its own
    first = MiniLMEmbedder(runtime="onnx", precision="int8", model_cache=tmp_path)
    kept = list(tmp_path.glob("minilm-int8-*.onnx"))
    assert len(kept) == 1 and not list(tmp_path.glob("*.tmp"))

    def no_quantising(model):
        raise AssertionError("quantised again")

    monkeypatch.setattr(embed_onnx, "_quantize", no_quantising)
    # a process shares one encoder between its embedders: forget it, as a new process would start
    monkeypatch.setattr(embed, "_ENCODERS", type(embed._ENCODERS)())
    again = MiniLMEmbedder(runtime="onnx", precision="int8", model_cache=tmp_path)
    assert again._encode is not first._encode
    assert np.array_equal(again.compute(PASSAGES[:3]), first.compute(PASSAGES[:3]))
    monkeypatch.setattr(embed, "_ENCODERS", type(embed._ENCODERS)())
    with pytest.raises(AssertionError, match="quantised again"):
        MiniLMEmbedder(runtime="onnx", precision="int8", model_cache=tmp_path / "elsewhere")


def test_documents_embedder_per_precision(tmp_path) -> None:
    """``documents(p)``: float32 is the question embedder itself; int8 a sibling with a cache of its own
    (its vectors never answer for float32's), built once; numpy has no int8."""
    emb = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path, default_precision="int8")
    assert emb.documents("float32") is emb
    low = emb.documents("int8")
    assert low is emb.documents("int8") and low.precision == "int8" and low.default_precision == "int8"
    assert low.documents("float32") is emb and low.documents("int8") is low
    text = ["The Nile flows north."]
    v8, v32 = low.embed(text), emb.embed(text)
    assert emb.cache.misses == 1 and low.cache.misses == 1  # neither answered from the other
    assert not np.array_equal(v8, v32) and float(v8[0] @ v32[0]) > 0.98
    with pytest.raises(EmbeddingError, match="onnx runtime"):
        MiniLMEmbedder(runtime="numpy").documents("int8")
    with pytest.raises(EmbeddingError, match="precision"):
        MiniLMEmbedder(runtime="onnx", precision="int4")


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


# --- the vector cache ----------------------------------------------------------------------------


def fake_vectors(texts: list[str], progress=None) -> np.ndarray:
    """A deterministic stand-in model: one unit vector per text, from its hash."""
    out = np.stack(
        [
            np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")).standard_normal(8)
            for t in texts
        ]
    ).astype(np.float32)
    if progress:
        progress(len(texts))
    return out / np.linalg.norm(out, axis=1, keepdims=True)


class Counting:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: list[str], progress=None) -> np.ndarray:
        self.seen += texts
        return fake_vectors(texts, progress)


def test_cache_embeds_each_text_once_across_instances(tmp_path) -> None:
    first = Counting()
    a = VectorCache(tmp_path, "local:m", 8)
    got = a.embed(["x", "y", "x", "z"], first)
    assert first.seen == ["x", "y", "z"]  # a repeat within one call is computed once
    np.testing.assert_array_equal(got[0], got[2])
    # a new process (here: a new cache object, empty memory) reads the file
    second = Counting()
    done: list[int] = []
    b = VectorCache(tmp_path, "local:m", 8)
    again = b.embed(["z", "x", "w"], second, done.append)
    assert second.seen == ["w"]
    assert sum(done) == 3  # progress counts cached texts too
    np.testing.assert_array_equal(again[0], got[3])
    np.testing.assert_array_equal(again[1], got[0])
    # another model never sees these vectors
    other = Counting()
    VectorCache(tmp_path, "other-model", 8).embed(["x"], other)
    assert other.seen == ["x"]


def test_embedder_fills_and_reads_the_cache(tmp_path) -> None:
    emb = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path)
    texts = ["A man is eating food.", "The stock market fell sharply."]
    v = emb.embed(texts)
    assert emb.cache.misses == 2
    fresh = MiniLMEmbedder(runtime="numpy", cache_dir=tmp_path)  # same model name: same vectors
    w = fresh.embed(texts)
    assert fresh.cache.hits == 2 and fresh.cache.misses == 0
    np.testing.assert_array_equal(v, w)


def test_unusable_cache_folder_is_a_miss_not_an_error(tmp_path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    counting = Counting()
    cache = VectorCache(blocker, "local:m", 8)
    v = cache.embed(["x", "y"], counting)
    assert v.shape == (2, 8) and counting.seen == ["x", "y"]
    assert cache.path is None  # given up on, once


def _writer(folder: str, start: int) -> None:
    cache = VectorCache(Path(folder), "local:m", 8)
    for i in range(start, start + 600, 50):  # many small transactions, interleaving with the others
        cache.embed([f"text {j}" for j in range(i, i + 50)], fake_vectors)


def test_concurrent_processes_share_the_cache(tmp_path) -> None:
    """Three processes writing overlapping texts at once: every vector lands, whole and correct."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s)) for s in (0, 300, 600)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    texts = [f"text {j}" for j in range(1200)]
    reader = Counting()
    got = VectorCache(tmp_path, "local:m", 8).embed(texts, reader)
    assert reader.seen == []
    np.testing.assert_array_equal(got, fake_vectors(texts))
