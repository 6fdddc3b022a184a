"""How exact the index path's top-k lists are (bench/scale.py, after the +1% augment): for a seeded
sample of the nodes the increment added to a top-k layer, the k neighbours the layer gives them
against their exact top-k over every vector of the layer's labels (numpy, brute force).

Two measures per layer: the share of the exact top-k ids among the given ones, and the share of the
given neighbours at least as close as the exact k-th (ties: a synthetic corpus repeats sentences, so
many neighbours can share the k-th cosine, and any of them is as right as another)."""

from __future__ import annotations

import numpy as np

from graphstrata.augment.params import AugmentParams
from graphstrata.augment.similarity import embedded
from graphstrata.client import GraphStrata

#: layer -> (labels, relationship type, its k in AugmentParams)
LAYERS = {
    "semantic_edges": (["Chunk", "SemanticUnit", "Attribute", "HighLevel"], "SEMANTIC", "semantic_k"),
    "entity_similarity": (["Entity"], "SIMILAR", "k_neighbor"),
}
SAMPLE, BLOCK = 500, 100


def layer_ids(gs: GraphStrata) -> dict[str, set[str]]:
    """The embedded node ids of each layer's labels (taken before an increment)."""
    return {
        name: {r[0] for r in gs.db.read_rows(_IDS, ["id"], labels=labels)} for name, (labels, _, _) in LAYERS.items()
    }


_IDS = "MATCH (n:$any($labels)) WHERE n.embedding IS NOT NULL RETURN n.id AS id"
_GIVEN = (
    "UNWIND $ids AS id MATCH (n:$any($labels) {id: id})-[r:$($type)]-(m) RETURN n.id AS a, m.id AS b, r.score AS score"
)


def exactness(gs: GraphStrata, before: dict[str, set[str]], seed: int = 0) -> dict[str, dict]:
    """Per layer: the new nodes, how many were sampled, and the two measures (module docstring)."""
    out = {}
    for name, (labels, rel, k_name) in LAYERS.items():
        k = getattr(AugmentParams(), k_name)
        ids, vecs = _vectors(gs, labels)
        new = sorted(set(ids) - before[name])
        if not new:
            out[name] = {"new_nodes": 0}
            continue
        rng = np.random.default_rng(seed)
        sample = sorted(rng.choice(new, size=min(SAMPLE, len(new)), replace=False).tolist())
        row = {x: i for i, x in enumerate(ids)}
        given: dict[str, dict[str, float]] = {x: {} for x in sample}
        for a, b, s in gs.db.read_rows(_GIVEN, ["a", "b", "score"], ids=sample, type=rel, labels=labels):
            given[a][b] = float(s)
        same = close = total = 0
        for start in range(0, len(sample), BLOCK):
            block = sample[start : start + BLOCK]
            rows = np.array([row[x] for x in block])
            sims = vecs[rows] @ vecs.T
            sims[np.arange(len(rows)), rows] = -np.inf  # not its own neighbour
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            for x, sim, best in zip(block, sims, top, strict=True):
                kth = float(sim[best].min())
                mine = sorted(given[x], key=lambda y: -given[x][y])[:k]
                exact = {ids[j] for j in best}
                same += len(exact & set(mine))
                close += sum(float(sim[row[y]]) >= kth - 1e-5 for y in mine if y in row)
                total += k
        out[name] = {
            "new_nodes": len(new),
            "sampled": len(sample),
            "k": k,
            "same_ids": round(same / total, 4),
            "as_close_as_kth": round(close / total, 4),
        }
    return out


def _vectors(gs: GraphStrata, labels: list[str]) -> tuple[list[str], np.ndarray]:
    """The layer's ids and unit vectors, read as augment reads them (a page at a time, float32)."""
    ids, v = embedded(gs.db, labels)
    return ids, v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
