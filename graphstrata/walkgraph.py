"""The one in-memory graph helper for query time: what a method reads of the whole graph (NodeRAG's
and HippoRAG's walk graphs as sparse matrices, DA-RAG's chunk layer) is read from the store once per
database connection with :func:`read_once`, and read again when the stored graph changes.

Why not a GDS projection at query time: GDS runs these walks well, but each call costs a round trip
and several milliseconds of set-up, more than the walk itself on a graph of this size (passages,
entities and their links). Augment-time algorithms (k-core, Leiden, KNN, betweenness …) stay in GDS.

Freshness follows the GDS helper's rule: every write that changes the graph bumps
``(:GraphStrata {id:'meta'}).updated_at``; a graph read at another version is read again.
"""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from graphstrata.algorithms.ppr import personalized_pagerank, transition_matrix
from graphstrata.cache_memory import deep_bytes
from graphstrata.cypher import query
from graphstrata.db import Database

T = TypeVar("T")


@dataclass(frozen=True)
class WalkGraph:
    """Nodes (ids, labels) in matrix order, typed undirected edges, and the version it was read at.
    ``own_text``: a per-node flag the nodes query returns (NodeRAG: a model wrote the node's
    text; HippoRAG's nodes query returns false for every node)."""

    ids: list[str]
    labels: np.ndarray
    own_text: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    types: np.ndarray
    version: Any
    index: dict[str, int]
    weights: np.ndarray | None = None  # per edge (the edges query's `weight`); None: every edge 1
    _walks: dict[frozenset[str] | None, sp.csr_matrix] = field(default_factory=dict, repr=False)
    _memo: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)  # label masks, id order

    def transition(self, types: frozenset[str] | None = None) -> sp.csr_matrix:
        """The walk's transition matrix over the edges of `types` (None: all of them), built once."""
        if types not in self._walks:
            keep = np.ones(len(self.src), dtype=bool) if types is None else np.isin(self.types, list(types))
            w = None if self.weights is None else self.weights[keep]
            self._walks[types] = transition_matrix(len(self.ids), self.src[keep], self.dst[keep], w)
        return self._walks[types]

    def seed_vector(self, weights: dict[str, float]) -> np.ndarray:
        """The start vector of `weights` by node id; an id newer than this graph seeds nothing."""
        s = np.zeros(len(self.ids))
        for i, w in weights.items():
            n = self.index.get(i)
            if n is not None:
                s[n] += w
        return s

    def ppr(
        self,
        weights: dict[str, float],
        damping: float,
        iterations: int,
        types: frozenset[str] | None = None,
        *,
        from_seeds: bool = False,
        tolerance: float = 0.0,
    ) -> np.ndarray:
        """Personalized PageRank from `weights` (node id -> seed weight) over the edges of `types`
        (``tolerance``: the pushes' ε, algorithms/ppr.py; 0: exact)."""
        v = self.seed_vector(weights)
        return personalized_pagerank(
            self.transition(types), v, damping, iterations, from_seeds=from_seeds, tolerance=tolerance
        )

    def neighbours(self, node: str, types: frozenset[str], label: str) -> list[str]:
        """The nodes of `label` joined to `node` by an edge of `types`."""
        n = self.index.get(node)
        if n is None:
            return []
        m = self.transition(types)  # CSR: the row's columns read in place (indexing m[n] copies the row)
        return [self.ids[j] for j in m.indices[m.indptr[n] : m.indptr[n + 1]] if self.labels[j] == label]

    def top(self, scores: np.ndarray, k: int, labels: tuple[str, ...] | None = None) -> list[tuple[str, str, float]]:
        """The k best-scoring nodes (of `labels`, if given) with a score above 0: (id, label, score)."""
        keep = scores > 0
        if labels is not None:
            keep &= self._label_mask(labels)
        candidates = np.flatnonzero(keep)
        k = min(k, len(candidates))
        if k <= 0:
            return []
        # equal scores rank by id: sums taken in another node order differ in their last bits, and the
        # ranking must not depend on the order the store returned the nodes in
        rounded = np.round(scores[candidates], 12)
        if len(candidates) > k:  # the k best and whatever ties the k-th
            kth = np.partition(rounded, len(rounded) - k)[len(rounded) - k]
            candidates, rounded = candidates[rounded >= kth], rounded[rounded >= kth]
        best = candidates[np.lexsort((self._id_rank()[candidates], -rounded))[:k]]
        return [(self.ids[i], self.labels[i], float(scores[i])) for i in best.tolist()]

    def _label_mask(self, labels: tuple[str, ...]) -> np.ndarray:
        key = ("labels", labels)
        if key not in self._memo:
            self._memo[key] = np.isin(self.labels, labels)
        return self._memo[key]

    def _id_rank(self) -> np.ndarray:
        """Each node's position in the order of the ids (the tie-break of :meth:`top`)."""
        if "id_rank" not in self._memo:
            rank = np.empty(len(self.ids), dtype=np.int64)
            rank[sorted(range(len(self.ids)), key=self.ids.__getitem__)] = np.arange(len(self.ids))
            self._memo["id_rank"] = rank
        return self._memo["id_rank"]


