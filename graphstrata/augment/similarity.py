"""Similarity layers: top-k by embedding cosine, exact (graphstrata/algorithms/knn.py) up to
``knn_exact_max_nodes`` nodes and an inverted file (graphstrata/algorithms/ann.py) or GDS KNN
beyond, and, for KET-RAG's lexical half, a sparse product.

- `chunk_knn` — KET-RAG §5.1 KNN graph on chunks: each chunk to its top-k chunks by embedding
  cosine (kind 'semantic') and by number of shared keywords (kind 'lexical').
- `entity_similarity` — DA-RAG §4.1 Similarity Layer: each entity to its k_neighbor = 5 most
  similar entities by embedding.
- `semantic_edges` — NodeRAG §2.4 HNSW semantic edges among embedded nodes (T, S, A, H):
  ``semantic_graph = "knn"`` (default) each node's ``semantic_k`` nearest neighbours;
  ``"hnsw"`` the paper's object, HNSW's base layer (:mod:`graphstrata.algorithms.hnsw`, the
  reference configuration m = 5, m0 = 10, ef = 200). Where a semantic edge joins two nodes another
  heterograph edge already joins, the walk counts both (the paper's weight + 1: the PPR graph is a
  multigraph, graphstrata/algorithms/ppr.py ``transition_matrix``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from graphstrata.algorithms.ann import ivf_knn
from graphstrata.algorithms.hnsw import base_layer
from graphstrata.algorithms.knn import exact_knn
from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.augment.knn_index import Delta, Offers, index_offers, linked, shared_keyword_offers, update_layer
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.gds import GDS

#: NodeRAG's reference HNSW configuration (m = 5; hnswlib's m0 = 2m; ef_construction = 200).
HNSW_M, HNSW_EF = 5, 200

# GDS KNN is NN-descent: these settings trade a little time for near-exact neighbours (the client's
# names for sampleRate, deltaThreshold, maxIterations, randomJoins, randomSeed).
KNN_CONFIG = {"sample_rate": 1.0, "delta_threshold": 0.0, "max_iterations": 50, "random_joins": 20, "random_seed": 42}


@dataclass
class Layer:
    """A similarity layer's rows, and the state to record once they are written (``path``: which path ran);
    updated in place (``path`` "index"), the changes to the stored layer instead of its rows."""

    rows: list[dict]
    state: str
    path: str
    delta: Delta | None = None


def knn_rows(ctx: AugmentContext, name: str, labels: list[str], k: int, stored: str, **params: str) -> Layer:
    """Top-k cosine neighbours among nodes with `labels` (each undirected pair stored once, max score):
    exact (numpy) up to ``knn_exact_max_nodes`` nodes; beyond, the inverted file of
    :mod:`graphstrata.algorithms.ann` (near-linear), or GDS KNN with ``knn_approximate="gds"``.
    After an ingest that only added nodes, a layer last built by this function with the same k is
    updated from the vector indexes (:mod:`graphstrata.augment.knn_index`): ``stored`` names its
    queries (``augment.<stored>_new`` / ``_lists`` with `params`). After a delete or a replacement the
    nodes that lost a neighbour cannot be told from the rest without reading every list: a full run.

    The layer's state says ``writing`` from here until :func:`layer_written`: a run that stops
    half-way (a deadlock the stage is retried for, a crash) leaves a layer the next run must not
    update in place, as it would a complete one."""
    n = ctx.db.read_one(query("augment.embedded_count"), labels=labels)["n"]
    p = ctx.params
    approximate = n > p.knn_exact_max_nodes
    offers = index_offers(ctx.db, labels, p.knn_index_candidates)
    if (layer := in_place(ctx, name, f"knn:{k}", k, stored, labels, n, offers, **params)) is not None:
        return layer
    if approximate and p.knn_approximate == "gds":
        return Layer(_pairs(gds_knn_rows(GDS(ctx.db, ctx.settings), name, labels, k)), "gds", "gds")
    ids, vecs = embedded(ctx.db, labels)
    if len(ids) < 2:
        return Layer([], f"knn:{k}", "exact")
    path = "approximate" if approximate else "exact"
    sources, targets, scores = ivf_knn(vecs, k, p.ann_cell_size, p.ann_nprobe) if approximate else exact_knn(vecs, k)
    rows = zip(sources.tolist(), targets.tolist(), scores.tolist(), strict=True)
    return Layer(_pairs({"a": ids[a], "b": ids[b], "score": s} for a, b, s in rows), f"knn:{k}", path)


def in_place(
    ctx: AugmentContext,
    name: str,
    state: str,
    k: int,
    stored: str,
    labels: list[str],
    n: int,
    offers: Offers,
    **params: str,
) -> Layer | None:
    """The layer ``name`` updated in place (:mod:`graphstrata.augment.knn_index`) when it was last written
    whole with this ``state`` and the ingest since only added nodes, else None; marks it as being written."""
    p = ctx.params
    prior = ctx.db.read_one(query("augment.layer_state"), layer=name)
    then = ctx.db.read_one(query("augment.layer_state"), layer=f"{name}_linked")
    _set_state(ctx, name, "writing")
    if not (p.knn_incremental and prior and prior["state"] == state and then and then["state"]):
        return None
    share, reverse = p.knn_incremental_max_share, p.knn_index_candidates
    delta = update_layer(ctx.db, stored, labels, k, int(then["state"]), n, share, offers, reverse, **params)
    return None if delta is None else Layer([], state, "index", delta)


def write_layer(ctx: AugmentContext, layer: Layer, edges: str, **params: str) -> dict[str, int]:
    """Store ``layer``: its changes when it has them, else make the stored layer equal its rows."""
    if layer.delta is None:
        return replace_edges(ctx, layer.rows, edges, **params)
    ctx.db.write_batches(query(f"augment.delete_{edges}_pairs"), layer.delta.delete, **params)
    ctx.db.write_batches(query(f"augment.write_{edges}"), layer.delta.write, **params)
    d = layer.delta
    return {"written": len(d.write), "deleted": len(d.delete), "new_nodes": d.new_nodes, "reached": d.reached}


def timing(layer: Layer, prefix: str = "") -> dict[str, dict[str, float]]:
    """An in-place update's seconds (finding candidates, reading stored lists) for a stage's notes."""
    return {f"{prefix}seconds": layer.delta.seconds} if layer.delta is not None else {}


def layer_written(ctx: AugmentContext, name: str, layer: Layer, stored: str, labels: list[str], **params: str) -> None:
    """Record that ``layer`` is stored whole, and how many nodes have an edge of it (``stored`` names its
    queries): the next run may update it in place."""
    _set_state(ctx, f"{name}_linked", str(linked(ctx.db, stored, labels, **params)))
    _set_state(ctx, name, layer.state)


def _set_state(ctx: AugmentContext, name: str, state: str) -> None:
    ctx.db.write(query("augment.set_layer_state"), layer=name, state=state)


#: vectors read per round trip by :func:`embedded`: as Python lists a page of 10,000 takes ~120 MB, where
#: the 124k vectors of NodeRAG's semantic edges at 10,000 passages took ~1.5 GB read at once
EMBEDDED_PAGE = 10_000


def embedded(db: Database, labels: list[str]) -> tuple[list[str], np.ndarray]:
    """The ids and vectors (float32 rows, in id order) of the nodes with `labels` that have an embedding,
    read a page at a time into float32 blocks."""
    ids: list[str] = []
    blocks: list[np.ndarray] = []
    after = ""
    while True:
        page = db.read_rows(
            query("augment.embedded_nodes"), ["id", "embedding"], labels=labels, after=after, limit=EMBEDDED_PAGE
        )
        if not page:
            break
        ids += [n[0] for n in page]
        blocks.append(np.array([n[1] for n in page], dtype=np.float32))
        after = page[-1][0]
        del page
    return ids, np.concatenate(blocks) if blocks else np.zeros((0, 0), np.float32)


def gds_knn_rows(gds: GDS, name: str, labels: list[str], k: int) -> list[dict]:
    """GDS KNN's top-k (NN-descent: near-exact with :data:`KNN_CONFIG`), as {a, b, score} rows."""
    # ordered: the seeded sampling goes by node number
    with gds.temporary(gds.project_ordered(name, labels, embedding=True, force=True)) as p:
        if p.nodes < 2:
            return []
        # with random_seed, GDS KNN is deterministic only single-threaded
        knn = gds.client.knn.stream(
            p.graph, node_properties={"embedding": "COSINE"}, top_k=min(k, p.nodes - 1), concurrency=1, **KNN_CONFIG
        )
        return gds.resolve(
            query("augment.knn_pairs"),
            ["a", "b", "score"],
            node1=knn["node1"],
            node2=knn["node2"],
            similarity=knn["similarity"],
        )


