"""E2GraphRAG retrieval latency next to `vector`, interleaved question by question (issue #8's goal:
p50 within 3x of `vector` in the same run), on hotpotqa_dev100 in the shared `bench` graph.

    python bench/e2_latency.py [--repeats 3] [--warmup 10]   # bench/results/e2_latency.{json,md}

Both methods answer each question back to back, the one that goes first alternating, so that load
from other processes on the (shared, 2-core) machine falls on both alike. Before each of these
calls the embedder's in-process cache is cleared, as bench/retrieval.py does: a new question has
to be embedded, and `vector` and e2graphrag's global branches embed the same question, so neither
may reuse the other's vector. Parameters are bench/retrieval.py's (top_k 10, budget 1000).

A third call per question, `vector` again with its question's embedding still cached, is reported
apart ("vector, embedding cached"): it is the graph half of `vector` alone (vector query, packing),
the number a comparison gets when the cache is not cleared between runs.

Reported per repeat: p50 / p95 of the wall time of `retrieve` for each, the ratio e2graphrag /
vector of the p50s and of the p95s, the load average, e2graphrag's per-stage medians (its
`timings_ms`; "other" is the rest of the call: parameter checks, formatting, result building),
its branches, and Recall@2 / Recall@5. Then the spread over the repeats. Read-only: the graph is
neither wiped nor written.

`--blas-threads N` pins numpy's OpenBLAS (the embedder) to N threads; by default the environment is
left as it is, as in bench/retrieval.py (OpenBLAS then starts one thread per core, and when other
processes hold the cores those threads wait on each other: `vector`'s embedding gets much slower).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from latency import BASELINE, CACHED, interleaved, percentile, spread

METHOD = "e2graphrag"
PARAMS = {"top_k": 10, "budget": 1000}  # as bench/graphs.py's


def recall(ranked_titles: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked_titles[:k])) / len(gold)


def one_repeat(gs, questions: list[dict], titles: dict[str, str]) -> dict:
    """Every question once per method (the first alternating), then `vector` with a warm cache."""

    def score(res, q: dict) -> dict:
        ranked = list(dict.fromkeys(titles.get(c) for c in res.chunk_ids()))
        gold = set(q["supporting_titles"])
        return {"r2": recall(ranked, gold, 2), "r5": recall(ranked, gold, 5)}

    load_before = os.getloadavg()[0]
    calls = interleaved(gs, questions, [METHOD], lambda m: (m, PARAMS), score, cached=True)
    summary = {m: c.summary() for m, c in calls.items()}
    out: dict = {m: {"p50_ms": s["p50_ms"], "p95_ms": s["p95_ms"]} for m, s in summary.items()}
    for m in (BASELINE, METHOD):
        out[m] |= {"recall@2": summary[m]["recall@2"], "recall@5": summary[m]["recall@5"]}
    return out | {
        "ratio_p50": summary[METHOD]["ratio_p50"],
        "ratio_p95": summary[METHOD]["ratio_p95"],
        "ratio_p50_vs_cached": round(out[METHOD]["p50_ms"] / out[CACHED]["p50_ms"], 2),
        "stages": summary[METHOD]["stages"],
        "branches": summary[METHOD].get("branches", {}),
        "load_avg": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "ms": {m: c.ms for m, c in calls.items()},
    }


def report(runs: list[dict], n_questions: int, warmup: int, blas_threads: int, when: str, cpus: int) -> str:
    b, m, c = BASELINE, METHOD, CACHED
    last = runs[-1]
    ratios = [x["ratio_p50"] for x in runs]
    return "\n".join(
        [
            f"# {m} vs {b} latency (hotpotqa_dev100, {n_questions} questions, interleaved)",
            "",
            f"{cpus} CPUs (shared with other work), {when}; top_k {PARAMS['top_k']}, budget {PARAMS['budget']}; "
            f"{warmup} warm-up questions, then {len(runs)} repeats; embedder cache cleared before each {b} and "
            f"{m} call; OpenBLAS threads: {blas_threads or 'default (one per core)'}. Times in ms.",
            "",
            f"| repeat | {b} p50 | {b} p95 | {m} p50 | {m} p95 | ratio p50 | ratio p95 | {c} p50 | load avg |",
            "|---|---|---|---|---|---|---|---|---|",
            *[
                f"| {i} | {x[b]['p50_ms']} | {x[b]['p95_ms']} | {x[m]['p50_ms']} | {x[m]['p95_ms']} "
                f"| {x['ratio_p50']} | {x['ratio_p95']} | {x[c]['p50_ms']} | {x['load_avg'][0]} → {x['load_avg'][1]} |"
                for i, x in enumerate(runs, 1)
            ],
            "",
            f"Ratio of the p50s ({m} / {b}) over the repeats: min {min(ratios)}, median "
            f"{round(statistics.median(ratios), 2)}, max {max(ratios)}. Against {c}: "
            + ", ".join(str(x["ratio_p50_vs_cached"]) for x in runs)
            + ".",
            "",
            f"{m} stages (last repeat, median ms over the questions that ran them): "
            + ", ".join(f"{k} {v['median_ms']} (n={v['n']})" for k, v in last["stages"].items())
            + f". Branches: {last['branches']}.",
            "",
            "Recall: "
            + "; ".join(f"{x} R@2 {last[x]['recall@2']:.3f}, R@5 {last[x]['recall@5']:.3f}" for x in (b, m))
            + ".",
            "",
        ]
    )


def main(repeats: int, warmup: int, limit: int | None, blas_threads: int) -> dict:
    if blas_threads:  # before numpy is imported (by common): OpenBLAS reads it when it loads
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ[var] = str(blas_threads)
    from common import DATA, machine, open_graph, write

    lines = (DATA / "questions.jsonl").read_text().splitlines()
    questions = [json.loads(line) for line in lines if line.strip()][:limit]
    runs = []
    with open_graph() as gs:
        titles = {r["id"]: r["t"] for r in gs.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.doc_title AS t")}
        for q in questions[:warmup]:  # loads spaCy and the embedder, warms the driver and the server's plans
            for method in (BASELINE, METHOD):
                gs.retrieve(q["question"], method, **PARAMS)
        for r in range(repeats):
            runs.append(one_repeat(gs, questions, titles))
            x = runs[-1]
            print(
                f"repeat {r + 1}: {BASELINE} p50 {x[BASELINE]['p50_ms']} ms, {METHOD} p50 {x[METHOD]['p50_ms']} ms, "
                f"ratio {x['ratio_p50']}; {CACHED} p50 {x[CACHED]['p50_ms']} ms (load {x['load_avg']})",
                flush=True,
            )
    ratios = [x["ratio_p50"] for x in runs]
    pooled = {m: [v for x in runs for v in x["ms"][m]] for m in (BASELINE, METHOD, CACHED)}
    summary = {
        "ratio_p50": spread(ratios),
        "ratio_p50_vs_cached": spread([x["ratio_p50_vs_cached"] for x in runs]),
        "pooled": {m: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)} for m, v in pooled.items()},
        "within_3x_in_every_repeat": all(r <= 3 for r in ratios),
    }
    info = machine()
    data = {
        "machine": info,
        "params": PARAMS,
        "warmup": warmup,
        "blas_threads": blas_threads or None,
        "repeats": [{k: v for k, v in x.items() if k != "ms"} for x in runs],
        "summary": summary,
    }
    write("e2_latency", data, report(runs, len(questions), warmup, blas_threads, info["when"], info["cpus"]))
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="passes over the questions (default 3)")
    ap.add_argument("--warmup", type=int, default=10, help="questions asked of both methods before timing (default 10)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions (quick checks)")
    ap.add_argument("--blas-threads", type=int, default=0, help="pin OpenBLAS to N threads (default: leave as is)")
    args = ap.parse_args()
    main(args.repeats, args.warmup, args.limit, args.blas_threads)
