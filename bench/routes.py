"""The evidence for ``auto``'s routes: every dev question's kind (its shape only, as
graphstrata.retrieval.auto.question_kind computes it at query time) beside each method's Recall@5 on it,
from the per-question results of bench/graphs.py:

    python bench/routes.py [--results graphs]

Writes bench/results/routes.{md,json}: per kind and graph, the questions and each method's mean
Recall@5 and Coverage, and per kind the method with the best mean Recall@5 over all the dev graphs'
questions of that kind (the route auto takes; ties to the earlier method of graphs.DEFAULT_METHODS).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
from common import RESULTS
from graphs import DEFAULT_METHODS, questions_of

from graphstrata.retrieval.auto import question_kind, question_shape

#: rows that are no single method a route could take
NOT_ROUTES = {"auto", "fusion", "fusion-graph", "fusion-all"}


def main(results: str) -> dict:
    per_q: dict[str, dict[str, dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))  # graph -> method -> id
    for line in (RESULTS / f"{results}-questions.jsonl").read_text().splitlines():
        r = json.loads(line)
        per_q[r["graph"]][r["method"]][r["id"]] = r
    kinds: dict[str, dict[str, str]] = {}
    for graph in per_q:
        kinds[graph] = {q["id"]: question_kind(question_shape(q["question"])) for q in questions_of(graph)}
    methods = [m for m in DEFAULT_METHODS if "@" not in m and m not in NOT_ROUTES]
    # a route is a method at its defaults: no variant rows (name@variant)
    methods += sorted({m for g in per_q.values() for m in g if "@" not in m} - set(methods) - NOT_ROUTES)
    table: dict[str, dict] = {}
    for kind in sorted({k for g in kinds.values() for k in g.values()}):
        row: dict = {"graphs": {}, "overall": {}}
        pooled: dict[str, list[float]] = defaultdict(list)
        for graph, ks in kinds.items():
            ids = [i for i, k in ks.items() if k == kind]
            cells = {}
            for m in methods:
                got = [per_q[graph][m][i] for i in ids if i in per_q[graph].get(m, {})]
                if got and len(got) == len(ids):
                    cells[m] = round(float(np.mean([g["r5"] for g in got])), 3)
                    pooled[m] += [g["r5"] for g in got]
            row["graphs"][graph] = {"questions": len(ids), "recall@5": cells}
        n = max((len(v) for v in pooled.values()), default=0)
        row["overall"] = {m: round(float(np.mean(v)), 3) for m, v in pooled.items() if len(v) == n and n}
        row["questions"] = n
        row["best"] = max(row["overall"], key=lambda m: (row["overall"][m], -methods.index(m))) if n else None
        table[kind] = row
    out = {"results": results, "kinds": table}
    (RESULTS / "routes.json").write_text(json.dumps(out, indent=2))
    md = [
        "# auto: the measured wins per question kind",
        "",
        f"From `bench/results/{results}-questions.jsonl` (bench/graphs.py). A question's kind is its shape only "
        "(graphstrata.retrieval.auto.question_kind); the route of a kind is the method with the best mean "
        "Recall@5 over every dev graph's questions of that kind.",
        "",
    ]
    for kind, row in table.items():
        md += [f"## {kind} ({row['questions']} questions over the graphs) → **{row['best']}**", ""]
        md += ["| method | " + " | ".join(f"{g} ({v['questions']})" for g, v in row["graphs"].items()) + " | all |"]
        md += ["|---" * (len(row["graphs"]) + 2) + "|"]
        for m in row["overall"]:
            cells = [str(v["recall@5"].get(m, "-")) for v in row["graphs"].values()]
            md.append(f"| {m} | " + " | ".join(cells) + f" | {row['overall'][m]} |")
        md.append("")
    (RESULTS / "routes.md").write_text("\n".join(md))
    print("\n".join(md))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="graphs", help="stem of the bench/graphs.py results (default: graphs)")
    main(ap.parse_args().results)
