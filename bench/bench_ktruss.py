"""Micro-benchmark: graphstrata truss decomposition vs a networkx.k_truss-based decomposition.

    python bench/bench_ktruss.py [--quick]

networkx has no truss decomposition, so its truss numbers are obtained the cheapest fair way:
peel incrementally, ``H_k = networkx.k_truss(H_{k-1}, k)`` for k = 3, 4, ..., and give the edges that
drop out of ``H_{k-1}`` truss number ``k - 1``.  Both sides get the same edge list; the results are
checked to be identical before any timing is reported.  Ours is timed end to end (edge list in,
truss number per row out), best of several runs; networkx best of fewer runs because it is slow.

Writes ``bench/results/ktruss.json``.
"""

from __future__ import annotations

import argparse
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

from graphstrata.algorithms.ktruss import truss_decomposition  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "ktruss.json"


def networkx_truss_numbers(G: nx.Graph) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    H = G.copy()
    k = 3
    while H.number_of_edges():
        nxt = nx.k_truss(H, k)
        for a, b in H.edges():
            if not nxt.has_edge(a, b):
                out[(min(a, b), max(a, b))] = k - 1
        H, k = nxt, k + 1
    return out


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def graphs(quick: bool) -> list[tuple[str, nx.Graph]]:
    specs: list[tuple[str, Callable[[], nx.Graph]]] = [
        ("powerlaw_cluster n=1700 m=3 p=0.5 (~5k edges)", lambda: nx.powerlaw_cluster_graph(1700, 3, 0.5, seed=1)),
        ("powerlaw_cluster n=5000 m=4 p=0.5 (~20k edges)", lambda: nx.powerlaw_cluster_graph(5000, 4, 0.5, seed=1)),
        ("erdos_renyi gnm n=2000 m=20000", lambda: nx.gnm_random_graph(2000, 20000, seed=1)),
        (
            "powerlaw_cluster n=10000 m=5 p=0.5 (~50k edges)",
            lambda: nx.powerlaw_cluster_graph(10000, 5, 0.5, seed=1),
        ),
        (
            "powerlaw_cluster n=5000 m=10 p=0.9 (~50k edges, dense)",
            lambda: nx.powerlaw_cluster_graph(5000, 10, 0.9, seed=1),
        ),
    ]
    if quick:
        specs = specs[:2]
    return [(name, make()) for name, make in specs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the two smallest graphs")
    parser.add_argument("--repeats", type=int, default=5, help="runs of ours per graph (best is kept)")
    parser.add_argument("--nx-repeats", type=int, default=1, help="runs of networkx per graph")
    args = parser.parse_args()

    rows = []
    header = f"{'graph':<54} {'edges':>7} {'maxk':>4} {'ours s':>8} {'nx s':>8} {'ours e/s':>11} {'nx e/s':>9} {'x':>6}"
    print(header)
    print("-" * len(header))
    for name, G in graphs(args.quick):
        edges = np.array(list(G.edges()), dtype=np.int64)
        m = len(edges)
        ours_s, truss = best_time(lambda edges=edges: truss_decomposition(edges), args.repeats)
        seq_s, seq = best_time(lambda edges=edges: truss_decomposition(edges, method="sequential"), args.repeats)
        nx_s, ref = best_time(lambda G=G: networkx_truss_numbers(G), args.nx_repeats)
        ours = {(min(a, b), max(a, b)): t for (a, b), t in zip(edges.tolist(), truss.tolist(), strict=True)}
        if ours != ref or not np.array_equal(truss, seq):
            raise SystemExit(f"{name}: truss numbers differ from networkx")
        ratio = nx_s / ours_s
        rows.append(
            {
                "graph": name,
                "nodes": G.number_of_nodes(),
                "edges": m,
                "max_truss": int(truss.max()),
                "ours_seconds": ours_s,
                "ours_sequential_seconds": seq_s,
                "networkx_seconds": nx_s,
                "ours_edges_per_second": m / ours_s,
                "ours_sequential_edges_per_second": m / seq_s,
                "networkx_edges_per_second": m / nx_s,
                "speedup_vs_networkx": ratio,
                "speedup_sequential_vs_networkx": nx_s / seq_s,
            }
        )
        print(
            f"{name:<54} {m:>7} {int(truss.max()):>4} {ours_s:>8.4f} {nx_s:>8.3f} "
            f"{m / ours_s:>11,.0f} {m / nx_s:>9,.0f} {ratio:>6.0f}"
        )
        print(f"{'  (sequential bin-sort peel)':<54} {'':>7} {'':>4} {seq_s:>8.4f} {'':>8} {m / seq_s:>11,.0f}")

    ratios = [r["speedup_vs_networkx"] for r in rows]
    summary = {
        "min_speedup": min(ratios),
        "geomean_speedup": float(np.exp(np.mean(np.log(ratios)))),
        "max_speedup": max(ratios),
    }
    print(
        f"\nspeed-up vs networkx: min {summary['min_speedup']:.0f}x, "
        f"geomean {summary['geomean_speedup']:.0f}x, max {summary['max_speedup']:.0f}x"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "truss decomposition: graphstrata.algorithms.ktruss vs networkx.k_truss peeling",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "networkx": nx.__version__,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "repeats": {"ours": args.repeats, "networkx": args.nx_repeats},
        "results": rows,
        "summary": summary,
    }
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