def graph_version(db: Database) -> Any:
    """When the stored graph last changed (one round trip: retrievers read it on every question)."""
    return db.read_plain(query("meta.version"))[0]["version"]


# (database connection, name) -> (version, what was read); one lock per name so concurrent
# questions wait for one read
_CACHE: weakref.WeakKeyDictionary[Database, dict[str, tuple[Any, Any]]] = weakref.WeakKeyDictionary()
_LOCKS: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
# (database connection, name) -> the estimated bytes of the value kept (with a bound set)
_BYTES: weakref.WeakKeyDictionary[Database, dict[str, int]] = weakref.WeakKeyDictionary()


def read_once(db: Database, name: str, version: Any, load: Callable[[], T]) -> tuple[T, bool]:
    """What ``load()`` reads from the store, kept per connection under ``name`` while the graph's
    ``version`` holds (the one place query-time in-memory copies of the graph are cached), and
    whether it was already there. ``version`` must be read before ``load`` runs: a write during the
    read then makes the next question read again.

    Memory: with ``GRAPHSTRATA_QUERY_CACHE_MB`` set, the values kept for one connection stay under
    it: older values are dropped to make room, and a value larger than the whole bound is not kept
    (each question then reads it again: slower, never more memory)."""
    with _LOCKS[name]:
        have = _CACHE.get(db, {}).get(name)
        if have is not None and have[0] == version:
            return have[1], True
        value = load()
        limit = _limit_bytes()
        cache, sizes = _CACHE.setdefault(db, {}), _BYTES.setdefault(db, {})
        cache.pop(name, None)
        sizes.pop(name, None)
        if limit is None:
            cache[name] = (version, value)
            return value, False
        size = deep_bytes(value)
        if size > limit:
            return value, False
        for other in list(cache):  # oldest first: a dict keeps insertion order
            if sum(sizes.values()) + size <= limit:
                break
            cache.pop(other, None)
            sizes.pop(other, None)
        cache[name], sizes[name] = (version, value), size
        return value, False


def cache_bytes(db: Database) -> dict[str, int]:
    """The estimated bytes of each value cached for ``db`` (measured now; bench/scale.py)."""
    return {name: deep_bytes(value) for name, (_, value) in list(_CACHE.get(db, {}).items())}


def _limit_bytes() -> int | None:
    from graphstrata.config import get_settings

    mb = get_settings().query_cache_mb
    return None if mb is None else mb * 2**20


def walk_graph(db: Database, name: str, version: Any = None) -> tuple[WalkGraph, bool]:
    """The graph `name` (named queries ``<name>_nodes`` → id, label, own_text and ``<name>_edges`` → a, b, type,
    weight (null: 1))
    at the store's current `version` (read here when not given), and whether it was already loaded."""
    if version is None:
        version = graph_version(db)

    def load() -> WalkGraph:
        nodes = db.read_rows(query(f"{name}_nodes"), ["id", "label", "own_text"])
        ids = [r[0] for r in nodes]
        index = {i: n for n, i in enumerate(ids)}
        edges = [
            (index[a], index[b], t, w)
            for a, b, t, w in db.read_rows(query(f"{name}_edges"), ["a", "b", "type", "weight"])
            if a in index and b in index  # a node written after the node list waits for the next read
        ]
        weights = np.array([1.0 if e[3] is None else float(e[3]) for e in edges], dtype=np.float64)
        return WalkGraph(
            ids=ids,
            labels=np.array([r[1] for r in nodes], dtype=object),
            own_text=np.array([bool(r[2]) for r in nodes], dtype=bool),
            src=np.array([e[0] for e in edges], dtype=np.int64),
            dst=np.array([e[1] for e in edges], dtype=np.int64),
            types=np.array([e[2] for e in edges], dtype=object),
            version=version,
            index=index,
            weights=None if (weights == 1.0).all() else weights,
        )

    return read_once(db, f"walk:{name}", version, load)
