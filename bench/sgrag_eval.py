"""Multi-constraint evaluation set generated from the ingested graph (issue 10), sgrag vs others.

    python bench/sgrag_eval.py [--n 50] [--methods sgrag,sgrag-oracle,vector,noderag] [--seed 0]
    # → bench/results/sgrag_eval.{json,md}

Question generation: sample an answer entity with >= 2 RELATED neighbours, sample 2–5 of its
relations (distinct neighbours) and phrase them as a question ("Which <type> <predicate> <B>, and
that <C> <predicate> …?"). The gold answer set is every entity satisfying all sampled constraints
(same predicate, direction and neighbour), computed by Cypher — usually just the sampled entity.

Scoring is the same for every method and uses only the retrieved context (no answer LLM):
candidates = the gold answers plus every entity related to a constraint entity (the confusable
ones); the method's predicted answers are the candidates whose name occurs in the context
(minus the constraint entities themselves). Precision / recall of that set against the gold set;
Hit@1: the candidate named first in the context is a gold answer.

`sgrag` builds its query graph from the question (LLM when configured, spaCy otherwise);
`sgrag-oracle` is given the generated query graph (exact predicates, matched with
match_relations and directed), i.e. the matching step alone.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time

import numpy as np
from common import machine, open_graph, write

from graphstrata.cypher import query


def generate(gs, n: int, seed: int) -> list[dict]:
    rows = gs.db.read(query("sgrag.eval_answers"), min=2)
    rng = random.Random(seed)
    rng.shuffle(rows)
    out = []
    for a in rows:
        if len(out) >= n:
            break
        rels = [r for r in a["rels"] if r["name"] and r["name"].lower() != a["name"].lower()]
        if len(rels) < 2:
            continue
        k = rng.randint(2, min(5, len(rels)))
        chosen = rng.sample(rels, k)
        constraints = [{"id": r["id"], "predicate": r["predicate"], "out": r["out"]} for r in chosen]
        g = gs.db.read_one(query("sgrag.eval_gold"), constraints=constraints)
        if not g["gold"] or len(g["gold"]) > 5:
            continue
        kind = a["type"].lower() or "entity"
        parts = [f"{r['predicate']} {r['name']}" if r["out"] else f"that {r['name']} {r['predicate']}" for r in chosen]
        question = f"Which {kind} " + (", ".join(parts[:-1]) + " and " + parts[-1]) + "?"
        qg = {
            "nodes": [{"id": "t", "label": "UNK", "description": kind}]
            + [{"id": f"k{i}", "label": r["name"]} for i, r in enumerate(chosen)],
            "edges": [
                {"src": "t", "dst": f"k{i}", "relation": r["predicate"]}
                if r["out"]
                else {"src": f"k{i}", "dst": "t", "relation": r["predicate"]}
                for i, r in enumerate(chosen)
            ],
        }
        out.append(
            {
                "question": question,
                "answer": a["name"],
                "gold": g["gold"],
                "candidates": g["candidates"],
                "constraint_names": [r["name"] for r in chosen],
                "query_graph": qg,
                "k": k,
            }
        )
    return out


def score(context: str, q: dict) -> tuple[float, float, float]:
    text = context.lower()
    exclude = {c.lower() for c in q["constraint_names"]}
    gold = {g.lower() for g in q["gold"]}
    pos: dict[str, int] = {}
    for c in set(q["candidates"]) | set(q["gold"]):
        name = c.lower()
        if name in exclude or len(name) < 2:
            continue
        m = re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text)
        if m:
            pos[name] = m.start()
    pred = set(pos)
    hit = float(bool(pos) and min(pos, key=pos.get) in gold)
    precision = len(pred & gold) / len(pred) if pred else 0.0
    recall = len(pred & gold) / len(gold)
    return hit, precision, recall


def evaluate(gs, method: str, questions: list[dict], budget: int) -> dict:
    hits, precs, recs, ms, fallbacks = [], [], [], [], 0
    for q in questions:
        params: dict = {"top_k": 10, "budget": budget}
        name = method
        if method == "sgrag-oracle":
            name = "sgrag"
            params |= {"query_graph": json.dumps(q["query_graph"]), "match_relations": True, "directed": True}
        t = time.perf_counter()
        res = gs.retrieve(q["question"], name, **params)
        ms.append((time.perf_counter() - t) * 1000)
        fallbacks += bool(res.notes.get("fallback"))
        h, p, r = score(" \n".join(i.text for i in res.items), q)
        hits.append(h)
        precs.append(p)
        recs.append(r)
    return {
        "hit@1": round(float(np.mean(hits)), 3),
        "precision": round(float(np.mean(precs)), 3),
        "recall": round(float(np.mean(recs)), 3),
        "fallback_rate": round(fallbacks / len(questions), 3),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
    }


def main(n: int, methods: list[str], seed: int, budget: int) -> dict:
    with open_graph() as gs:
        questions = generate(gs, n, seed)
        if not questions:
            raise SystemExit("no multi-constraint questions could be generated (is the corpus ingested?)")
        results = {m: evaluate(gs, m, questions, budget) for m in methods}
    data = {"machine": machine(), "questions": len(questions), "seed": seed, "budget": budget, "results": results}
    data["examples"] = [{k: q[k] for k in ("question", "gold", "k")} for q in questions[:10]]
    md = [
        f"# SG-RAG multi-constraint evaluation ({len(questions)} generated questions, budget {budget})",
        "",
        "| method | Hit@1 | precision | recall | fallback rate | p50 ms |",
        "|---|---|---|---|---|---|",
    ]
    for m, r in results.items():
        md.append(f"| {m} | {r['hit@1']} | {r['precision']} | {r['recall']} | {r['fallback_rate']} | {r['p50_ms']} |")
    write("sgrag_eval", data, "\n".join(md) + "\n")
    print("\n".join(md))
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--methods", default="sgrag,sgrag-oracle,vector,noderag")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=1000)
    a = ap.parse_args()
    main(a.n, a.methods.split(","), a.seed, a.budget)
