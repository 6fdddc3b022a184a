"""Embedding runtime benchmark: the numpy reference vs onnxruntime on the same texts, interleaved.

    python bench/embed.py [--passages 200] [--rounds 3]   # writes bench/results/embed.{json,md}

The texts are what an ingest of hotpotqa_dev100 embeds: each passage as a chunk ("title\\ntext"),
its sentences, and its title as a name. Both runtimes embed the whole set in every round, in
alternating order (the machine is shared: a load spike then hits both alike), with the vector
cache off. Also reported: the smallest between the two runtimes' vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

import numpy as np
from common import DATA, machine, write


def texts_of(n_passages: int) -> list[str]:
    out: list[str] = []
    with (DATA / "corpus.jsonl").open() as f:
        for line in list(f)[:n_passages]:
            doc = json.loads(line)
            out.append(f"{doc['title']}\n{doc['text']}")
            out += [s for s in re.split(r"(?<=[.!?])\s+", doc["text"]) if s.strip()]
            out.append(doc["title"])
    return list(dict.fromkeys(out))


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=200, help="passages of hotpotqa_dev100 whose texts are embedded")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each runtime embeds every text once)")
    args = ap.parse_args()

    from graphstrata.embed import MiniLMEmbedder

    texts = texts_of(args.passages)
    t = time.perf_counter()
    ref = MiniLMEmbedder(runtime="numpy")
    load_numpy = time.perf_counter() - t
    t = time.perf_counter()
    fast = MiniLMEmbedder(runtime="onnx")
    load_onnx = time.perf_counter() - t
    tokens = sum(len(e.ids) for e in fast.tokenizer.encode_batch(texts))
    runs: dict[str, list[float]] = {"numpy": [], "onnx": []}
    loads: list[float] = []
    vecs: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        for name in ("numpy", "onnx") if r % 2 == 0 else ("onnx", "numpy"):
            emb = fast if name == "onnx" else ref
            loads.append(os.getloadavg()[0])
            t = time.perf_counter()
            vecs[name] = emb.compute(texts)
            runs[name].append(time.perf_counter() - t)
            print(f"round {r + 1} {name}: {runs[name][-1]:.2f} s", flush=True)
    cos = np.sum(vecs["numpy"] * vecs["onnx"], axis=1)
    rate = {k: len(texts) / float(np.median(v)) for k, v in runs.items()}
    data = {
        "machine": machine(),
        "texts": len(texts),
        "tokens": tokens,
        "passages": args.passages,
        "rounds": args.rounds,
        "seconds": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        "texts_per_second_median": {k: round(v, 1) for k, v in rate.items()},
        "speedup_onnx_over_numpy": round(rate["onnx"] / rate["numpy"], 2),
        "min_cosine_onnx_vs_numpy": float(cos.min()),
        "load_seconds": {"numpy": round(load_numpy, 2), "onnx": round(load_onnx, 2)},
        "onnx_threads": fast._encode.threads,
        "load_average_during": [round(x, 2) for x in loads],
    }
    md = "\n".join(
        [
            "# Embedding runtime: numpy reference vs onnxruntime (all-MiniLM-L6-v2)",
            "",
            f"{machine()['cpus']} CPUs, {machine()['when']}; {len(texts)} distinct texts ({tokens} tokens) "
            f"of {args.passages} hotpotqa_dev100 passages (chunks, sentences, titles), {args.rounds} interleaved "
            f"rounds, no vector cache. 1-min load average during the runs: "
            f"{min(loads):.1f}–{max(loads):.1f} (the machine is shared).",
            "",
            "| runtime | median s | texts/s | tokens/s |",
            "|---|---|---|---|",
            *(f"| {k} | {np.median(v):.2f} | {rate[k]:.1f} | {tokens / np.median(v):.0f} |" for k, v in runs.items()),
            "",
            f"onnxruntime / numpy: **{data['speedup_onnx_over_numpy']}x** texts/s; "
            f"smallest cosine between the two runtimes' vectors: {cos.min():.7f}. "
            f"Model load: numpy {load_numpy:.2f} s, onnx {load_onnx:.2f} s (graph built from the safetensors).",
            "",
        ]
    )
    write("embed", data, md)
    return data


if __name__ == "__main__":
    main()
