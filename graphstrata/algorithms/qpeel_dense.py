"""Q-Peel's peeling loop (DA-RAG Algorithm 1, lines 6–11) compiled with numba, on the dense state of
:class:`graphstrata.algorithms.qpeel._DensePeelState` (adjacency and triangle-support matrices).

The same removals as the Python loop of :func:`graphstrata.algorithms.qpeel.q_peel_component`, which
still runs components too large for dense matrices; both are checked against a literal reading of
Algorithm 1 in tests/test_ktruss.py. Compiled once per machine (numba's on-disk cache) and run
without the GIL, so questions peel side by side.

The witness rule (why a blocked node need not be checked again until a node of its witness goes) is
explained on :class:`graphstrata.algorithms.qpeel._PeelState`; here each blocked node keeps only its
latest witness, and the scan restarts from the lowest position a freed node holds.

Also compiled here, for what a question does around each peel: :func:`dense_start` (the dense
state a peel starts from), :func:`graph_diameter` (a community's diameter, B.3, by eccentricity
bounds), :func:`bfs_diameter` (B.3's diameter between given members), :func:`top_means` (the
QRScore bound of every component); neighbour lists come from
:func:`graphstrata.algorithms.ktruss_compiled.neighbour_lists`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.algorithms.ktruss_compiled import neighbour_lists


@njit(cache=True, nogil=True)
def peel_dense(
    adj: np.ndarray,  # (n, n) bool, changed in place
    support: np.ndarray,  # (n, n) int32: triangles through each edge, changed in place
    indptr: np.ndarray,  # CSR of the component's edges (both directions): where to look for neighbours
    indices: np.ndarray,
    order: np.ndarray,  # nodes by ascending cosine to the query (SortByRelevance)
    sim: np.ndarray,  # each node's cosine to the query
    total: float,  # sum of ``sim``, as numpy summed it (the mean test must round as the Python loop's)
    k: int,
    n_edges: int,
) -> np.ndarray:
    """Peel one component; the mask of the nodes kept."""
    n = adj.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    size = n
    position = np.empty(n, dtype=np.int64)
    for i in range(n):
        position[order[i]] = i
    queued = np.ones(n, dtype=np.bool_)  # by position
    witness = np.full((n, 2), -1, dtype=np.int64)  # a blocked node's (a, b)
    nbrs = np.empty(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    ptr = 0
    while size >= 2:
        while ptr < n and not queued[ptr]:
            ptr += 1
        if ptr == n:
            break
        x = order[ptr]
        if not alive[x]:
            queued[ptr] = False
            continue
        # QRScore(S \ {x}) > QRScore(S) <=> cos(x) < mean; ascending order: no later node passes either
        if not (total - sim[x]) / (size - 1) > total / size:
            break
        queued[ptr] = False
        deg = 0
        for p in range(indptr[x], indptr[x + 1]):
            if adj[x, indices[p]]:
                nbrs[deg] = indices[p]
                deg += 1
        a, b = _blocker(adj, support, indptr, indices, x, nbrs, deg, k, n_edges, seen, stack)
        if a >= 0:
            witness[x, 0] = a
            witness[x, 1] = b
            continue
        # remove x: each edge among its neighbours loses the triangle through x
        total -= sim[x]
        for i in range(deg):
            u = nbrs[i]
            for j in range(i + 1, deg):
                v = nbrs[j]
                if support[u, v] > 0:
                    support[u, v] -= 1
                    support[v, u] -= 1
        for i in range(deg):
            u = nbrs[i]
            adj[x, u] = adj[u, x] = False
            support[x, u] = support[u, x] = 0
        n_edges -= deg
        alive[x] = False
        size -= 1
        for y in range(n):  # the nodes whose witness x was are checked again
            if witness[y, 0] == x or witness[y, 1] == x:
                witness[y, 0] = witness[y, 1] = -1
                if alive[y] and not queued[position[y]]:
                    queued[position[y]] = True
                    ptr = min(ptr, position[y])
    return alive


@njit(cache=True, nogil=True)
def _blocker(adj, support, indptr, indices, x, nbrs, deg, k, n_edges, seen, stack):
    """(-1, -1) if G[S \\ {x}] is still a connected k-truss, else a witness (see the module docstring)."""
    if n_edges == deg:
        return x, x  # an edgeless remainder is not a community, and stays so
    # x is a common neighbour of any two of its neighbours: they are joined iff their support > 0
    for i in range(deg):
        u = nbrs[i]
        for j in range(i + 1, deg):
            s = support[u, nbrs[j]]
            if 0 < s <= k - 2:
                return u, nbrs[j]
    # G - x is connected if x's neighbours are connected among themselves ...
    start = nbrs[0]
    seen[start] = True
    stack[0] = start
    top, reached = 1, 1
    while top:
        top -= 1
        u = stack[top]
        for i in range(deg):
            v = nbrs[i]
            if not seen[v] and adj[u, v]:
                seen[v] = True
                stack[top] = v
                top += 1
                reached += 1
    for i in range(deg):
        seen[nbrs[i]] = False
    if reached == deg:
        return -1, -1
    # ... else one search in G - x from the first neighbour decides (it stops once all are reached)
    missing = deg - 1
    seen[start] = True
    stack[0] = start
    top = 1
    is_nbr = adj[x]
    while top and missing:
        top -= 1
        u = stack[top]
        for p in range(indptr[u], indptr[u + 1]):
            v = indices[p]
            if v != x and not seen[v] and adj[u, v]:
                seen[v] = True
                stack[top] = v
                top += 1
                if is_nbr[v]:
                    missing -= 1
    cut = -1
    for i in range(deg):
        if not seen[nbrs[i]]:
            cut = nbrs[i]
            break
    seen[:] = False
    return (-1, -1) if cut < 0 else (start, cut)


@njit(cache=True, nogil=True)
def dense_start(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`peel_dense` starts from for the simple graph on 0..n-1 with edges ``(u[i], v[i])``:
    the adjacency matrix, each edge's triangle support (common neighbours of its ends, counted
    from the end of lower degree) and the neighbour lists."""
    indptr, indices, _ = neighbour_lists(n, u, v)
    adj = np.zeros((n, n), dtype=np.bool_)
    for i in range(u.size):
        adj[u[i], v[i]] = adj[v[i], u[i]] = True
    support = np.zeros((n, n), dtype=np.int32)
    for i in range(u.size):
        a, b = u[i], v[i]
        if indptr[a + 1] - indptr[a] > indptr[b + 1] - indptr[b]:
            a, b = b, a
        common = 0
        for p in range(indptr[a], indptr[a + 1]):
            if adj[b, indices[p]]:
                common += 1
        support[a, b] = support[b, a] = common
    return adj, support, indptr, indices


