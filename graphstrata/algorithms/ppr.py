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
) -> np.ndarray:
    """Scores of every node (see the module docstring for the recurrence). ``from_seeds``: start
    from pi(0) = s instead of (1 - d) s, as NodeRAG's shallow PPR (§2.5) writes it; the two differ
    only while the walk is short of convergence."""
    total = float(seeds.sum())
    if total <= 0:
        return np.zeros(transition.shape[0])
    s = seeds / total
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


def walk_step(transition: sp.csr_matrix, pi: np.ndarray) -> np.ndarray:
    """``P^T pi``: from the rows of the nodes where ``pi`` is non-zero while they are few, else the
    whole product."""
    nodes = np.flatnonzero(pi)
    indptr = transition.indptr
    lengths = indptr[nodes + 1] - indptr[nodes]
    total = int(lengths.sum())
    if total > FRONTIER_SHARE * transition.nnz:
        return transition.T @ pi  # a CSC view: no copy
    # the positions of those rows' entries in indices/data, row after row
    offsets = np.cumsum(lengths) - lengths
    at = np.arange(total) + np.repeat(indptr[nodes] - offsets, lengths)
    mass = transition.data[at] * np.repeat(pi[nodes], lengths)
    return np.bincount(transition.indices[at], weights=mass, minlength=len(pi))
