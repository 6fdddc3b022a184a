"""Micro-benchmark: SG-RAG candidate filtering with the path index vs a linear scan (and an R*-tree).

    python bench/bench_sgrag_index.py [--quick] [--queries 300]

For each setting a random labelled graph (Barabási–Albert, seeded) is built, its length-2 paths are
enumerated (both orientations) and a seeded random subset of 10k / 100k paths is indexed with the
dominance embeddings of a monotone ``StarGAT`` (8 dims per node, 24 per path).  Two label regimes:

* ``few_types`` / ``types``: 6 / 40 labels with Zipf frequencies (type-like labels: big label
  groups, so the dominance filter does the work);
* ``entities``: one label per node (SG-RAG's entity names: tiny label groups).

Queries are real: a random indexed path ``p_z`` and, for each of its nodes, a random sub-star of the
node's star that keeps the path neighbours — so ``p_z`` itself always qualifies.  Every method must
return the same rows (checked) for

* ``scan``       — ``PathIndex.scan``: label equality over all rows, dominance over the matches;
* ``index``      — ``PathIndex.candidates``: hash on the label tuple, binary search on ``Σ o`` (the
  ``‖o(p_q)‖_1`` bound of Algorithm 7), dominance mask on the rest;
* ``group_only`` — the same without the sum bound (ablation);
* ``rtree``      — libspatialindex R*-tree (``rtree`` package, if installed) over points
  ``[group id, o(p_z)]`` answering the box ``{gid} × [o(p_q) − slack, +∞)`` (Eq. 5 ∩ semantic MBR);

plus the wildcard lookup of label completion (Algorithm 5: centre label unknown):
``PathIndex.rows`` (posting-list intersection) vs a scan over the known positions.

Writes ``bench/results/sgrag_index.json``.

``--e2e``: end-to-end matching with the dominance GAT vs exact-only (``match_query`` with and without
the embedder, same prebuilt path index otherwise) on the same three label regimes: a monotone GAT is
trained on the graph's stars (``fit_dominance``), queries are connected 3–5-node subgraphs cut from the
graph (some labels unknown), and both modes must return identical matches.  Reports the candidate
funnel (after labels + hops → after ``o(p_q) ⪯ o(p_z)`` → after the exact check) and the time per query,
for queries with and without relation labels and for two models: Appendix C's loss alone (the default)
and with the non-containment term (``negatives_per_star``, our extension); writes
``bench/results/sgrag_dominance.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphstrata.algorithms.sgrag import (  # noqa: E402
    DataGraph,
    DominanceConfig,
    HashingLabelEncoder,
    PathIndex,
    QueryGraph,
    Star,
    StarGAT,
    build_path_index,
    enumerate_paths,
    fit_dominance,
    match_query,
    train_dominance,
)
from graphstrata.algorithms.sgrag.dominance import DOMINANCE_ATOL, DOMINANCE_RTOL  # noqa: E402

try:  # optional: only needed for the R*-tree comparison
    from rtree import index as rtree_index
except ImportError:  # pragma: no cover
    rtree_index = None

RESULTS = ROOT / "bench" / "results" / "sgrag_index.json"


def make_graph(n_nodes: int, regime: str, seed: int) -> DataGraph:
    g = nx.barabasi_albert_graph(n_nodes, 3, seed=seed)
    rng = np.random.default_rng(seed)
    if regime in ("types", "few_types"):
        k = 40 if regime == "types" else 6
        weights = 1.0 / np.arange(1, k + 1)
        labels = rng.choice(k, size=n_nodes, p=weights / weights.sum())
        names = {v: f"T{labels[v]}" for v in g.nodes}
    else:
        names = {v: f"E{v}" for v in g.nodes}
    rels = ["r0", "r1", "r2"]
    return DataGraph(names, [(a, b, rels[(a + b) % 3]) for a, b in g.edges])


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def sub_star(graph: DataGraph, v: Any, keep: list[Any], rng: np.random.Generator) -> Star:
    others = [u for u in graph.neighbors(v) if u not in keep]
    chosen = [u for u in others if rng.random() < 0.5]
    return Star.of(graph.label(v), [graph.label(u) for u in [*keep, *chosen]])


def run_setting(n_paths: int, regime: str, n_queries: int, seed: int, repeats: int = 5) -> dict[str, Any]:
    n_nodes = {10_000: 1_200, 100_000: 5_000}.get(n_paths, max(200, n_paths // 20))
    graph = make_graph(n_nodes, regime, seed)
    all_paths = enumerate_paths(graph, 2)
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(all_paths), size=min(n_paths, len(all_paths)), replace=False)
    paths = [all_paths[i] for i in pick]

    encode = HashingLabelEncoder(16, seed=seed)
    model = StarGAT(16, hidden=16, out_dim=8, monotone=True, seed=seed)
    t0 = time.perf_counter()
    report = train_dominance(model, [graph.star(v) for v in graph.nodes], encode, epochs=5, max_per_star=64)
    train_s = time.perf_counter() - t0
    node_emb = dict(zip(graph.nodes, model.embed([graph.star(v) for v in graph.nodes], encode), strict=True))

    build_s, index = best_time(lambda: PathIndex(paths, node_emb), 1)
    ix = index._by_length[2]

    queries = []
    for r in rng.choice(len(paths), size=n_queries, replace=False):
        p = paths[int(r)]
        stars = []
        for i, v in enumerate(p.nodes):
            keep = [p.nodes[j] for j in (i - 1, i + 1) if 0 <= j < len(p.nodes)]
            stars.append(sub_star(graph, v, keep, rng))
        queries.append((list(p.labels), model.embed(stars, encode).reshape(-1), int(r)))

    def run_scan() -> list[np.ndarray]:
        return [index.scan(lab, None, q) for lab, q, _ in queries]

    def run_index() -> list[np.ndarray]:
        return [index.candidates(lab, None, q) for lab, q, _ in queries]

    def run_group_only() -> list[np.ndarray]:
        out = []
        for lab, q, _ in queries:
            lo, hi = ix.full.span(index._label_key(lab))
            rows = ix.full.order[lo:hi]
            thr = q - (DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(q))
            rows = rows[(ix.emb.take(rows, axis=0) >= thr).all(1)]
            rows.sort()
            out.append(rows)
        return out

    results: dict[str, Any] = {}
    t_scan, r_scan = best_time(run_scan, repeats)
    t_index, r_index = best_time(run_index, repeats)
    t_group, r_group = best_time(run_group_only, repeats)
    for rows_a, rows_b, rows_c, (_, _, row) in zip(r_scan, r_index, r_group, queries, strict=True):
        assert np.array_equal(rows_a, rows_b) and np.array_equal(rows_a, rows_c), "methods disagree"
        assert row in set(rows_a.tolist()), "the source path must qualify (no false negative)"
    spans = [ix.full.span(index._label_key(lab)) for lab, _, _ in queries]
    group_sizes = [hi - lo for lo, hi in spans]
    results["scan"] = {"seconds_per_query": t_scan / n_queries}
    results["index"] = {"seconds_per_query": t_index / n_queries}
    results["group_only"] = {"seconds_per_query": t_group / n_queries}

    if rtree_index is not None:
        dim = 1 + ix.emb.shape[1]
        props = rtree_index.Property()
        props.dimension = dim
        group_of = np.empty(len(paths), dtype=np.int64)
        for g in range(len(ix.full.start) - 1):
            group_of[ix.full.order[ix.full.start[g] : ix.full.start[g + 1]]] = g

        def stream():
            for row in range(len(paths)):
                point = (float(group_of[row]), *ix.emb[row].tolist())
                yield (row, (*point, *point), None)  # interleaved: all mins, then all maxs

        t0 = time.perf_counter()
        tree = rtree_index.Index(stream(), properties=props)
        rtree_build = time.perf_counter() - t0
        big = float(np.abs(ix.emb).max() * 10 + 1)

        def run_rtree() -> list[np.ndarray]:
            out = []
            for lab, q, _ in queries:
                key = index._label_key(lab)
                g = float(ix.full.keys[key])
                lo = q - (DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(q))
                box = (g, *lo.tolist(), g, *([big] * len(q)))
                out.append(np.sort(np.fromiter(tree.intersection(box), dtype=np.int64)))
            return out

        t_rtree, r_rtree = best_time(run_rtree, max(1, repeats // 2))
        for rows_a, rows_r in zip(r_scan, r_rtree, strict=True):
            assert np.array_equal(rows_a, rows_r), "rtree disagrees"
        results["rtree"] = {"seconds_per_query": t_rtree / n_queries, "build_seconds": rtree_build}

    # wildcard lookup for label completion (Algorithm 5): centre unknown
    wild = [[lab[0], None, lab[2]] for lab, _, _ in queries]

    def wild_index() -> list[np.ndarray]:
        return [index.rows(w) for w in wild]

    def wild_scan() -> list[np.ndarray]:
        out = []
        for w in wild:
            a, b = index.label_codes[w[0]], index.label_codes[w[2]]
            out.append(np.flatnonzero((ix.codes[:, 0] == a) & (ix.codes[:, 2] == b)))
        return out

    index.rows(wild[0])  # build the posting lists once (lazy)
    t_wi, r_wi = best_time(wild_index, repeats)
    t_ws, r_ws = best_time(wild_scan, repeats)
    for a, b in zip(r_wi, r_ws, strict=True):
        assert np.array_equal(a, b), "wildcard lookup disagrees"

    for name in [k for k in results if k != "scan"]:
        results[name]["speedup_vs_scan"] = results["scan"]["seconds_per_query"] / results[name]["seconds_per_query"]
    return {
        "paths": len(paths),
        "regime": regime,
        "graph_nodes": n_nodes,
        "label_groups": len(ix.full.keys),
        "index_build_seconds": build_s,
        "model_train_seconds": train_s,
        "model_train_pairs": report.pairs,
        "model_train_violations": report.violations,
        "mean_label_group_size": float(np.mean(group_sizes)),
        "mean_candidates_after_dominance": float(np.mean([len(r) for r in r_scan])),
        "dominance_pruning_ratio": float(1 - np.sum([len(r) for r in r_scan]) / max(1, np.sum(group_sizes))),
        "methods": results,
        "wildcard_centre_lookup": {
            "index_seconds_per_query": t_wi / n_queries,
            "scan_seconds_per_query": t_ws / n_queries,
            "speedup_vs_scan": t_ws / t_wi,
            "mean_rows": float(np.mean([len(r) for r in r_wi])),
        },
    }


E2E_RESULTS = ROOT / "bench" / "results" / "sgrag_dominance.json"


def cut_query(graph: DataGraph, rng: np.random.Generator, size: int, p_unknown: float) -> QueryGraph:
    """A connected ``size``-node subgraph of ``graph`` (random walk growth) as a query, relations kept,
    each label unknown with probability ``p_unknown`` (at least one unknown)."""
    nodes = [graph.nodes[int(rng.integers(len(graph)))]]
    while len(nodes) < size:
        frontier = sorted({u for v in nodes for u in graph.neighbors(v)} - set(nodes), key=str)
        if not frontier:
            break
        nodes.append(frontier[int(rng.integers(len(frontier)))])
    keep = set(nodes)
    unknown = {v for v in nodes if rng.random() < p_unknown} or {nodes[0]}
    labels = {v: (None if v in unknown else graph.label(v)) for v in nodes}
    edges = [(e.src, e.dst, e.relation) for e in graph.edges if e.src in keep and e.dst in keep]
    return QueryGraph(labels, edges)


#: The two models compared: Appendix C's loss alone (the default), and with the non-containment term.
E2E_MODELS = {
    "paper_loss": DominanceConfig(),
    "with_negatives": DominanceConfig(negatives_per_star=4, out_dim=32, epochs=30),
}


def run_e2e(
    regime: str, n_nodes: int, n_queries: int, seed: int, relations: bool, model: str, repeats: int = 2
) -> dict[str, Any]:
    graph = make_graph(n_nodes, regime, seed)
    rng = np.random.default_rng(seed)
    config = dataclasses.replace(E2E_MODELS[model], seed=seed)
    embedder, fit = fit_dominance([graph.star(v) for v in graph.nodes], config)
    t_plain, plain = best_time(lambda: build_path_index(graph, [1, 2]), 1)
    t_emb, with_emb = best_time(lambda: build_path_index(graph, [1, 2], embedder), 1)
    queries = [cut_query(graph, rng, int(rng.integers(3, 6)), 0.35) for _ in range(n_queries)]
    if not relations:  # the paper's query edges carry no relation
        queries = [QueryGraph(q.labels, [(e.src, e.dst) for e in q.edges]) for q in queries]
    funnel = {"gat": np.zeros(4, dtype=np.int64), "exact_only": np.zeros(4, dtype=np.int64)}
    seconds = {"gat": 0.0, "exact_only": 0.0}
    for q in queries:
        found = {}
        for mode, index, emb in (("gat", with_emb, embedder), ("exact_only", plain, None)):
            t, res = best_time(
                lambda q=q, index=index, emb=emb: match_query(q, graph, index=index, embedder=emb), repeats
            )
            seconds[mode] += t
            f = res.funnel()
            funnel[mode] += [f["structural"], f["filtered"], f["exact"], f["pruned_by_dominance"]]
            found[mode] = {frozenset(m.binding) for m in res.matches}
        assert found["gat"] == found["exact_only"], "the dominance filter changed the matches"
        assert found["gat"], "the query was cut from the graph, so it has a match"
    g = funnel["gat"]
    rejected = int(g[0] - g[2])
    return {
        "regime": regime,
        "query_relations": relations,
        "model_variant": model,
        "graph_nodes": n_nodes,
        "graph_edges": len(graph.edges),
        "queries": n_queries,
        "identical_matches": True,
        "model": {
            k: getattr(fit, k)
            for k in ("train_stars", "pairs", "epochs", "initial_loss", "loss", "negatives", "negative_satisfied")
        }
        | {"seconds": fit.seconds, "out_dim": config.out_dim},
        "index_build_seconds": {"exact_only": t_plain, "gat": t_emb},
        "funnel_gat": dict(zip(("structural", "filtered", "exact", "pruned_by_dominance"), g.tolist(), strict=True)),
        "exact_checks": {"gat": int(g[1]), "exact_only": int(funnel["exact_only"][1])},
        "share_of_exact_rejections_caught_by_dominance": round(int(g[3]) / rejected, 3) if rejected else None,
        "ms_per_query": {mode: round(1000 * v / n_queries, 3) for mode, v in seconds.items()},
        "speedup_of_gat": round(seconds["exact_only"] / seconds["gat"], 3),
    }


def main_e2e(n_queries: int, seed: int) -> None:
    settings = []
    for (regime, n_nodes), relations, model in itertools.product(
        (("few_types", 300), ("types", 300), ("entities", 300)), (True, False), E2E_MODELS
    ):
        res = run_e2e(regime, n_nodes, n_queries, seed, relations, model)
        settings.append(res)
        print(
            f"{regime:<9} nodes={n_nodes} relations={relations!s:<5} {model:<14} "
            f"exact checks {res['exact_checks']['exact_only']} -> "
            f"{res['exact_checks']['gat']} (caught {res['share_of_exact_rejections_caught_by_dominance']}) | "
            f"ms/query exact-only {res['ms_per_query']['exact_only']} gat {res['ms_per_query']['gat']}",
            flush=True,
        )
    out = {
        "benchmark": "SG-RAG end-to-end matching: path-dominance GAT filter before the exact check vs exact-only",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "timing": "match_query with a prebuilt path index (index build timed apart), best of 2 per query",
        "path_lengths": [1, 2],
        "settings": settings,
    }
    E2E_RESULTS.parent.mkdir(parents=True, exist_ok=True)
    E2E_RESULTS.write_text(json.dumps(out, indent=2))
    print(f"wrote {E2E_RESULTS.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k paths only")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--e2e", action="store_true", help="end-to-end matching, GAT vs exact-only, only")
    args = parser.parse_args()
    if args.e2e:
        main_e2e(min(args.queries, 10), args.seed)
        return
    sizes = [10_000] if args.quick else [10_000, 100_000]
    settings = []
    for n in sizes:
        for regime in ("few_types", "types", "entities"):
            res = run_setting(n, regime, args.queries, args.seed)
            settings.append(res)
            m = res["methods"]
            line = (
                f"{res['paths']:>7} paths {regime:<9} groups={res['label_groups']:>6} "
                f"group~{res['mean_label_group_size']:.0f} -> {res['mean_candidates_after_dominance']:.1f} cand | "
                + " ".join(
                    f"{k}={v['seconds_per_query'] * 1e6:.1f}us"
                    + (f" (x{v['speedup_vs_scan']:.0f})" if k != "scan" else "")
                    for k, v in m.items()
                )
                + f" | wildcard idx={res['wildcard_centre_lookup']['index_seconds_per_query'] * 1e6:.1f}us"
                f" scan={res['wildcard_centre_lookup']['scan_seconds_per_query'] * 1e6:.1f}us"
            )
            print(line, flush=True)
    try:
        import rtree

        rtree_version = rtree.__version__
    except ImportError:  # pragma: no cover
        rtree_version = None
    out = {
        "benchmark": "SG-RAG candidate filtering: PathIndex (label hash + Σo bound + dominance mask) "
        "vs linear scan vs R*-tree",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "rtree": rtree_version,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "queries_per_setting": args.queries,
        "timing": "best of 5 passes over all queries (rtree: best of 2), seconds per query",
        "path_length": 2,
        "embedding_dims_per_path": 24,
        "settings": settings,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