def _pairs(rows: Iterable[dict]) -> list[dict]:
    """Directed neighbour rows as undirected pairs, stored once from the smaller id with the larger score."""
    pairs: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (min(r["a"], r["b"]), max(r["a"], r["b"]))
        pairs[key] = max(pairs.get(key, -1.0), float(r["score"]))
    return [{"a": a, "b": b, "score": s} for (a, b), s in pairs.items()]


def lexical_rows(pairs: list[tuple[str, str]], k: int) -> list[dict]:
    """Top-k chunks by number of shared keywords (ties by id), from (chunk, keyword) incidence."""
    chunks = sorted({c for c, _ in pairs})
    words = sorted({w for _, w in pairs})
    ci = {c: i for i, c in enumerate(chunks)}
    wi = {w: i for i, w in enumerate(words)}
    a = sparse.csr_matrix(
        (np.ones(len(pairs), np.float32), ([ci[c] for c, _ in pairs], [wi[w] for _, w in pairs])),
        shape=(len(chunks), len(words)),
    )
    shared = (a @ a.T).tocsr()
    shared.setdiag(0)
    shared.eliminate_zeros()
    best: dict[tuple[str, str], float] = {}
    for i in range(len(chunks)):
        row = shared.getrow(i)
        if row.nnz == 0:
            continue
        order = np.lexsort((row.indices, -row.data))[:k]  # most shared first, then by index
        for j, n in zip(row.indices[order], row.data[order], strict=True):
            key = (min(chunks[i], chunks[j]), max(chunks[i], chunks[j]))
            best[key] = max(best.get(key, 0.0), float(n))
    return [{"a": a_, "b": b_, "score": s} for (a_, b_), s in best.items()]


