"""Truss decomposition and connected components compiled with numba, for the graphs DA-RAG searches
on every question (a working subgraph's layers: a few thousand edges, where numpy's per-call costs
outweigh the work).

- :func:`truss_numbers`: the bin-sort peel of J. Wang and J. Cheng, "Truss decomposition in massive
  networks" (PVLDB 5(9), 2012, Algorithm 2), with each edge's triangles found by merging the sorted
  neighbour lists of its ends; the same numbers as the vectorised peels of
  :mod:`graphstrata.algorithms.ktruss` (``method="compiled"`` there; tests/test_ktruss.py checks all
  three against networkx).
- :func:`component_groups`: connected components by BFS, grouped and ordered as
  :func:`graphstrata.algorithms.ktruss.component_edges` orders them.

Both take a simple graph in local ids (:class:`graphstrata.algorithms.ktruss.SimpleGraph`'s ``u <
v``, distinct, sorted by ``(u, v)``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def neighbour_lists(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The neighbour lists (CSR, both directions of every edge) of the graph on nodes 0..n-1 with
    the edges ``(u[i], v[i])``, with the index of each neighbour's edge: ``(indptr, neighbours,
    edge)``. Ascending in every row when the edges come sorted by (u, v), as a
    :class:`~graphstrata.algorithms.ktruss.SimpleGraph`'s do: a row first gets its smaller
    neighbours (as the v of earlier edges), then its larger ones (as the u of its own)."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(u.size):
        indptr[u[i] + 1] += 1
        indptr[v[i] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    nbr = np.empty(2 * u.size, dtype=np.int64)
    eid = np.empty(2 * u.size, dtype=np.int64)
    for i in range(u.size):
        a, b = u[i], v[i]
        nbr[fill[a]], eid[fill[a]] = b, i
        fill[a] += 1
        nbr[fill[b]], eid[fill[b]] = a, i
        fill[b] += 1
    return indptr, nbr, eid


@njit(cache=True, nogil=True)
def truss_numbers(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The truss number of every edge ``(u[i], v[i])`` of a simple graph on ``0..n-1``."""
    m = u.size
    truss = np.zeros(m, dtype=np.int64)
    if m == 0:
        return truss
    indptr, nbr, eid = neighbour_lists(n, u, v)
    support = np.zeros(m, dtype=np.int64)
    for e in range(m):
        p, p_end, q, q_end = indptr[u[e]], indptr[u[e] + 1], indptr[v[e]], indptr[v[e] + 1]
        while p < p_end and q < q_end:
            if nbr[p] == nbr[q]:
                support[e] += 1
                p += 1
                q += 1
            elif nbr[p] < nbr[q]:
                p += 1
            else:
                q += 1
    # the edges bin-sorted by support: bin_start[s] is where the edges of support s begin in order
    top = support.max()
    bin_start = np.zeros(top + 2, dtype=np.int64)
    for e in range(m):
        bin_start[support[e] + 1] += 1
    for s in range(top + 1):
        bin_start[s + 1] += bin_start[s]
    order = np.empty(m, dtype=np.int64)
    pos = np.empty(m, dtype=np.int64)
    fill = bin_start.copy()
    for e in range(m):
        pos[e] = fill[support[e]]
        order[pos[e]] = e
        fill[support[e]] += 1
    alive = np.ones(m, dtype=np.bool_)
    k = 2
    for i in range(m):
        e = order[i]
        s = support[e]
        k = max(k, s + 2)
        truss[e] = k
        alive[e] = False
        # every triangle e still closes: its two other edges each lose it (never below this level)
        p, p_end, q, q_end = indptr[u[e]], indptr[u[e] + 1], indptr[v[e]], indptr[v[e] + 1]
        while p < p_end and q < q_end:
            if nbr[p] < nbr[q]:
                p += 1
            elif nbr[p] > nbr[q]:
                q += 1
            else:
                f1, f2 = eid[p], eid[q]
                p += 1
                q += 1
                if not (alive[f1] and alive[f2]):
                    continue  # the triangle went with an edge peeled before
                for f in (f1, f2):
                    sf = support[f]
                    if sf <= s:
                        continue
                    front = bin_start[sf]  # f moves to the front of its bin, which then starts after it
                    w = order[front]
                    if w != f:
                        pf = pos[f]
                        order[pf], pos[w] = w, pf
                        order[front], pos[f] = f, front
                    bin_start[sf] += 1
                    support[f] = sf - 1
    return truss


@njit(cache=True, nogil=True)
def component_groups(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The connected components of the graph of the edges ``(u[i], v[i])`` on ``0..n-1`` (nodes
    without an edge are left out), largest first, ties by smallest node: ``(node_ptr, nodes,
    edge_ptr, edges)`` where component ``c`` holds the ascending nodes ``nodes[node_ptr[c]:node_ptr[c
    + 1]]`` and the edge indices ``edges[edge_ptr[c]:edge_ptr[c + 1]]`` in input order."""
    indptr, nbr, _ = neighbour_lists(n, u, v)
    label = np.full(n, -1, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    count = 0
    for root in range(n):  # labels in order of each component's smallest node
        if label[root] >= 0 or indptr[root] == indptr[root + 1]:
            continue
        label[root] = count
        queue[0] = root
        head, tail = 0, 1
        while head < tail:
            x = queue[head]
            head += 1
            for p in range(indptr[x], indptr[x + 1]):
                y = nbr[p]
                if label[y] < 0:
                    label[y] = count
                    queue[tail] = y
                    tail += 1
        count += 1
    sizes = np.zeros(count, dtype=np.int64)
    for x in range(n):
        if label[x] >= 0:
            sizes[label[x]] += 1
    rank = np.empty(count, dtype=np.int64)
    rank[np.argsort(-sizes, kind="mergesort")] = np.arange(count)  # stable: ties keep smallest-node order
    node_ptr = np.zeros(count + 1, dtype=np.int64)
    edge_ptr = np.zeros(count + 1, dtype=np.int64)
    for x in range(n):
        if label[x] >= 0:
            node_ptr[rank[label[x]] + 1] += 1
    for i in range(u.size):
        edge_ptr[rank[label[u[i]]] + 1] += 1
    for c in range(count):
        node_ptr[c + 1] += node_ptr[c]
        edge_ptr[c + 1] += edge_ptr[c]
    nodes = np.empty(node_ptr[count], dtype=np.int64)
    edges = np.empty(u.size, dtype=np.int64)
    node_fill = node_ptr[:-1].copy()
    edge_fill = edge_ptr[:-1].copy()
    for x in range(n):
        if label[x] >= 0:
            c = rank[label[x]]
            nodes[node_fill[c]] = x
            node_fill[c] += 1
    for i in range(u.size):
        c = rank[label[u[i]]]
        edges[edge_fill[c]] = i
        edge_fill[c] += 1
    return node_ptr, nodes, edge_ptr, edges
