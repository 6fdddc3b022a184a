"""Top-k similarity layers after an ingest that only added nodes, from Neo4j's vector indexes.

Reading every node's vector is what a full run of a layer costs at scale (27 s for the 124k vectors of
NodeRAG's semantic edges at 10,000 passages), even when ~1,000 of them are new. When the ingest since
the layer was written only added nodes — the node count is the count then plus the nodes without an edge
of the layer — the new nodes' lists come from the vector indexes instead, and only the stored lists of
the nodes they reach are read:

1. each new node x asks each label's vector index for its nearest ``candidates``; its list is the
   best k of them;
2. an old node y among x's nearest ``candidates`` takes x if x beats the k-th of y's own list (the best k of
   y's stored pairs, which were the best k among the old nodes) or that list is short; y's new list
   is the best k of both;
3. a pair that left y's list stays stored only if it is in its other end's list (the layer is the
   union of every node's list, each pair once).

With ``candidates`` (``knn_index_candidates``) at least the node count this is the full run's layer
(tests/test_augment.py checks it); below, x misses what HNSW's search at that beam misses, and an old
node misses x when it is not among x's nearest ``candidates`` (bench/scale.py measures the layer
against a full run's).
Ties at a k-th score are broken by id, as the full run does. KET-RAG's lexical layer (shared keywords)
takes the same steps with exact candidates: every chunk that shares a keyword with a new one.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.schema import VECTOR_INDEXES

Pair = tuple[str, str]


@dataclass
class Delta:
    """The pairs to write ({a, b, score}, a the smaller id) and to delete ({a, b}) from a stored layer."""

    write: list[dict]
    delete: list[dict]
    new_nodes: int
    reached: int = 0  # old nodes among the new nodes' candidates (their lists were read)
    seconds: dict[str, float] = field(default_factory=dict)  # finding candidates, reading lists


def best_k(scores: dict[str, float], k: int) -> list[str]:
    """The ``k`` best-scored nodes, ties by id (a partial selection: a new chunk's exact lexical offers
    can be thousands)."""
    return [b for b, _ in heapq.nsmallest(k, scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def _stored(db: Database, stored: str, ids: set[str], params: dict) -> dict[str, dict[str, float]]:
    """The stored pairs of ``ids``, from either end: node -> {other end: score}."""
    pairs: dict[str, dict[str, float]] = {y: {} for y in ids}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 1000):
        batch = ordered[start : start + 1000]
        for a, b, s in db.read_rows(query(f"augment.{stored}_lists"), ["a", "b", "score"], ids=batch, **params):
            pairs[a][b] = float(s)
    return pairs


Offers = Callable[[list[tuple[str, list[float]]]], dict[str, dict[str, float]]]


def index_offers(db: Database, labels: list[str], candidates: int) -> Offers:
    """Candidates of new nodes ((id, vector) rows): their nearest ``candidates`` in each label's vector
    index, id -> {node: cosine}."""

    def offers(new: list[tuple[str, list[float]]]) -> dict[str, dict[str, float]]:
        offered: dict[str, dict[str, float]] = defaultdict(dict)
        for label in labels:
            for start in range(0, len(new), 200):
                rows = [{"id": i, "embedding": v} for i, v in new[start : start + 200]]
                found = db.read_rows(
                    query("augment.index_neighbours"),
                    ["a", "b", "score"],
                    rows=rows,
                    index=VECTOR_INDEXES[label],
                    candidates=candidates,
                )
                for a, b, s in found:
                    offered[a][b] = float(s)
        return offered

    return offers


def shared_keyword_offers(db: Database) -> Offers:
    """KET-RAG's lexical candidates of new chunks: every chunk sharing a keyword, and how many (exact).
    The chunk-keyword incidence is read whole (a list per chunk: 0.5 s at 10,000 passages) and the new
    rows multiplied in scipy; the same count in Cypher walks every (new chunk, keyword, chunk) triple
    (34 s for 100 new chunks there)."""

    def offers(new: list[tuple[str, list[float]]]) -> dict[str, dict[str, float]]:
        rows = db.read_rows(query("augment.chunk_keyword_lists"), ["chunk", "keywords"])
        chunks = [c for c, _ in rows]
        column: dict[str, int] = {}
        cols = [[column.setdefault(k, len(column)) for k in ks] for _, ks in rows]
        r = np.repeat(np.arange(len(rows)), [len(c) for c in cols])
        c = np.fromiter(itertools.chain.from_iterable(cols), dtype=np.int64, count=len(r))
        a = sparse.csr_matrix((np.ones(len(r), np.float32), (r, c)), shape=(len(rows), len(column)))
        at = a.T.tocsr()
        index = {c: i for i, c in enumerate(chunks)}
        offered: dict[str, dict[str, float]] = {}
        for x, _ in new:
            if x not in index:
                offered[x] = {}
                continue
            shared = (a[index[x]] @ at).tocoo()
            offered[x] = {chunks[j]: float(v) for j, v in zip(shared.col, shared.data, strict=True) if chunks[j] != x}
        return offered

    return offers


def linked(db: Database, stored: str, labels: list[str], **params: str) -> int:
    """How many nodes have an edge of the layer (recorded when it is written; see update_layer)."""
    return db.read_one(query(f"augment.{stored}_linked"), labels=labels, **params)["n"]


def update_layer(
    db: Database,
    stored: str,
    labels: list[str],
    k: int,
    linked_then: int,
    n_now: int,
    max_share: float,
    offers: Offers,
    reverse: int,
    **params: str,
) -> Delta | None:
    """The changes that bring a layer up to the ``n_now`` embedded nodes now, or None when the ingest
    since did more than add nodes or added more than ``max_share`` of them (a full run is needed).
    Only additions leave the nodes with an edge of the layer as they were (``linked_then``, counted
    when it was written): a deleted node with an edge lowers the count. A new node's list is the best
    k of all its ``offers``; the old nodes it may enter the lists of are its best ``reverse``."""
    if linked(db, stored, labels, **params) != linked_then:
        return None
    new = db.read_rows(query(f"augment.{stored}_new"), ["id", "embedding"], labels=labels, **params)
    if len(new) > max_share * n_now:
        return None
    if not new:
        return Delta([], [], 0)
    fresh = {i for i, _ in new}
    t = time.perf_counter()
    offered = offers(new)
    seconds = {"offers": time.perf_counter() - t}
    t = time.perf_counter()
    lists = {x: best_k(offered[x], k) for x in fresh}
    # old nodes a new node reached: their own lists, and what the new nodes offer them
    reached: dict[str, dict[str, float]] = defaultdict(dict)
    for x in fresh:
        for y in best_k(offered[x], reverse):
            if y not in fresh:
                reached[y][x] = offered[x][y]
    mine = _stored(db, stored, set(reached), params)
    dropped: set[Pair] = set()
    for y, offer in reached.items():
        own = best_k(mine[y], k)
        lists[y] = best_k({z: mine[y][z] for z in own} | offer, k)
        dropped |= {(y, z) for z in own if z not in lists[y]}
    # a pair left by one end stays if the other end keeps it
    others = {z for _, z in dropped if z not in lists}
    lists |= {z: best_k(pairs, k) for z, pairs in _stored(db, stored, others, params).items()}
    seconds["lists"] = time.perf_counter() - t
    gone = {(min(y, z), max(y, z)) for y, z in dropped if y not in lists[z] and z not in lists[y]}
    score = {(x, b): s for x in offered for b, s in offered[x].items()}
    write: dict[Pair, float] = {}
    for y, members in lists.items():
        for z in members:
            s = score.get((y, z), score.get((z, y)))
            if s is None:
                continue  # a stored pair kept as it is
            key = (min(y, z), max(y, z))
            write[key] = max(write.get(key, -1.0), s)
    return Delta(
        write=[{"a": a, "b": b, "score": s} for (a, b), s in write.items()],
        delete=[{"a": a, "b": b} for a, b in sorted(gone)],
        new_nodes=len(fresh),
        reached=len(reached),
        seconds={k: round(v, 2) for k, v in seconds.items()},
    )