def replace_edges(ctx: AugmentContext, rows: list[dict], edges: str, **params: str) -> dict[str, int]:
    """Make a layer's stored edges (``augment.<edges>_pairs``: a similarity layer, DA-RAG's chunk layer)
    equal ``rows`` ({a, b, score}, each pair from its smaller id): delete the pairs no longer among
    them, write those new or scored otherwise. The layer ends as a full rewrite leaves it; an augment
    after a small ingest writes only what the new nodes changed."""
    have = {(a, b): s for a, b, s in ctx.db.read_rows(query(f"augment.{edges}_pairs"), ["a", "b", "score"], **params)}
    want = {(r["a"], r["b"]): r["score"] for r in rows}
    gone = [{"a": a, "b": b} for a, b in have if (a, b) not in want]
    new = [r for r in rows if have.get((r["a"], r["b"])) is None or abs(have[(r["a"], r["b"])] - r["score"]) > 1e-6]
    ctx.db.write_batches(query(f"augment.delete_{edges}_pairs"), gone, **params)
    ctx.db.write_batches(query(f"augment.write_{edges}"), new, **params)
    return {"written": len(new), "deleted": len(gone)}


@stage("chunk_knn", order=10)
def chunk_knn(ctx: AugmentContext) -> StageReport:
    k = ctx.params.knn_k
    semantic = knn_rows(ctx, "chunk_knn", ["Chunk"], k, "similar", label="Chunk", kind="semantic")
    changed = write_layer(ctx, semantic, "similar", label="Chunk", kind="semantic")
    layer_written(ctx, "chunk_knn", semantic, "similar", ["Chunk"], label="Chunk", kind="semantic")
    lexical = lexical_layer(ctx, k)
    changed_lexical = write_layer(ctx, lexical, "similar", label="Chunk", kind="lexical")
    layer_written(ctx, "chunk_lexical", lexical, "similar", ["Chunk"], label="Chunk", kind="lexical")
    return StageReport(
        stage="chunk_knn",
        counts={
            **({"semantic": len(semantic.rows)} if semantic.delta is None else {}),
            **({"lexical": len(lexical.rows)} if lexical.delta is None else {}),
            "written": changed["written"] + changed_lexical["written"],
            "deleted": changed["deleted"] + changed_lexical["deleted"],
        },
        notes={
            "k": k,
            "path": semantic.path,
            "lexical_path": lexical.path,
            **timing(semantic),
            **timing(lexical, "lexical_"),
        },
    )