@njit(cache=True, nogil=True)
def _eccentricity(indptr, indices, s, dist, queue) -> int:
    """BFS from ``s``: fills ``dist`` (-1: unreachable) and returns the largest distance reached."""
    dist[:] = -1
    dist[s] = 0
    queue[0] = s
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for p in range(indptr[u], indptr[u + 1]):
            w = indices[p]
            if dist[w] < 0:
                dist[w] = dist[u] + 1
                queue[tail] = w
                tail += 1
    return dist[queue[tail - 1]]


@njit(cache=True, nogil=True)
def graph_diameter(indptr: np.ndarray, indices: np.ndarray) -> int:
    """The longest finite shortest path of the graph of the CSR ``indptr``/``indices`` (the largest
    diameter of its connected components), with few BFS: BoundingDiameters (F. W. Takes and W. A.
    Kosters, "Determining the diameter of small world networks", CIKM 2011). Each BFS from a node v
    bounds every eccentricity e(w) in v's component by max(e(v) - d(v, w), d(v, w)) <= e(w) <=
    e(v) + d(v, w); a node whose bounds can no longer move the diameter's bounds is dropped, and
    the search ends when the lower and upper bound of the diameter meet."""
    n = indptr.size - 1
    dist = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    lower = np.zeros(n, dtype=np.int64)
    upper = np.full(n, n, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)  # reached by a BFS of an earlier component
    best = 0
    for root in range(n):
        if done[root]:
            continue
        _eccentricity(indptr, indices, root, dist, queue)
        members = np.flatnonzero(dist >= 0)
        done[members] = True
        if members.size < 2:
            continue
        active = np.ones(members.size, dtype=np.bool_)
        d_low, d_up = 0, n
        high = True  # alternate: the largest upper bound, then the smallest lower bound
        while d_low < d_up:
            pick = -1
            for i in range(members.size):
                if not active[i]:
                    continue
                if pick < 0:
                    pick = i
                    continue
                a, b = members[i], members[pick]
                if high:
                    better = upper[a] > upper[b] or (
                        upper[a] == upper[b] and indptr[a + 1] - indptr[a] > indptr[b + 1] - indptr[b]
                    )
                else:
                    better = lower[a] < lower[b] or (
                        lower[a] == lower[b] and indptr[a + 1] - indptr[a] > indptr[b + 1] - indptr[b]
                    )
                if better:
                    pick = i
            if pick < 0:
                break
            high = not high
            v = members[pick]
            ecc = _eccentricity(indptr, indices, v, dist, queue)
            top = 0
            for i in range(members.size):
                w = members[i]
                d = dist[w]
                lower[w] = max(lower[w], max(ecc - d, d))
                upper[w] = min(upper[w], ecc + d)
                d_low = max(d_low, lower[w])
                top = max(top, upper[w])
            d_up = min(d_up, top)
            for i in range(members.size):
                w = members[i]
                if active[i] and (lower[w] == upper[w] or (upper[w] <= d_low and 2 * lower[w] >= d_up)):
                    active[i] = False
        best = max(best, d_low)
    return best


@njit(cache=True, nogil=True)
def bfs_diameter(indptr: np.ndarray, indices: np.ndarray, sources: np.ndarray) -> int:
    """The longest finite shortest path between two of ``sources`` in the graph of the CSR
    ``indptr``/``indices`` (both directions of every edge): a BFS from each source."""
    n = indptr.size - 1
    dist = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    best = 0
    for s in sources:
        _eccentricity(indptr, indices, s, dist, queue)
        for t in sources:
            best = max(best, dist[t])  # an unreachable member is -1: skipped
    return best


@njit(cache=True, nogil=True)
def top_means(values: np.ndarray, nodes: np.ndarray, ptr: np.ndarray, k: int) -> np.ndarray:
    """For each group ``nodes[ptr[i]:ptr[i + 1]]`` (of at least ``k`` nodes), the mean of its ``k``
    largest ``values``."""
    out = np.empty(ptr.size - 1)
    for i in range(ptr.size - 1):
        out[i] = np.sort(values[nodes[ptr[i] : ptr[i + 1]]])[-k:].mean()
    return out
