"""all-MiniLM-L6-v2 as an ONNX graph built from the shipped safetensors weights, run by onnxruntime.

Why: the numpy forward pass (graphstrata/embed.py, kept as the reference) spends its time in
temporaries (softmax, GELU, layer norms each allocate and sweep the activations) and in one
BLAS call per product. onnxruntime fuses the same graph (LayerNormalization, Gelu, attention
products) into a few kernels over its own thread pool, with no torch and no exported file to
ship: the graph below is the textbook BERT encoder, written with standard ONNX operators
(opset 17), and tested against the numpy reference to cosine 0.999+ (tests/test_embed.py).

Threads. onnxruntime's default pool spins waiting for work, which on a machine whose cores
other processes hold turns into time stolen from them and from us; spinning is off, and the
pool has one thread per core this process may run on (``os.sched_getaffinity``), or
``GRAPHSTRATA_EMBED_THREADS``.

int8. :func:`quantize_int8` turns the same graph into onnxruntime's dynamically quantised one (int8
weights per output channel; each activation tensor quantised with one scale at run time, then
integer products): about twice the texts per core on this encoder, vectors at cosine ~0.995 of the
float32 ones (tests/test_embed.py). Because the activation scale spans the whole batch, a text's
vector would depend on its batch-mates; the int8 encoder is therefore run one text at a time
(graphstrata/embed.py, several texts side by side, one per core), which keeps every text's vector a
function of the text alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

OPSET = 17


def default_threads() -> int:
    env = os.environ.get("GRAPHSTRATA_EMBED_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def build_model(weights: dict[str, np.ndarray], layers: int, heads: int, eps: float):
    """The BERT encoder's ONNX ModelProto: (input_ids, attention_mask) int64 [B, N] -> hidden [B, N, D]."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list = []
    inits: list = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    w = weights
    dim = w["embeddings.word_embeddings.weight"].shape[1]
    f32 = np.float32

    def contrib(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], domain="com.microsoft", **attrs))
        return out

    def skip_layer_norm(y: str, skip: str, prefix: str, out: str) -> str:
        """LayerNorm(skip + y + dense bias) of a BERT sub-layer whose dense product is `y`."""
        g = const(prefix + ".g", w[prefix + ".LayerNorm.weight"].astype(f32))
        b = const(prefix + ".beta", w[prefix + ".LayerNorm.bias"].astype(f32))
        bias = const(prefix + ".b", w[prefix + ".dense.bias"].astype(f32))
        return contrib("SkipLayerNormalization", [y, skip, g, b, bias], out, epsilon=float(eps))

    def layer_norm(x: str, prefix: str, out: str) -> str:
        g = const(prefix + ".g", w[prefix + ".weight"].astype(f32))
        b = const(prefix + ".beta", w[prefix + ".bias"].astype(f32))
        return op("LayerNormalization", [x, g, b], out, axis=-1, epsilon=float(eps))

    # embeddings: word + position[:N] + token type 0, layer-normed
    word = op("Gather", [const("word", w["embeddings.word_embeddings.weight"].astype(f32)), "input_ids"], "emb.word")
    shape = op("Shape", ["input_ids"], "ids.shape")
    n = op("Slice", [shape, const("i1", np.array([1])), const("i2", np.array([2]))], "ids.n")
    pos = op(
        "Slice",
        [const("pos", w["embeddings.position_embeddings.weight"].astype(f32)), const("i0", np.array([0])), n],
        "emb.pos",
    )
    x = op("Add", [word, pos], "emb.wp")
    x = op("Add", [x, const("type0", w["embeddings.token_type_embeddings.weight"][0].astype(f32))], "emb.sum")
    x = layer_norm(x, "embeddings.LayerNorm", "emb.out")

    # onnxruntime's fused CPU kernels (com.microsoft contrib operators, documented in its
    # ContribOperators.md): Attention = the three projections, scaled dot-product softmax with the
    # padding mask and the head merge in one op; SkipLayerNormalization = LayerNorm(x + y + bias);
    # BiasGelu = exact erf GELU(x + bias).
    mask = op("Cast", ["attention_mask"], "mask.i32", to=TensorProto.INT32)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        s = f"l{i}."
        qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        ctx = contrib(
            "Attention",
            [x, const(s + "qkv.w", qkv_w.astype(f32)), const(s + "qkv.b", qkv_b.astype(f32)), mask],
            s + "ctx",
            num_heads=heads,
        )
        attn = op(
            "MatMul", [ctx, const(s + "attn.w", w[p + "attention.output.dense.weight"].T.astype(f32))], s + "attn"
        )
        x = skip_layer_norm(attn, x, p + "attention.output", s + "ln1")
        h = op("MatMul", [x, const(s + "inter.w", w[p + "intermediate.dense.weight"].T.astype(f32))], s + "inter")
        h = contrib("BiasGelu", [h, const(s + "inter.b", w[p + "intermediate.dense.bias"].astype(f32))], s + "gelu")
        out = op("MatMul", [h, const(s + "out.w", w[p + "output.dense.weight"].T.astype(f32))], s + "out")
        x = skip_layer_norm(out, x, p + "output", s + "ln2")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", dim])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="graphstrata",
    )
    model.ir_version = 8  # readable by every onnxruntime since 1.10
    return model


