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


def _per_row(model, qkv: bool) -> bytes:
    """``model`` (graphstrata.embed_onnx.build_model's float32 encoder) with its MatMul products in
    per-row int8, and with ``qkv`` its fused Attention's Q/K/V projection too (then
    ``MultiHeadAttention`` over the projection's three parts)."""
    from onnx import helper, numpy_helper

    g = model.graph
    weights = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    used: set[str] = set()
    nodes: list = []
    inits: list = [
        numpy_helper.from_array(np.array(1.0 / 127, dtype=F32), "a.scale"),
        numpy_helper.from_array(np.array(128, dtype=np.uint8), "a.zp"),
    ]

    def op(kind, inputs, out, domain="", **attrs):
        nodes.append(helper.make_node(kind, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def row_int8(x: str, W: np.ndarray, out: str) -> str:
        s = np.abs(W).max(0) / 127
        inits.append(numpy_helper.from_array(np.clip(np.round(W / s), -127, 127).astype(np.int8), out + ".q"))
        inits.append(numpy_helper.from_array(s.astype(F32), out + ".s"))
        inits.append(numpy_helper.from_array(np.array(1e-12, dtype=F32), out + ".tiny"))
        r = op("ReduceMax", [op("Abs", [x], out + ".abs")], out + ".rmax", axes=[-1], keepdims=1)
        r = op("Max", [r, out + ".tiny"], out + ".r")
        xq = op("QuantizeLinear", [op("Div", [x, r], out + ".xn"), "a.scale", "a.zp"], out + ".xq")
        ins = [xq, out + ".q", "a.scale", out + ".s", "a.zp"]
        return op("Mul", [op("MatMulIntegerToFloat", ins, out + ".y", domain="com.microsoft"), r], out)

    for node in g.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            used.add(node.input[1])
            row_int8(node.input[0], weights[node.input[1]], node.output[0])
        elif node.op_type == "Attention" and qkv:
            x, w, b, mask = node.input
            used.add(w)
            out = node.output[0]
            part = weights[w].shape[1] // 3
            inits.append(numpy_helper.from_array(np.array([part] * 3), out + ".split"))
            qkv_out = row_int8(x, weights[w], out + ".qkv")
            parts = [out + ".Q", out + ".K", out + ".V"]
            nodes.append(helper.make_node("Split", [qkv_out, out + ".split"], parts, name=out + ".split", axis=-1))
            heads = next(a.i for a in node.attribute if a.name == "num_heads")
            op("MultiHeadAttention", [*parts, b, mask], out, domain="com.microsoft", num_heads=heads)
        else:
            nodes.append(node)
    kept = [t for t in g.initializer if t.name not in used]
    graph = helper.make_graph(nodes, "per-row int8", list(g.input), list(g.output), kept + inits)
    variant = helper.make_model(graph, opset_imports=list(model.opset_import))
    variant.ir_version = model.ir_version
    return variant.SerializeToString()


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
    from graphstrata.embed_onnx import _session, build_model

    texts = texts_of(args.passages)
    w = {k: v for k, v in load_file(str(model_dir() / "model.safetensors")).items() if v.dtype == F32}
    rows: dict[str, dict] = {}
    ref = None
    for name in ("float32", "per-tensor int8 (product)", "row", "row+qkv"):
        emb = MiniLMEmbedder(runtime="onnx", precision="int8" if "per-tensor" in name else "float32", threads=1)
        if name.startswith("row"):
            variant = _per_row(build_model(w, emb.layers, emb.heads, emb.eps), qkv=name == "row+qkv")
            session = _session(variant, 1)
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
