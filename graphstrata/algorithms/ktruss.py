"""Truss decomposition of an undirected graph given as an edge list.

Reference: J. Wang and J. Cheng, "Truss decomposition in massive networks", PVLDB 5(9):812–823, 2012
(the "standard decomposition algorithm" that DA-RAG's Q-Peel uses to extract the maximal k-truss,
§5.2 of the DA-RAG paper).

Conventions (the same as ``networkx.k_truss`` and Cohen 2008):

* the *k-truss* is the largest subgraph in which every edge closes at least ``k - 2`` triangles
  inside that subgraph;
* the *truss number* of an edge is the largest ``k`` whose k-truss contains it, so an edge that lies
  in no triangle has truss number 2, and every edge of a clique ``K_n`` has truss number ``n``.

Input handling: node ids are arbitrary integers (relabelled to ``0..n-1`` internally, so sparse or
huge ids such as Neo4j internal ids cost nothing).  Self-loops are ignored.  ``(u, v)``, ``(v, u)``
and repeated rows are one undirected edge.  Functions that return one value per input row
(:func:`truss_decomposition`, :func:`k_truss`) give every copy of an edge the value of that edge
and give self-loop rows truss number ``0`` (never part of any k-truss).

How it works:

1. *Triangle listing.*  Every edge is oriented from its lower-ranked to its higher-ranked endpoint,
   ranking nodes by (degree, id).  Each node then has O(sqrt(m)) out-neighbours, and each triangle
   ``a -> b -> c`` is found exactly once as a wedge ``a -> b -> c`` closed by the oriented edge
   ``a -> c``.  Wedges are enumerated and checked with vectorised numpy (``np.repeat`` over a CSR
   adjacency, ``np.searchsorted`` over the sorted edge keys): O(m^1.5) work, no Python loop.
2. *Support* of an edge = number of triangles containing it (a ``bincount`` over the triangle list);
   an edge → triangles CSR index lets the peeling phase find the triangles of an edge directly, so
   no neighbour-set intersections are repeated while peeling.
3. *Peeling.*  Wang & Cheng peel one minimum-support edge at a time from a bin-sorted queue,
   decrementing the support of the other two edges of every live triangle it closed.
   ``method="levels"`` peels the same way but removes, at level ``k``, *all* live edges whose support
   is ``<= k - 2`` in one vectorised step and then only re-examines the edges whose support just
   dropped.  The result is identical: an edge whose support is ``<= k - 2`` at level ``k`` leaves at
   level ``k`` whatever the order, and a triangle losing several edges in one step still decrements
   each surviving edge exactly once (it dies when its first edge goes).  ``method="sequential"`` is
   the literal bin-sort algorithm of Wang & Cheng in plain Python lists, kept as an
   independent cross-check.  The default, ``method="compiled"``, is that bin-sort algorithm compiled
   (:mod:`graphstrata.algorithms.ktruss_compiled`), triangles found by merging sorted neighbour
   lists: on the graphs DA-RAG cuts per question it costs a fraction of the numpy calls' overhead.

Speed against networkx and between the two peels: ``bench/bench_ktruss.py`` (bench/results/ktruss.json).
The level-synchronous peel's worst case is a cascade that frees one edge per round (a long chain of
triangles held up by denser gadgets); there the sequential method is the faster one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.ktruss_compiled import truss_numbers

__all__ = [
    "SimpleGraph",
    "connected_components",
    "is_connected_k_truss",
    "k_truss",
    "k_truss_components",
    "max_truss",
    "simplify_edges",
    "truss_decomposition",
]

IntArray = npt.NDArray[np.int64]

# Upper bound on wedges materialised at once while listing triangles (~5 arrays of this many int64s).
_WEDGE_CHUNK = 1 << 22


@dataclass(frozen=True)
class SimpleGraph:
    """A simple undirected graph distilled from an arbitrary edge list.

    ``nodes[i]`` is the original id of local node ``i`` (sorted ascending).  ``u``/``v`` are the local
    endpoints of each distinct edge with ``u < v``, ordered by ``(u, v)``.  ``row_to_edge[r]`` is the
    index of input row ``r``'s edge in ``u``/``v``, or ``-1`` for a self-loop.
    """

    nodes: IntArray
    u: IntArray
    v: IntArray
    row_to_edge: IntArray

    @property
    def n_nodes(self) -> int:
        return int(self.nodes.size)

    @property
    def n_edges(self) -> int:
        return int(self.u.size)

    def edges(self) -> IntArray:
        """The distinct edges as an ``(m, 2)`` array of original node ids, smaller id first."""
        return np.stack([self.nodes[self.u], self.nodes[self.v]], axis=1)


def _as_edge_array(edges: npt.ArrayLike) -> IntArray:
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"edges must have shape (m, 2), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"edges must hold integer node ids, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def simplify_edges(edges: npt.ArrayLike, n_nodes: int | None = None) -> SimpleGraph:
    """Relabel nodes to ``0..n-1``, drop self-loops and merge duplicate / reversed edges.

    ``n_nodes`` is optional and only validates that ids lie in ``[0, n_nodes)``.  Nodes that only carry
    self-loops are kept in ``nodes`` (they are isolated in the simple graph).
    """
    arr = _as_edge_array(edges)
    if n_nodes is not None and arr.size and (arr.min() < 0 or arr.max() >= n_nodes):
        raise ValueError(f"node ids must lie in [0, {n_nodes})")
    nodes, local = np.unique(arr, return_inverse=True)
    local = local.reshape(-1, 2).astype(np.int64, copy=False)
    lo, hi = local.min(axis=1), local.max(axis=1)
    n = int(nodes.size)
    # One int64 key per undirected edge; self-loops get key -1, which sorts first and is dropped.
    keys = np.where(lo != hi, lo * n + hi, -1)
    ukeys, row_to_edge = np.unique(keys, return_inverse=True)
    row_to_edge = row_to_edge.astype(np.int64, copy=False)
    if ukeys.size and ukeys[0] == -1:
        ukeys = ukeys[1:]
        row_to_edge -= 1
    return SimpleGraph(nodes=nodes.astype(np.int64), u=ukeys // n, v=ukeys % n, row_to_edge=row_to_edge)


# --------------------------------------------------------------------------------------------------
# Triangle index
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TriangleIndex:
    tri_edges: IntArray  # (T, 3) edge ids of every triangle
    edge_ptr: IntArray  # (m + 1,) CSR offsets: triangles of edge e are edge_tris[edge_ptr[e]:edge_ptr[e+1]]
    edge_tris: IntArray  # (3T,)
    support: IntArray  # (m,) number of triangles per edge


def csr_gather(ptr: IntArray, data: IntArray, rows: IntArray) -> IntArray:
    """Concatenation of ``data[ptr[r]:ptr[r+1]]`` for every ``r`` in ``rows``, without a Python loop."""
    starts = ptr[rows]
    lengths = ptr[rows + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    # position j of the output belongs to row i: index = starts[i] + (j - first output slot of row i)
    first_slot = np.cumsum(lengths) - lengths
    return data[np.repeat(starts - first_slot, lengths) + np.arange(total)]


def _triangle_index(g: SimpleGraph) -> _TriangleIndex:
    n, m = g.n_nodes, g.n_edges
    deg = np.bincount(np.concatenate([g.u, g.v]), minlength=n)
    # Rank by (degree, id); orienting low → high rank bounds every out-degree by sqrt(2m).
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), deg))] = np.arange(n)
    flip = rank[g.u] > rank[g.v]
    src = np.where(flip, g.v, g.u)
    dst = np.where(flip, g.u, g.v)
    okey = src * n + dst
    order = np.argsort(okey, kind="stable")  # oriented edges grouped by source: a CSR adjacency
    okey, src, dst, oeid = okey[order], src[order], dst[order], order.astype(np.int64)
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=out_ptr[1:])

    # Wedge a→b→c for oriented edge a→b (index i) and every out-edge b→c (index j of the CSR).
    # Chunk over i so that at most ~_WEDGE_CHUNK wedges are materialised at once.
    wedges_per_edge = out_ptr[dst + 1] - out_ptr[dst]
    cum = np.cumsum(wedges_per_edge)
    parts: list[IntArray] = []
    lo = 0
    while lo < m:
        base = cum[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(cum, base + _WEDGE_CHUNK, side="right")), lo + 1)
        i_idx = np.arange(lo, hi)
        j_idx = csr_gather(out_ptr, np.arange(m, dtype=np.int64), dst[i_idx])
        i_idx = np.repeat(i_idx, wedges_per_edge[lo:hi])
        closing = src[i_idx] * n + dst[j_idx]  # the key a→c must exist for a triangle
        pos = np.searchsorted(okey, closing)
        pos[pos == m] = 0
        hit = okey[pos] == closing
        parts.append(np.stack([oeid[i_idx[hit]], oeid[j_idx[hit]], oeid[pos[hit]]], axis=1))
        lo = hi
    tri_edges = np.concatenate(parts) if parts else np.empty((0, 3), dtype=np.int64)

    incident_edge = tri_edges.ravel()
    support = np.bincount(incident_edge, minlength=m).astype(np.int64)
    edge_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(support, out=edge_ptr[1:])
    # ravel() is row-major, so incidence p belongs to triangle p // 3.
    edge_tris = (np.argsort(incident_edge, kind="stable") // 3).astype(np.int64)
    return _TriangleIndex(tri_edges=tri_edges, edge_ptr=edge_ptr, edge_tris=edge_tris, support=support)


# --------------------------------------------------------------------------------------------------
# Peeling
# --------------------------------------------------------------------------------------------------


def _peel_levels(m: int, idx: _TriangleIndex) -> IntArray:
    """Level-synchronous support peeling (see module docstring); returns truss numbers per edge."""
    support = idx.support.copy()
    edge_alive = np.ones(m, dtype=bool)
    tri_alive = np.ones(len(idx.tri_edges), dtype=bool)
    truss = np.zeros(m, dtype=np.int64)
    live_ids = np.arange(m, dtype=np.int64)  # superset of the live edges, compacted once per level
    remaining = m
    k = 1
    frontier = np.empty(0, dtype=np.int64)
    while remaining:
        if frontier.size == 0:
            # Level exhausted: jump straight to the next level that peels something.
            live_ids = live_ids[edge_alive[live_ids]]
            k = max(k + 1, int(support[live_ids].min()) + 2)
            frontier = live_ids[support[live_ids] <= k - 2]
        truss[frontier] = k
        edge_alive[frontier] = False
        remaining -= frontier.size
        tris = csr_gather(idx.edge_ptr, idx.edge_tris, frontier)
        tris = np.unique(tris[tri_alive[tris]])  # a triangle may be reached through two frontier edges
        if tris.size == 0:
            frontier = np.empty(0, dtype=np.int64)
            continue
        tri_alive[tris] = False
        survivors = idx.tri_edges[tris].ravel()
        survivors = survivors[edge_alive[survivors]]
        touched, lost = np.unique(survivors, return_counts=True)
        support[touched] -= lost
        frontier = touched[support[touched] <= k - 2]
    return truss


def _peel_sequential(m: int, idx: _TriangleIndex) -> IntArray:
    """Wang & Cheng 2012 in-memory truss decomposition: bin-sorted queue, peel a min-support edge."""
    support = idx.support.tolist()
    order = np.argsort(idx.support, kind="stable").tolist()  # edges sorted by support
    pos = [0] * m  # pos[e] = index of e in order
    for i, e in enumerate(order):
        pos[e] = i
    max_sup = max(support, default=0)
    bin_start = [0] * (max_sup + 2)  # bin_start[s] = first index in order with support s
    for s in support:
        bin_start[s + 1] += 1
    for s in range(1, max_sup + 2):
        bin_start[s] += bin_start[s - 1]

    tri_edges = idx.tri_edges.tolist()
    edge_ptr = idx.edge_ptr.tolist()
    edge_tris = idx.edge_tris.tolist()
    tri_alive = [True] * len(tri_edges)
    removed = [False] * m
    truss = [0] * m
    k = 2
    for i in range(m):
        e = order[i]
        s = support[e]
        k = max(k, s + 2)
        truss[e] = k
        removed[e] = True
        for t in edge_tris[edge_ptr[e] : edge_ptr[e + 1]]:
            if not tri_alive[t]:
                continue
            tri_alive[t] = False
            for f in tri_edges[t]:
                sf = support[f]
                if removed[f] or sf <= s:
                    continue  # supports never need to drop below the current peel level
                # Move f to the front of its bin, shift the bin boundary: f now has support sf - 1.
                front = bin_start[sf]
                w = order[front]
                if w != f:
                    pf = pos[f]
                    order[pf], pos[w] = w, pf
                    order[front], pos[f] = f, front
                bin_start[sf] += 1
                support[f] = sf - 1
    return np.asarray(truss, dtype=np.int64)


Method = Literal["compiled", "levels", "sequential"]


def _edge_truss(g: SimpleGraph, method: Method) -> IntArray:
    if g.n_edges == 0:
        return np.empty(0, dtype=np.int64)
    if method == "compiled":
        return truss_numbers(g.n_nodes, g.u, g.v)
    idx = _triangle_index(g)
    if method == "levels":
        return _peel_levels(g.n_edges, idx)
    if method == "sequential":
        return _peel_sequential(g.n_edges, idx)
    raise ValueError(f"unknown method {method!r}")


def truss_decomposition(
    edges: npt.ArrayLike,
    n_nodes: int | None = None,
    *,
    method: Method = "compiled",
) -> IntArray:
    """Truss number of every row of ``edges`` (shape ``(m,)``, int64).

    Duplicate and reversed rows share the truss number of their undirected edge; self-loop rows get
    ``0``.  An edge in no triangle gets ``2``.  ``edges[truss >= k]`` is the maximal k-truss
    (identical edge set to ``networkx.k_truss(G, k)``).
    """
    g = simplify_edges(edges, n_nodes)
    truss = _edge_truss(g, method)
    out = np.zeros(g.row_to_edge.size, dtype=np.int64)
    rows = g.row_to_edge >= 0
    out[rows] = truss[g.row_to_edge[rows]]
    return out


def k_truss(edges: npt.ArrayLike, k: int, n_nodes: int | None = None) -> npt.NDArray[np.bool_]:
    """Boolean mask over the rows of ``edges`` selecting the maximal k-truss (self-loops never)."""
    return truss_decomposition(edges, n_nodes) >= max(k, 2)


def max_truss(edges: npt.ArrayLike, n_nodes: int | None = None) -> int:
    """The largest k for which the k-truss is non-empty (``0`` if there is no non-loop edge)."""
    truss = truss_decomposition(edges, n_nodes)
    return int(truss.max()) if truss.size else 0


# --------------------------------------------------------------------------------------------------
# Connectivity
# --------------------------------------------------------------------------------------------------


def _component_labels(n: int, u: IntArray, v: IntArray) -> IntArray:
    """Label each of ``n`` nodes with the smallest node of its component (hook + pointer jumping)."""
    parent = np.arange(n, dtype=np.int64)
    while True:
        pu, pv = parent[u], parent[v]  # parent is fully compressed here, so these are roots
        split = pu != pv
        if not split.any():
            return parent
        lo = np.minimum(pu[split], pv[split])
        hi = np.maximum(pu[split], pv[split])
        # Hook each larger root under a smaller root of the same component.  With duplicate ``hi`` an
        # arbitrary ``lo`` wins, which is fine: labels only ever decrease, so no cycle can form and the
        # component's smallest node, never hooked, ends up as its single root.
        parent[hi] = lo
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand


def connected_components(edges: npt.ArrayLike) -> list[IntArray]:
    """Connected components of the graph spanned by ``edges`` (self-loop-only nodes are singletons).

    Each component is a sorted array of original node ids; components are ordered by size
    (largest first), ties by smallest node id.
    """
    g = simplify_edges(edges)
    if g.n_nodes == 0:
        return []
    labels = _component_labels(g.n_nodes, g.u, g.v)
    order = np.argsort(labels, kind="stable")  # groups nodes by label, ascending node id inside
    _, starts, sizes = np.unique(labels[order], return_index=True, return_counts=True)
    comps = [g.nodes[order[s : s + c]] for s, c in zip(starts, sizes, strict=True)]
    comps.sort(key=lambda c: (-c.size, int(c[0])))
    return comps


def component_edges(edges: npt.ArrayLike) -> list[tuple[IntArray, IntArray]]:
    """:func:`connected_components` of the graph ``edges``, each with its own rows of ``edges``:
    ``(nodes, edges)`` per component, in the same order."""
    arr = _as_edge_array(edges)
    components = connected_components(arr)
    if not components:
        return []
    # every node to its component, so each component's edges come out in one pass
    comp_nodes = np.concatenate(components)
    comp_of = np.repeat(np.arange(len(components)), [c.size for c in components])
    by_node = np.argsort(comp_nodes)
    edge_comp = comp_of[by_node[np.searchsorted(comp_nodes, arr[:, 0], sorter=by_node)]]
    edge_order = np.argsort(edge_comp, kind="stable")
    bounds = np.searchsorted(edge_comp[edge_order], np.arange(len(components) + 1))
    return [(c, arr[edge_order[bounds[i] : bounds[i + 1]]]) for i, c in enumerate(components)]


def k_truss_components(edges: npt.ArrayLike, k: int, n_nodes: int | None = None) -> list[IntArray]:
    """Node sets (sorted original ids) of the connected components of the maximal k-truss.

    Ordered largest first, ties by smallest node id.  Empty list if the k-truss is empty.
    """
    arr = _as_edge_array(edges)
    return connected_components(arr[k_truss(arr, k, n_nodes)])


def is_connected_k_truss(edges: npt.ArrayLike, k: int) -> bool:
    """True iff ``edges`` form a non-empty, connected graph in which every edge closes >= k-2 triangles."""
    g = simplify_edges(edges)
    if g.n_edges == 0:
        return False
    if len(connected_components(g.edges())) != 1:
        return False
    return bool((_edge_truss(g, "compiled") >= k).all())