def quantize_int8(model, folder: Path | None = None) -> bytes:
    """``model`` (of :func:`build_model`) with its MatMul and Attention weights in int8 (per output
    channel, symmetric) and dynamically quantised activations: onnxruntime's ``quantize_dynamic``.
    ``folder``: where the result is kept, keyed by the float32 graph and onnxruntime's version, so
    that a later process reads it instead of quantising again (~1 s); unwritable is no error."""
    import hashlib

    import onnxruntime

    source = model.SerializeToString()
    key = hashlib.sha256(source + onnxruntime.__version__.encode()).hexdigest()[:20]
    kept = folder / f"minilm-int8-{key}.onnx" if folder is not None else None
    if kept is not None and kept.is_file():
        return kept.read_bytes()
    data = _quantize(model)
    if kept is not None:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            tmp = kept.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, kept)  # whole or absent, whatever other processes do meanwhile
        except OSError:
            pass
    return data


def _quantize(model) -> bytes:
    import logging
    import tempfile

    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def no_hint(record: logging.LogRecord) -> bool:  # it advises a pre-processing pass meant for CNNs
        return "pre-processing" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(no_hint)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(
                model,
                out,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul", "Attention"],
                per_channel=True,
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
            return out.read_bytes()
    finally:
        root.removeFilter(no_hint)


class OnnxEncoder:
    """An onnxruntime session over :func:`build_model`; ``__call__(ids, mask)`` -> hidden states.

    Two sessions over the same graph: one with a thread per core (a single batch, such as a question
    embedded while nothing else runs) and one with a single thread (``one_core=True``), for a question
    whose method parses it beside the embedding: a pool of a thread per core there waits at every
    operator for the core the parse holds (docs/configuration.md, "Embeddings offline"). Several batches run on the
    single-thread session side by side, one per core (:meth:`graphstrata.embed.MiniLMEmbedder.compute`).
    Both give the same vectors, bit for bit (tests/test_embed.py). ``int8``: the graph of
    :func:`quantize_int8` (kept in ``model_cache``)."""

    def __init__(
        self,
        weights: dict[str, np.ndarray],
        layers: int,
        heads: int,
        eps: float,
        threads: int = 0,
        int8: bool = False,
        model_cache: Path | None = None,
    ) -> None:
        proto = build_model(weights, layers, heads, eps)
        model = quantize_int8(proto, model_cache) if int8 else proto.SerializeToString()
        self.threads = threads or default_threads()
        self.session = _session(model, self.threads)
        self.single = self.session if self.threads == 1 else _session(model, 1)

    def __call__(self, ids: np.ndarray, mask: np.ndarray, one_core: bool = False) -> np.ndarray:
        session = self.single if one_core else self.session
        return session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})[0]


def _session(model: bytes, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # busy-waiting threads only pay off on cores nobody else wants
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))
