"""Retrieval benchmark on hotpotqa_dev100: every method, same graph, same run.

    python bench/retrieval.py [--methods vector,fulltext,...]   # bench/results/retrieval.{json,md}

Recall@k: share of a question's gold supporting passages among the first k distinct passages
(chunks) a method returns. Coverage: share of questions whose gold answer string occurs in the
context packed into COVERAGE_BUDGET tokens (KET-RAG's measure; yes/no answers reported apart).
Latency: wall time of `retrieve`, p50/p95 over the 100 questions, after one warm-up query.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from common import DATA, machine, open_graph, write

from graphstrata.retrieval.base import available_methods

COVERAGE_BUDGET = 1000


def ensure_corpus(gs) -> None:
    n = gs.db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"]
    if n < 994:
        print("ingesting the corpus first (bench/ingest.py measures that)")
        gs.ingest([DATA / "corpus.jsonl"])


def measure(gs, method: str, questions: list[dict], **params) -> list[dict]:
    """One row per question: recall, coverage hit, tokens, latency (and DA-RAG's selected communities)."""
    titles = {r["id"]: r["t"] for r in gs.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.doc_title AS t")}
    params = {"top_k": 10, "budget": COVERAGE_BUDGET} | params
    gs.retrieve(questions[0]["question"], method, **params)  # warm-up
    # Every method pays for embedding its questions: no vectors cached by the method run before.
    getattr(gs.embedder, "clear_cache", lambda: None)()
    rows = []
    for q in questions:
        t = time.perf_counter()
        res = gs.retrieve(q["question"], method, **params)
        ms = (time.perf_counter() - t) * 1000
        ranked = list(dict.fromkeys(titles.get(c) for c in res.chunk_ids()))
        gold = set(q["supporting_titles"])
        rows.append(
            {
                "r2": len(gold & set(ranked[:2])) / len(gold),
                "r5": len(gold & set(ranked[:5])) / len(gold),
                "hit": q["answer"].lower() in " ".join(i.text for i in res.items).lower(),
                "yes_no": q["answer"].lower() in ("yes", "no"),
                "tokens": res.tokens,
                "ms": ms,
                "communities": [
                    c for c in res.notes.get("communities", []) if isinstance(c, dict) and c.get("selected")
                ],
            }
        )
    return rows


def summarize(rows: list[dict]) -> dict:
    """The benchmark's measures over a set of per-question rows (Coverage over non-yes/no questions)."""
    cov_text = [r["hit"] for r in rows if not r["yes_no"]]
    communities = [c for r in rows for c in r["communities"]]  # DA-RAG's (Appendix B.3 quality metrics)
    quality = {}
    if communities:
        quality = {
            f"community_{k}": round(float(np.mean([c[k] for c in communities if c.get(k) is not None])), 3)
            for k in ("size", "qrscore", "density", "diameter")
            if any(c.get(k) is not None for c in communities)
        }
        quality["communities"] = len(communities)
    ms = [r["ms"] for r in rows]
    return quality | {
        "recall@2": round(float(np.mean([r["r2"] for r in rows])), 3),
        "recall@5": round(float(np.mean([r["r5"] for r in rows])), 3),
        "coverage": round(float(np.mean(cov_text)), 3),
        "coverage_questions": len(cov_text),
        "mean_tokens": round(float(np.mean([r["tokens"] for r in rows])), 1),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
    }


def evaluate(gs, method: str, questions: list[dict], **params) -> dict:
    return summarize(measure(gs, method, questions, **params))


def main(methods: list[str]) -> dict:
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").read_text().splitlines() if line.strip()]
    with open_graph() as gs:
        ensure_corpus(gs)
        rows = {m: evaluate(gs, m, questions) for m in methods}
    md = [
        "# Retrieval benchmark (hotpotqa_dev100, 100 questions over the pooled 994 passages, no LLM)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}. Coverage: gold answer string within {COVERAGE_BUDGET} "
        "context tokens, over the questions whose answer is not yes/no.",
        "",
        "| method | Recall@2 | Recall@5 | Coverage | mean tokens | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {m} | {r['recall@2']:.3f} | {r['recall@5']:.3f} | {r['coverage']:.3f} | {r['mean_tokens']:.0f} | "
            f"{r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
            for m, r in rows.items()
        ],
        "",
    ]
    for m, r in rows.items():
        if "communities" in r:
            md.append(
                f"{m} communities (Appendix B.3, selected, n={r['communities']}): "
                + ", ".join(f"{k.removeprefix('community_')} {v}" for k, v in r.items() if k.startswith("community_"))
            )
    data = {"machine": machine(), "coverage_budget": COVERAGE_BUDGET, "methods": rows}
    write("retrieval", data, "\n".join(md))
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(available_methods()), help="comma-separated method names")
    main(ap.parse_args().methods.split(","))
