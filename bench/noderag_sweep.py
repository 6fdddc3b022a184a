"""NodeRAG parameter sweep on hotpotqa_dev100, with `vector` in the same run.

    python bench/noderag_sweep.py [--entry-k 3,5,10,20] [--cross-k 5,10]   # bench/results/noderag_sweep.{json,md}

The paper fixes alpha = 0.5 and t = 2 but leaves the number of similarity entry points (k) and of
cross nodes per type open; this shows how Recall@k and Coverage move with them. Every row is also
scored on the two halves of the question set (A = first 50, B = last 50): a setting that wins on
one half only is noise, not a choice.
"""

from __future__ import annotations

import argparse
import json

from common import DATA, machine, open_graph, write
from retrieval import COVERAGE_BUDGET, ensure_corpus, measure, summarize


def row(gs, method: str, questions: list[dict], **params) -> dict:
    per_question = measure(gs, method, questions, **params)  # the halves are scored from the same run
    out = {"method": method, "params": params, "all": summarize(per_question)}
    for half, rows in (("A", per_question[:50]), ("B", per_question[50:])):
        r = summarize(rows)
        out[half] = {k: r[k] for k in ("recall@2", "recall@5", "coverage")}
    return out


def main(top_ks: list[int], cross_ks: list[int]) -> dict:
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").read_text().splitlines() if line.strip()]
    with open_graph() as gs:
        ensure_corpus(gs)
        rows = [row(gs, "vector", questions)]
        rows += [row(gs, "noderag", questions, entry_k=k, cross_k=c) for k in top_ks for c in cross_ks]
    md = [
        "# NodeRAG sweep (hotpotqa_dev100, no LLM; alpha = 0.5, t = 2)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}. A/B: first/last 50 questions. "
        f"Coverage within {COVERAGE_BUDGET} tokens.",
        "",
        "| method | entry_k | cross_k | Recall@2 | Recall@5 | Coverage | R@5 A | R@5 B | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, p = r["all"], r["params"]
        md.append(
            f"| {r['method']} | {p.get('entry_k', '')} | {p.get('cross_k', '')} | {a['recall@2']:.3f} | "
            f"{a['recall@5']:.3f} | {a['coverage']:.3f} | {r['A']['recall@5']:.3f} | {r['B']['recall@5']:.3f} | "
            f"{a['p50_ms']:.1f} |"
        )
    data = {"machine": machine(), "rows": rows}
    write("noderag_sweep", data, "\n".join(md) + "\n")
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entry-k", default="3,5,10,20", help="similarity entry points k (comma-separated)")
    ap.add_argument("--cross-k", default="5,10", help="cross nodes per type (comma-separated)")
    a = ap.parse_args()
    main([int(x) for x in a.entry_k.split(",")], [int(x) for x in a.cross_k.split(",")])
