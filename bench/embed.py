"""Embedding runtime benchmark: the numpy reference vs onnxruntime (float32, and the int8 encoder of
stored texts) on the same texts, interleaved.

    python bench/embed.py [--passages 200] [--rounds 3]   # writes bench/results/embed.{json,md}

The texts are what an ingest of hotpotqa_dev100 embeds: each passage as a chunk ("title\\ntext"),
its sentences, and its title as a name. Both runtimes embed the whole set in every round, in
alternating order (the machine is shared: a load spike then hits both alike), with the vector
cache off. Also reported: the smallest (and mean) cosine between each runtime's vectors and the numpy
reference's.
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
    loaders = {
        "numpy": lambda: MiniLMEmbedder(runtime="numpy"),
        "onnx": lambda: MiniLMEmbedder(runtime="onnx"),
        "onnx-int8": lambda: MiniLMEmbedder(runtime="onnx", precision="int8"),
    }
    models, load = {}, {}
    for name, make in loaders.items():
        t = time.perf_counter()
        models[name] = make()
        load[name] = time.perf_counter() - t
    tokens = sum(len(e.ids) for e in models["onnx"].tokenizer.encode_batch(texts))
    runs: dict[str, list[float]] = {k: [] for k in models}
    loads: list[float] = []
    vecs: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        order = list(models) if r % 2 == 0 else list(reversed(models))
        for name in order:
            loads.append(os.getloadavg()[0])
            t = time.perf_counter()
            vecs[name] = models[name].compute(texts)
            runs[name].append(time.perf_counter() - t)
            print(f"round {r + 1} {name}: {runs[name][-1]:.2f} s", flush=True)
    cos = {k: np.sum(vecs["numpy"] * v, axis=1) for k, v in vecs.items() if k != "numpy"}
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
        "speedup_int8_over_numpy": round(rate["onnx-int8"] / rate["numpy"], 2),
        "speedup_int8_over_onnx": round(rate["onnx-int8"] / rate["onnx"], 2),
        "min_cosine_onnx_vs_numpy": float(cos["onnx"].min()),
        "min_cosine_int8_vs_numpy": float(cos["onnx-int8"].min()),
        "mean_cosine_int8_vs_numpy": float(cos["onnx-int8"].mean()),
        "load_seconds": {k: round(v, 2) for k, v in load.items()},
        "onnx_threads": models["onnx"]._encode.threads,
        "load_average_during": [round(x, 2) for x in loads],
    }
    md = "\n".join(
        [
            "# Embedding runtime: numpy reference vs onnxruntime (all-MiniLM-L6-v2)",
            "",
            f"{machine()['cpus']} CPUs, {machine()['when']}; {len(texts)} distinct texts ({tokens} tokens) "
            f"of {args.passages} hotpotqa_dev100 passages (chunks, sentences, titles), {args.rounds} interleaved "
            f"rounds, no vector cache. 1-min load average during the runs: "
            f"{min(loads):.1f}–{max(loads):.1f}.",
            "",
            "| runtime | median s | texts/s | tokens/s | cosine to numpy (min / mean) |",
            "|---|---|---|---|---|",
            *(
                f"| {k} | {np.median(v):.2f} | {rate[k]:.1f} | {tokens / np.median(v):.0f} | "
                + (f"{cos[k].min():.7f} / {cos[k].mean():.7f}" if k in cos else "-")
                + " |"
                for k, v in runs.items()
            ),
            "",
            f"onnxruntime / numpy: **{data['speedup_onnx_over_numpy']}x** texts/s; the int8 encoder (one text "
            f"per run, for stored texts) {data['speedup_int8_over_numpy']}x numpy's, "
            f"{data['speedup_int8_over_onnx']}x float32 onnx's. Model load: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in load.items())
            + " (the onnx graphs built from the safetensors, int8's quantised too).",
            "",
        ]
    )
    write("embed", data, md)
    return data


if __name__ == "__main__":
    main()
