"""algorithms/ppr.py against networkx's PageRank and a dense numpy iteration."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from graphstrata.algorithms import ppr
from graphstrata.algorithms.ppr import personalized_pagerank, transition_matrix


@pytest.mark.parametrize("seed", range(5))
def test_converged_scores_equal_networkx(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = nx.connected_watts_strogatz_graph(60, 4, 0.3, seed=seed)  # connected: no dangling node
    edges = np.array(list(g.edges()))
    weights = rng.random(60) * (rng.random(60) < 0.2)
    weights[0] += 0.5
    damping = float(rng.uniform(0.3, 0.85))
    ours = personalized_pagerank(transition_matrix(60, edges[:, 0], edges[:, 1]), weights, damping, 500)
    ref = nx.pagerank(g, alpha=damping, personalization=dict(enumerate(weights)), tol=1e-13, max_iter=2000)
    np.testing.assert_allclose(ours, [ref[i] for i in range(60)], atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_weighted_edges_equal_networkx_weighted_pagerank(seed: int) -> None:
    """HippoRAG 2's weighted edges (synonyms by similarity, relations by count): a step goes to a
    neighbour in proportion to the edge's weight, as networkx's PageRank with ``weight``."""
    rng = np.random.default_rng(seed)
    g = nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=seed)
    edges = np.array(list(g.edges()))
    w = rng.uniform(0.1, 5.0, len(edges))
    for (a, b), x in zip(edges.tolist(), w, strict=True):
        g[a][b]["weight"] = float(x)
    seeds = np.zeros(40)
    seeds[[0, 7]] = [0.7, 0.3]
    ours = personalized_pagerank(transition_matrix(40, edges[:, 0], edges[:, 1], w), seeds, 0.5, 500)
    ref = nx.pagerank(g, alpha=0.5, personalization=dict(enumerate(seeds)), weight="weight", tol=1e-13, max_iter=2000)
    np.testing.assert_allclose(ours, [ref[i] for i in range(40)], atol=1e-9)
    unweighted = personalized_pagerank(transition_matrix(40, edges[:, 0], edges[:, 1]), seeds, 0.5, 500)
    assert np.abs(ours - unweighted).max() > 1e-3  # the weights change the walk


def test_iterations_and_dangling_nodes_follow_the_gds_recurrence() -> None:
    """Node 4 has no edge: it keeps its restart mass and passes nothing on; 3 iterations = pi(0) + 2 steps;
    a parallel edge counts twice."""
    src, dst = np.array([0, 1, 1, 2, 0]), np.array([1, 2, 3, 3, 1])
    s = np.array([0.6, 0.0, 0.0, 0.0, 0.4])
    adj = np.zeros((5, 5))
    for a, b in zip(src, dst, strict=True):
        adj[a, b] += 1
        adj[b, a] += 1
    deg = adj.sum(1, keepdims=True)
    trans = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    pi = 0.5 * s
    for _ in range(2):
        pi = 0.5 * s + 0.5 * trans.T @ pi
    ours = personalized_pagerank(transition_matrix(5, src, dst), s * 10, 0.5, 3)  # seeds are normalised
    np.testing.assert_allclose(ours, pi, atol=1e-12)
    assert ours[4] == pytest.approx(0.5 * 0.4) and ours.sum() < 1
    assert not personalized_pagerank(transition_matrix(5, src, dst), np.zeros(5)).any()


def test_an_edge_repeated_by_a_semantic_edge_weighs_twice_as_networkx_multigraph() -> None:
    """NodeRAG §2.4: a semantic edge that joins two nodes already joined gains the edge weight + 1.
    The walk's graph is a multigraph, so a pair joined by two edges (of two types) carries weight 2."""
    edges = [(0, 1), (0, 1), (0, 2), (2, 3)]  # 0-1 joined twice (e.g. HAS_UNIT and SEMANTIC)
    multi = nx.MultiGraph()
    multi.add_nodes_from(range(4))
    multi.add_edges_from(edges)
    adj = nx.to_numpy_array(multi, nodelist=range(4))  # a multigraph's entries count its parallel edges
    expected = adj / adj.sum(axis=1, keepdims=True)
    src, dst = np.array([a for a, _ in edges]), np.array([b for _, b in edges])
    got = transition_matrix(4, src, dst).toarray()
    np.testing.assert_allclose(got, expected)
    assert got[0, 1] == pytest.approx(2 / 3)


