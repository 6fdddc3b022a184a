"""How far int8 can take the encoder on this CPU: float32 against onnxruntime's per-tensor int8 (the
product's encoder of sentence-level texts) and per-row int8 variants, on the texts of bench/embed.py.

    python bench/embed_variants.py [--passages 200]   # writes bench/results/embed_variants.{json,md}

Per-row int8 (not in the product): each row (token) of a product's input is divided by its largest
magnitude, quantised to uint8 with one fixed scale (so a text's vector never depends on its batch),
multiplied by the int8 weights (per output channel) in onnxruntime's ``MatMulIntegerToFloat``, and
scaled back by the row's magnitude. Variants: the attention-output and feed-forward products only
(Q, K, V in float32 inside the fused Attention), or the Q/K/V projection too (then
``MultiHeadAttention`` over its outputs). Each variant runs on one thread, batches as the product
makes them; CPU seconds and cosine to the float32 vectors. Also: the machine's float32 GEMM rate
(numpy, one and two threads), against which the float32 encoder's rate is read.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import machine, write
from embed import texts_of

F32 = np.float32


def _build(w: dict, layers: int, heads: int, eps: float, mode: str):
    """The encoder of graphstrata.embed_onnx.build_model with its products per ``mode``: "float32",
    "row" (attention output and feed-forward in per-row int8) or "row+qkv" (Q/K/V too)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind, inputs, out, domain="", **attrs):
        nodes.append(helper.make_node(kind, inputs, [out], name=out, domain=domain, **attrs))
        return out

    ms = "com.microsoft"
    const("a.scale", np.array(1.0 / 127, dtype=F32))
    const("a.zp", np.array(128, dtype=np.uint8))

    def matmul(x, W, name, int8):
        if not int8:
            return op("MatMul", [x, const(name + ".w", W.astype(F32))], name)
        s = np.abs(W).max(0) / 127
        q = np.clip(np.round(W / s), -127, 127).astype(np.int8)
        r = op("ReduceMax", [op("Abs", [x], name + ".abs")], name + ".rmax", axes=[-1], keepdims=1)
        r = op("Max", [r, const(name + ".tiny", np.array(1e-12, dtype=F32))], name + ".r")
        xq = op("QuantizeLinear", [op("Div", [x, r], name + ".xn"), "a.scale", "a.zp"], name + ".xq")
        y = op(
            "MatMulIntegerToFloat",
            [xq, const(name + ".q", q), "a.scale", const(name + ".s", s.astype(F32)), "a.zp"],
            name + ".y",
            domain=ms,
        )
        return op("Mul", [y, r], name)

    def skip_ln(y, skip, prefix, out):
        g, b = w[prefix + ".LayerNorm.weight"], w[prefix + ".LayerNorm.bias"]
        ins = [
            y,
            skip,
            const(prefix + ".g", g),
            const(prefix + ".beta", b),
            const(prefix + ".b", w[prefix + ".dense.bias"]),
        ]
        return op("SkipLayerNormalization", ins, out, domain=ms, epsilon=float(eps))

    n = op("Slice", [op("Shape", ["input_ids"], "shape"), const("i1", np.array([1])), const("i2", np.array([2]))], "n")
    pos = op(
        "Slice", [const("pos", w["embeddings.position_embeddings.weight"]), const("i0", np.array([0])), n], "pos.n"
    )
    x = op(
        "Add", [op("Gather", [const("word", w["embeddings.word_embeddings.weight"]), "input_ids"], "word.n"), pos], "wp"
    )
    x = op("Add", [x, const("type0", w["embeddings.token_type_embeddings.weight"][0])], "emb")
    ln = [const("eg", w["embeddings.LayerNorm.weight"]), const("eb", w["embeddings.LayerNorm.bias"])]
    x = op("LayerNormalization", [x, *ln], "emb.ln", axis=-1, epsilon=float(eps))
    mask = op("Cast", ["attention_mask"], "mask", to=TensorProto.INT32)
    dim = w["embeddings.word_embeddings.weight"].shape[1]
    for i in range(layers):
        p, s = f"encoder.layer.{i}.", f"l{i}."
        qkv_w = np.concatenate([w[p + f"attention.self.{k}.weight"].T for k in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[p + f"attention.self.{k}.bias"] for k in ("query", "key", "value")]).astype(F32)
        if mode == "row+qkv":
            qkv = matmul(x, qkv_w, s + "qkv", True)
            split = const(s + "split", np.array([dim] * 3))
            nodes.append(
                helper.make_node("Split", [qkv, split], [s + "Q", s + "K", s + "V"], name=s + "split", axis=-1)
            )
            ins = [s + "Q", s + "K", s + "V", const(s + "qkv.b", qkv_b), mask]
            ctx = op("MultiHeadAttention", ins, s + "ctx", domain=ms, num_heads=heads)
        else:
            ins = [x, const(s + "qkv.w", qkv_w.astype(F32)), const(s + "qkv.b", qkv_b), mask]
            ctx = op("Attention", ins, s + "ctx", domain=ms, num_heads=heads)
        int8 = mode != "float32"
        x = skip_ln(
            matmul(ctx, w[p + "attention.output.dense.weight"].T, s + "attn", int8),
            x,
            p + "attention.output",
            s + "ln1",
        )
        h = matmul(x, w[p + "intermediate.dense.weight"].T, s + "inter", int8)
        h = op("BiasGelu", [h, const(s + "inter.b", w[p + "intermediate.dense.bias"])], s + "gelu", domain=ms)
        x = skip_ln(matmul(h, w[p + "output.dense.weight"].T, s + "out", int8), x, p + "output", s + "ln2")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes,
        "variant",
        [helper.make_tensor_value_info(k, TensorProto.INT64, ["b", "n"]) for k in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["b", "n", dim])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])
    model.ir_version = 8
    return model.SerializeToString()