def lexical_layer(ctx: AugmentContext, k: int) -> Layer:
    """KET-RAG's lexical half of the chunk KNN graph: in place after an ingest that only added chunks,
    else every chunk's top k by shared keywords."""
    n = ctx.db.read_one(query("augment.embedded_count"), labels=["Chunk"])["n"]
    offers = shared_keyword_offers(ctx.db)
    state = f"lexical:{k}"
    layer = in_place(ctx, "chunk_lexical", state, k, "similar", ["Chunk"], n, offers, label="Chunk", kind="lexical")
    if layer is not None:
        return layer
    return Layer(
        lexical_rows(ctx.db.read_rows(query("augment.chunk_keywords"), ["chunk", "keyword"]), k), state, "exact"
    )


@stage("entity_similarity", order=15)
def entity_similarity(ctx: AugmentContext) -> StageReport:
    k = ctx.params.k_neighbor
    layer = knn_rows(ctx, "entity_knn", ["Entity"], k, "similar", label="Entity", kind="semantic")
    changed = write_layer(ctx, layer, "similar", label="Entity", kind="semantic")
    layer_written(ctx, "entity_knn", layer, "similar", ["Entity"], label="Entity", kind="semantic")
    return StageReport(
        stage="entity_similarity",
        counts={**({"edges": len(layer.rows)} if layer.delta is None else {}), **changed},
        notes={"k_neighbor": k, "path": layer.path, **timing(layer)},
    )


@stage("semantic_edges", order=55)
def semantic_edges(ctx: AugmentContext) -> StageReport:
    k = ctx.params.semantic_k
    graph = ctx.params.semantic_graph
    if graph not in ("knn", "hnsw"):
        raise ValueError(f"semantic_graph must be 'knn' or 'hnsw', not {graph!r}")
    labels = ["Chunk", "SemanticUnit", "Attribute", "HighLevel"]
    present = [lb for lb in labels if ctx.db.read_one(query("augment.label_present"), label=lb)["present"]]
    if not present:
        layer = Layer([], f"knn:{k}", "exact")
    elif graph == "hnsw":
        _set_state(ctx, "semantic_knn", "writing")
        layer = Layer(hnsw_rows(ctx, present), "hnsw", "hnsw")  # not a top-k layer: the next knn run is full
    else:
        layer = knn_rows(ctx, "semantic_knn", present, k, "semantic_edges")
    changed = write_layer(ctx, layer, "semantic_edges")
    layer_written(ctx, "semantic_knn", layer, "semantic_edges", present)
    notes = {"graph": graph, "labels": present} | (
        {"k": k, "path": layer.path} if graph == "knn" else {"m": HNSW_M, "ef": HNSW_EF}
    )
    edges = {"edges": len(layer.rows)} if layer.delta is None else {}
    return StageReport(stage="semantic_edges", counts={**edges, **changed}, notes=notes | timing(layer))


def hnsw_rows(ctx: AugmentContext, labels: list[str]) -> list[dict]:
    """HNSW's base layer over the embedded nodes of `labels`, as {a, b, score (cosine)} rows."""
    ids, vecs = embedded(ctx.db, labels)
    if len(ids) < 2:
        return []
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    with ctx.tracker.stage("hnsw base layer", None):
        edges = base_layer(vecs, m=HNSW_M, ef=HNSW_EF)
    return [{"a": ids[a], "b": ids[b], "score": float(vecs[a] @ vecs[b])} for a, b in edges]
