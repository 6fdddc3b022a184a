"""Personalized PageRank by power iteration on a sparse undirected graph.

pi(0) = (1 - d) s;  pi(k) = (1 - d) s + d P^T pi(k-1),  P the row-stochastic transition matrix of
the graph, s the personalization (seed) vector normalised to sum 1, d the damping factor (the
probability of following an edge). ``iterations`` counts pi(0) as the first, as Neo4j GDS does
(``gds.pageRank`` with ``sourceNodes``, ``scaler: 'NONE'``, ``tolerance: 0``), so the two agree
iteration by iteration. A node without edges keeps its own restart mass and passes nothing on
(GDS's handling of dangling nodes), so on a graph with such nodes the scores sum to less than 1.

The work of a step is bounded by the walk, not the graph: while the scores are non-zero on few
nodes (a short walk from a few seeds: NodeRAG's two steps, HippoRAG's first ones), a step reads only
those nodes' rows of P (``P^T pi = sum_i pi_i P[i, :]``); once their rows hold a large share of the
graph's edges, the whole sparse product is as cheap and is taken instead. Both give the same scores
(up to the order of floating-point sums).

With a ``tolerance`` ε > 0 the same sum is taken as residual pushes (Andersen, Chung & Lang,
"Local graph partitioning using PageRank vectors", FOCS 2006): the restart share of the seeds is
pi(K-1) = (1 - d) sum_j r_j with r_0 = s and r_{j+1} = d P^T r_j, and a round moves only the residual
of the nodes holding more than ε times their number of edges (the rest waits, growing, for a later
round). A round then reads fewer than 1/ε edges whatever the graph's size, so the walk's cost is
bounded by the question's seeds instead of the corpus; a node's score is off by less than ε times its
edges times 1/(1 - d). ε = 0 pushes every node every round: the exact iteration above.

Reference: Page et al. (1999); personalised ("topic-sensitive") form: Haveliwala (2002).
Tested against networkx.pagerank (converged) and a dense numpy iteration in tests/test_ppr.py.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def transition_matrix(
    n: int, sources: np.ndarray, targets: np.ndarray, weights: np.ndarray | None = None
) -> sp.csr_matrix:
    """Row-stochastic P of the undirected multigraph with edges (sources[i], targets[i]) on n nodes:
    each edge counts once in each direction, with its weight (default 1) — a step goes to a neighbour
    in proportion to the edges' weights; a node without edges has a zero row."""
    w = np.ones(len(sources), dtype=np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
    adj = sp.coo_matrix((w, (sources, targets)), shape=(n, n)).tocsr()
    adj = (adj + adj.T).tocsr()
    degree = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return sp.diags(inv) @ adj


def personalized_pagerank(
    transition: sp.csr_matrix,
    seeds: np.ndarray,
    damping: float = 0.5,
    iterations: int = 10,
    *,
    from_seeds: bool = False,
    tolerance: float = 0.0,
) -> np.ndarray:
    """Scores of every node (see the module docstring for the recurrence). ``from_seeds``: start
    from pi(0) = s instead of (1 - d) s, as NodeRAG's shallow PPR (§2.5) writes it; the two differ
    only while the walk is short of convergence. ``tolerance``: the pushes' ε (0: exact)."""
    total = float(seeds.sum())
    if total <= 0:
        return np.zeros(transition.shape[0])
    s = seeds / total
    if tolerance > 0:
        return _pushed(transition, s, damping, iterations, from_seeds, tolerance)
    restart = (1 - damping) * s
    pi = s.copy() if from_seeds else restart.copy()
    for _ in range(iterations - 1):
        pi = walk_step(transition, pi)
        pi *= damping
        pi += restart
    return pi


#: a step reads the rows of the nodes with a score while those rows hold less than this share of the
#: graph's edges; above it the whole product (one pass over every edge, in scipy's C loop) is cheaper
FRONTIER_SHARE = 0.25


def _pushed(
    transition: sp.csr_matrix, s: np.ndarray, damping: float, iterations: int, from_seeds: bool, tolerance: float
) -> np.ndarray:
    """The residual pushes of the module docstring: iterations - 1 rounds, then every node keeps the
    restart share of the residual it still holds (all of it when ``from_seeds``, as pi(0) = s)."""
    edges = np.diff(transition.indptr)
    p = np.zeros_like(s)
    r = s.copy()
    for _ in range(iterations - 1):
        nodes = np.flatnonzero(r > tolerance * edges)
        if nodes.size == 0:
            break
        pushed = np.zeros_like(r)
        pushed[nodes] = r[nodes]
        r[nodes] = 0.0
        p[nodes] += (1 - damping) * pushed[nodes]
        r += damping * walk_step(transition, pushed)
    p += r if from_seeds else (1 - damping) * r
    return p


def walk_step(transition: sp.csr_matrix, pi: np.ndarray) -> np.ndarray:
    """``P^T pi``: from the rows of the nodes where ``pi`` is non-zero while they are few, else the
    whole product."""
    nodes = np.flatnonzero(pi)
    indptr = transition.indptr
    lengths = indptr[nodes + 1] - indptr[nodes]
    if int(lengths.sum()) > FRONTIER_SHARE * transition.nnz:
        return transition.T @ pi  # a CSC view: no copy
    return _spread(transition, nodes, pi[nodes])


def _spread(transition: sp.csr_matrix, nodes: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """``sum_i mass_i P[nodes_i, :]`` as a dense vector: only those rows are read."""
    indptr = transition.indptr
    lengths = indptr[nodes + 1] - indptr[nodes]
    total = int(lengths.sum())
    # the positions of those rows' entries in indices/data, row after row
    offsets = np.cumsum(lengths) - lengths
    at = np.arange(total) + np.repeat(indptr[nodes] - offsets, lengths)
    moved = transition.data[at] * np.repeat(mass, lengths)
    return np.bincount(transition.indices[at], weights=moved, minlength=transition.shape[0])