def gemm_rate(threads: int) -> float:
    """numpy's float32 GEMM at the encoder's feed-forward shape (2048 tokens x 384 -> 1536), GFLOP/s."""
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).random((2048, 384), dtype=F32)
    b = np.random.default_rng(1).random((384, 1536), dtype=F32)
    with threadpool_limits(threads):
        a @ b
        t = time.perf_counter()
        for _ in range(20):
            a @ b
        return 2 * 2048 * 384 * 1536 * 20 / (time.perf_counter() - t) / 1e9


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=200, help="passages of hotpotqa_dev100 whose texts are embedded")
    args = ap.parse_args()

    from safetensors.numpy import load_file

    from graphstrata.embed import MiniLMEmbedder, model_dir
    from graphstrata.embed_onnx import _session

    texts = texts_of(args.passages)
    w = {k: v for k, v in load_file(str(model_dir() / "model.safetensors")).items() if v.dtype == F32}
    rows: dict[str, dict] = {}
    ref = None
    for name in ("float32", "per-tensor int8 (product)", "row", "row+qkv"):
        if name == "per-tensor int8 (product)":
            emb = MiniLMEmbedder(runtime="onnx", precision="int8", threads=1)
        else:
            emb = MiniLMEmbedder(runtime="onnx", threads=1)
            session = _session(_build(w, emb.layers, emb.heads, emb.eps, name), 1)
            emb._encode = lambda ids, mask, one_core=False, s=session: s.run(
                ["hidden"], {"input_ids": ids, "attention_mask": mask}
            )[0]
        t = time.process_time()
        vecs = emb.compute(texts)
        cpu = time.process_time() - t
        ref = vecs if ref is None else ref
        cos = np.sum(vecs * ref, axis=1)
        rows[name] = {"cpu_seconds": round(cpu, 2), "cos_min": float(cos.min()), "cos_mean": float(cos.mean())}
        print(name, rows[name], flush=True)
    base = rows["float32"]["cpu_seconds"]
    gemm = {t: round(gemm_rate(t), 1) for t in (1, 2)}
    tokens = sum(len(e.ids) for e in MiniLMEmbedder(runtime="onnx", threads=1).tokenizer.encode_batch(texts))
    data = {"machine": machine(), "texts": len(texts), "tokens": tokens, "one_thread": rows, "numpy_gemm_gflops": gemm}
    md = [
        "# int8 variants of the encoder, one thread (all-MiniLM-L6-v2)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}; {len(texts)} texts ({tokens} tokens) of {args.passages} "
        "hotpotqa_dev100 passages (bench/embed.py's), batched as the product batches them.",
        "",
        "| encoder | CPU s | speed vs float32 | cosine to float32 (min / mean) |",
        "|---|---|---|---|",
        *(
            f"| {k} | {v['cpu_seconds']:.2f} | {base / v['cpu_seconds']:.2f}x | "
            f"{v['cos_min']:.5f} / {v['cos_mean']:.5f} |"
            for k, v in rows.items()
        ),
        "",
        f"numpy float32 GEMM at 2048x384x1536: {gemm[1]} GFLOP/s on one thread, {gemm[2]} on two. The encoder's "
        f"dense products are {2 * 6 * (4 * 384 * 384 + 2 * 384 * 1536) / 1e6:.1f} MFLOP per token.",
        "",
    ]
    write("embed_variants", data, "\n".join(md))
    return data


if __name__ == "__main__":
    main()
