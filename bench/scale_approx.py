"""Approximate against exact augment on the three dev graphs (``python bench/scale.py --approx-check``).

Each graph (hotpotqa_dev100 and musique_dev50 with spaCy, musique_dev50 with the OpenIE extractions) is
the three-graph benchmark's own (bench/graphs.py: its instance, built there first if absent), augmented
with the exact stages (the dev graphs are below ``knn_exact_max_nodes`` and ``kmeans_sample``); every
method answers the dev questions. Then the stages with an approximate path beyond a size — chunk_knn,
entity_similarity, entity_synonyms, semantic_edges with ``knn_exact_max_nodes=0`` (the inverted file of
graphstrata/algorithms/ann.py on every layer), semantic_matching with ``kmeans_sample`` = 1,000 (K-means
fitted on a sample) — are run again and the methods answer again. Last, the stages are run again with
their defaults, which restores the benchmark's graph (checked: every layer equal to the exact one).
Reported: each layer's edges found by both, each method's Recall@5 under both and the difference.
Results: bench/results/scale-approx.{json,md}.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
from common import RESULTS, machine
from scale import BUDGET, METHODS, TOP_K, UNCAPPED

from graphstrata.client import GraphStrata

GRAPHS = ["hotpotqa", "musique", "musique-openie"]  # bench/graphs.py's dev graphs
STAGES = ["chunk_knn", "entity_synonyms", "entity_similarity", "semantic_edges", "semantic_matching"]
APPROXIMATE = {"knn_exact_max_nodes": 0, "kmeans_sample": 1_000}
LAYERS = {
    "chunk_knn": "MATCH (a:Chunk)-[r:SIMILAR {kind: 'semantic'}]->(b:Chunk) RETURN a.id AS a, b.id AS b",
    "entity_similarity": "MATCH (a:Entity)-[r:SIMILAR {kind: 'semantic'}]->(b:Entity) RETURN a.id AS a, b.id AS b",
    "entity_synonyms": "MATCH (a:Entity)-[r:SYNONYM]->(b:Entity) RETURN a.id AS a, b.id AS b",
    "semantic_edges": "MATCH (a)-[r:SEMANTIC]->(b) RETURN a.id AS a, b.id AS b",
    "semantic_matching": "MATCH (a:HighLevel)-[r:GROUPS]->(b) RETURN a.id AS a, b.id AS b",
}


def recall(gs: GraphStrata, name: str) -> dict[str, list[float]]:
    """Every method's Recall@5 per dev question, scored as bench/graphs.py scores it."""
    from graphs import passages, questions_of, score

    qs, passage = questions_of(name), passages(gs, name)
    out = {}
    for m in METHODS:
        params = {"budget": BUDGET} | ({} if m in UNCAPPED else {"top_k": TOP_K})
        out[m] = [score(gs.retrieve(q["question"], m, **params), passage, q)["r5"] for q in qs]
        print(f"  {name} {m}: {np.mean(out[m]):.3f}", flush=True)
    return out


def layers(gs: GraphStrata) -> dict[str, set[tuple[str, str]]]:
    return {s: {(min(r["a"], r["b"]), max(r["a"], r["b"])) for r in gs.db.read(q)} for s, q in LAYERS.items()}


def main() -> None:
    from graphs import build, open_instance, stop_instance

    names = os.environ.get("SCALE_APPROX_GRAPHS", ",".join(GRAPHS)).split(",")
    data: dict = {"machine": machine(), "approximate": APPROXIMATE, "graphs": {}}
    for name in names:
        gs = open_instance(name)
        try:
            build(gs, name)
            exact_layers, exact = layers(gs), recall(gs, name)
            reports = gs.augment(STAGES, knn_incremental=False, **APPROXIMATE)
            seconds = {r.stage: r.seconds for r in reports}
            approx_layers, approx = layers(gs), recall(gs, name)
            gs.augment(STAGES, knn_incremental=False)  # the defaults: the benchmark's graph again
            restored = layers(gs) == exact_layers
            print(f"  {name}: layers restored to the exact ones: {restored}", flush=True)
        finally:
            stop_instance(gs)
        data["graphs"][name] = {
            "approx_stage_seconds": seconds,
            "restored": restored,
            "layers": {
                k: {"exact": len(v), "approx": len(approx_layers[k]), "both": len(v & approx_layers[k])}
                for k, v in exact_layers.items()
            },
            "recall@5": {
                m: {
                    "exact": round(float(np.mean(exact[m])), 3),
                    "approx": round(float(np.mean(approx[m])), 3),
                    "diff": round(float(np.mean(approx[m]) - np.mean(exact[m])), 3),
                }
                for m in METHODS
            },
            "per_question": {m: {"exact": exact[m], "approx": approx[m]} for m in METHODS},
        }
        write(data)