@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("iterations", [2, 3, 6, 30])
def test_a_walk_from_few_seeds_equals_the_dense_iteration(
    iterations: int, share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a 3,000-node graph with hubs, a walk from three seeds, its steps taken from the reached rows
    only (share 1.0), the whole matrix only (0.0) or either as the default decides: all equal the dense
    recurrence of the module docstring, computed here with numpy on the full adjacency matrix."""
    monkeypatch.setattr(ppr, "FRONTIER_SHARE", share)
    rng = np.random.default_rng(7)
    n = 3000
    g = nx.barabasi_albert_graph(n, 2, seed=7)  # hubs: a few nodes hold many edges
    edges = np.array(list(g.edges()))
    s = np.zeros(n)
    s[rng.choice(np.arange(n - 500, n), 3, replace=False)] = [0.5, 0.3, 0.2]  # low-degree nodes
    adj = nx.to_numpy_array(g, nodelist=range(n))
    dense = adj / adj.sum(axis=1, keepdims=True)
    pi = s.copy()
    for _ in range(iterations - 1):
        pi = 0.15 * s + 0.85 * dense.T @ pi
    ours = personalized_pagerank(transition_matrix(n, edges[:, 0], edges[:, 1]), s, 0.85, iterations, from_seeds=True)
    np.testing.assert_allclose(ours, pi, atol=1e-14, rtol=1e-10)
    assert np.count_nonzero(ours) == np.count_nonzero(pi)  # the walk reached the same nodes, and only those


@pytest.mark.parametrize("from_seeds", [False, True])
def test_pushes_without_tolerance_are_the_iteration(from_seeds: bool) -> None:
    """A tolerance below every residual pushes every node every round: the K-iteration scores."""
    g = nx.barabasi_albert_graph(300, 2, seed=3)  # hubs, as a corpus's entities
    edges = np.array(list(g.edges()))
    trans = transition_matrix(300, edges[:, 0], edges[:, 1])
    seeds = np.zeros(300)
    seeds[[5, 17, 250]] = [0.5, 0.3, 0.2]
    for k in (2, 3, 10):
        exact = personalized_pagerank(trans, seeds, 0.5, k, from_seeds=from_seeds)
        pushed = personalized_pagerank(trans, seeds, 0.5, k, from_seeds=from_seeds, tolerance=1e-300)
        np.testing.assert_allclose(pushed, exact, atol=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_pushes_stay_within_their_bound_of_networkx_and_keep_the_top(seed: int) -> None:
    """Converged (enough rounds), every node is within tolerance x its edges / (1 - d) of networkx's
    personalized PageRank (Andersen, Chung & Lang's residual bound), and the top ten are networkx's."""
    rng = np.random.default_rng(seed)
    g = nx.barabasi_albert_graph(2000, 3, seed=seed)
    edges = np.array(list(g.edges()))
    trans = transition_matrix(2000, edges[:, 0], edges[:, 1])
    seeds = np.zeros(2000)
    seeds[rng.choice(2000, 20, replace=False)] = rng.random(20)
    ref = nx.pagerank(g, alpha=0.5, personalization=dict(enumerate(seeds)), tol=1e-14, max_iter=1000)
    ref = np.array([ref[i] for i in range(2000)])
    degree = np.diff(trans.indptr)
    for tolerance in (1e-4, 1e-5):
        pushed = personalized_pagerank(trans, seeds, 0.5, 200, tolerance=tolerance)
        assert np.all(np.abs(pushed - ref) <= tolerance * degree / 0.5 + 1e-12)
        assert set(np.argsort(-pushed)[:10]) == set(np.argsort(-ref)[:10])


def test_pushes_stay_near_the_seeds() -> None:
    """On a path from one end, the exact walk reaches every node within its rounds; the pushes stop
    where the residual falls below the tolerance, so the far nodes are never read."""
    n = 200
    trans = transition_matrix(n, np.arange(n - 1), np.arange(1, n))
    seeds = np.zeros(n)
    seeds[0] = 1.0
    exact = personalized_pagerank(trans, seeds, 0.5, 40)
    pushed = personalized_pagerank(trans, seeds, 0.5, 40, tolerance=1e-4)
    assert np.count_nonzero(exact) == 40 and np.count_nonzero(pushed) < 15
    assert np.abs(pushed - exact).max() < 1e-3