def write(data: dict) -> None:
    out = ["# Approximate vs exact augment on the dev graphs", ""]
    out.append(
        "The similarity stages (chunk_knn, entity_synonyms, entity_similarity, semantic_edges) exact, then with "
        "`knn_exact_max_nodes=0` (the inverted file of graphstrata/algorithms/ann.py, cell 256, 16 cells probed), "
        "and semantic_matching on every node, then with `kmeans_sample=1000` (K-means fitted on a sample), on the "
        f"same graph (bench/graphs.py's); top_k {TOP_K}, budget {BUDGET}. {data['machine']['when']}. "
        "Command: `python bench/scale.py --approx-check`."
    )
    for name, g in data["graphs"].items():
        out += ["", f"## {name}", "", f"Graph restored to the exact layers afterwards: {g['restored']}."]
        out += ["", "| layer | exact edges | approximate | in both |", "|---|---:|---:|---:|"]
        for k, v in g["layers"].items():
            out.append(f"| {k} | {v['exact']} | {v['approx']} | {v['both']} ({v['both'] / max(v['exact'], 1):.3f}) |")
        out += ["", "| method | Recall@5 exact | approximate | difference |", "|---|---:|---:|---:|"]
        for m, v in g["recall@5"].items():
            out.append(f"| {m} | {v['exact']:.3f} | {v['approx']:.3f} | {v['diff']:+.3f} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale-approx.json").write_text(json.dumps(data, indent=2))
    (RESULTS / "scale-approx.md").write_text("\n".join(out) + "\n")


def ivf_check() -> None:
    """The inverted file against the exact computation on the vectors of the graph in the scale bench's
    instance (``python bench/scale.py --ivf-check`` after a size ran): each layer's top-5 neighbours
    found by both, and the synonym pairs (cosine >= 0.9). Results: bench/results/scale-ivf.{json,md}."""
    from scale import open_instance

    from graphstrata.algorithms.ann import CELL_SIZE, NPROBE, ivf_knn, ivf_pairs
    from graphstrata.algorithms.knn import exact_knn

    gs = open_instance()
    out: dict = {"machine": machine(), "cell_size": CELL_SIZE, "nprobe": NPROBE, "layers": {}}
    for label in ("Entity", "Chunk"):
        rows = gs.db.read_rows(
            f"MATCH (n:{label}) WHERE n.embedding IS NOT NULL RETURN n.id AS id, n.embedding AS e ORDER BY id",
            ["id", "e"],
        )
        v = np.array([r[1] for r in rows], dtype=np.float32)
        t = time.perf_counter()
        ex = exact_knn(v, 5)
        exact_s = time.perf_counter() - t
        t = time.perf_counter()
        ap = ivf_knn(v, 5)
        ivf_s = time.perf_counter() - t
        e = set(zip(ex[0].tolist(), ex[1].tolist(), strict=True))
        a = set(zip(ap[0].tolist(), ap[1].tolist(), strict=True))
        res = {"nodes": len(v), "top5_recall": round(len(e & a) / max(1, len(e)), 4)}
        res |= {"exact_seconds": round(exact_s, 2), "ivf_seconds": round(ivf_s, 2)}
        if label == "Entity":
            unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            brute: set[tuple[int, int]] = set()
            for start in range(0, len(unit), 2048):
                i, j = np.nonzero(unit[start : start + 2048] @ unit.T >= 0.9)
                brute |= {(start + x, y) for x, y in zip(i.tolist(), j.tolist(), strict=True) if start + x < y}
            i, j, _ = ivf_pairs(v, 0.9)
            got = set(zip(i.tolist(), j.tolist(), strict=True))
            res |= {"synonym_pairs": len(brute), "synonym_recall": round(len(brute & got) / max(1, len(brute)), 4)}
        out["layers"][label] = res
        print(label, res, flush=True)
    md = ["# Inverted file vs exact on the scale graph's vectors", "", f"{out['machine']['when']}; cell "]
    md[-1] += f"{CELL_SIZE}, {NPROBE} cells probed; machine shared (compare ratios)."
    md += ["", "| layer | nodes | top-5 recall | exact s | ivf s | synonym pairs (>= 0.9) | found |"]
    md += ["|---|---:|---:|---:|---:|---:|---:|"]
    for label, r in out["layers"].items():
        md.append(
            f"| {label} | {r['nodes']} | {r['top5_recall']} | {r['exact_seconds']} | {r['ivf_seconds']} | "
            f"{r.get('synonym_pairs', '')} | {r.get('synonym_recall', '')} |"
        )
    (RESULTS / "scale-ivf.json").write_text(json.dumps(out, indent=2))
    (RESULTS / "scale-ivf.md").write_text("\n".join(md) + "\n")
