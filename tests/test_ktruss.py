"""Truss decomposition and Q-Peel (graphstrata.algorithms), checked against networkx; no Neo4j needed."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.algorithms import ktruss
from graphstrata.algorithms.ktruss import (
    connected_components,
    is_connected_k_truss,
    k_truss,
    k_truss_components,
    max_truss,
    simplify_edges,
    truss_decomposition,
)
from graphstrata.algorithms.qpeel import (
    Community,
    cosine_similarities,
    density,
    diameter,
    q_peel,
    q_peel_communities,
    q_peel_component,
    qrscore,
)

METHODS = ["compiled", "levels", "sequential"]


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def edge_array(G: nx.Graph) -> np.ndarray:
    return np.array(list(G.edges()), dtype=np.int64).reshape(-1, 2)


def edge_set(edges) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in np.asarray(edges).reshape(-1, 2).tolist() if a != b}


def nx_truss_numbers(G: nx.Graph) -> dict[tuple[int, int], int]:
    """Reference truss numbers by peeling with networkx.k_truss for k = 3, 4, ..."""
    out = {}
    H = G.copy()
    k = 3
    while H.number_of_edges():
        nxt = nx.k_truss(H, k)
        for a, b in H.edges():
            if not nxt.has_edge(a, b):
                out[(min(a, b), max(a, b))] = k - 1
        H, k = nxt, k + 1
    return out


def assert_matches_networkx(G: nx.Graph, method: str) -> None:
    E = edge_array(G)
    truss = truss_decomposition(E, method=method)
    top = int(truss.max()) if truss.size else 2
    for k in range(2, top + 2):
        expected = edge_set(nx.k_truss(G, k).edges())
        got = edge_set(E[truss >= k])
        assert got == expected, f"k={k}: {len(got ^ expected)} edges differ"
    assert max_truss(E) == (top if truss.size else 0)


def clique(nodes) -> list[tuple[int, int]]:
    return list(itertools.combinations(nodes, 2))


def unit_with_cosine(c: float, dim: int = 4, tilt: int = 1) -> np.ndarray:
    """A unit vector whose cosine with e_0 is c (the rest of the mass on axis ``tilt``)."""
    v = np.zeros(dim)
    v[0], v[tilt] = c, np.sqrt(1 - c * c)
    return v


def random_graphs() -> list[tuple[str, nx.Graph]]:
    graphs = []
    for seed in range(8):
        for p in (0.08, 0.2, 0.45):
            graphs.append((f"gnp-60-{p}-s{seed}", nx.gnp_random_graph(60, p, seed=seed)))
        for m, p in ((3, 0.3), (5, 0.8), (8, 0.95)):
            graphs.append((f"plc-150-{m}-{p}-s{seed}", nx.powerlaw_cluster_graph(150, m, p, seed=seed)))
    return graphs


RANDOM_GRAPHS = random_graphs()


# ------------------------------------------------------------------------------------------------
# truss decomposition vs networkx
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("name", "G"), RANDOM_GRAPHS, ids=[n for n, _ in RANDOM_GRAPHS])
def test_truss_matches_networkx_on_random_graphs(name: str, G: nx.Graph, method: str) -> None:
    assert_matches_networkx(G, method)


def test_random_graphs_are_not_trivial() -> None:
    # Guard against a test set in which every edge has truss 2 (then the comparison proves little).
    tops = [max_truss(edge_array(G)) for _, G in RANDOM_GRAPHS]
    assert max(tops) >= 8
    assert sum(t >= 4 for t in tops) >= len(tops) // 2


@pytest.mark.parametrize("method", METHODS)
def test_truss_numbers_equal_networkx_peeling(method: str) -> None:
    G = nx.powerlaw_cluster_graph(400, 6, 0.9, seed=11)
    E = edge_array(G)
    ours = dict(
        zip(map(tuple, np.sort(E, axis=1).tolist()), truss_decomposition(E, method=method).tolist(), strict=True)
    )
    assert ours == nx_truss_numbers(G)


@pytest.mark.parametrize("method", METHODS)
def test_peeling_cascade_graph(method: str) -> None:
    # A path whose edges lie in two triangles each, closed by K4 gadgets: peeling the path at level 3
    # cascades from the ends one edge at a time (the worst case for the level-synchronous peel).
    n = 40
    edges = [(i, i + 1) for i in range(n)]
    nxt = n + 1
    for i in range(n - 1):
        edges += clique([i, i + 2, nxt, nxt + 1])
        nxt += 2
    G = nx.Graph(edges)
    truss = dict(
        zip(map(tuple, np.sort(edges, axis=1).tolist()), truss_decomposition(edges, method=method), strict=True)
    )
    assert {truss[(i, i + 1)] for i in range(n)} == {3}
    assert_matches_networkx(G, method)


def test_wedge_chunking_gives_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    G = nx.powerlaw_cluster_graph(300, 5, 0.8, seed=3)
    E = edge_array(G)
    whole = truss_decomposition(E)
    monkeypatch.setattr(ktruss, "_WEDGE_CHUNK", 7)
    assert np.array_equal(truss_decomposition(E), whole)
    assert whole.max() >= 5


# ------------------------------------------------------------------------------------------------
# hand-made graphs
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_k5_all_edges_truss_5(method: str) -> None:
    t = truss_decomposition(clique(range(5)), method=method)
    assert t.tolist() == [5] * 10


@pytest.mark.parametrize("method", METHODS)
def test_two_triangles_sharing_an_edge(method: str) -> None:
    # Shared edge (1, 2) lies in two triangles, but its neighbours in only one each: all truss 3.
    edges = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
    assert truss_decomposition(edges, method=method).tolist() == [3] * 5
    assert k_truss(edges, 4).tolist() == [False] * 5


@pytest.mark.parametrize("method", METHODS)
def test_path_is_truss_2(method: str) -> None:
    edges = [(i, i + 1) for i in range(10)]
    assert truss_decomposition(edges, method=method).tolist() == [2] * 10
    assert k_truss_components(edges, 3) == []
    assert max_truss(edges) == 2


@pytest.mark.parametrize("method", METHODS)
def test_k4_plus_pendant(method: str) -> None:
    edges = [*clique(range(4)), (3, 4)]
    assert truss_decomposition(edges, method=method).tolist() == [4] * 6 + [2]
    comps = k_truss_components(edges, 4)
    assert [c.tolist() for c in comps] == [[0, 1, 2, 3]]


def test_self_loops_duplicates_and_reversed_rows() -> None:
    edges = np.array([[0, 1], [1, 2], [2, 0], [1, 0], [2, 2], [0, 1], [2, 3], [3, 3]])
    t = truss_decomposition(edges)
    # triangle rows (and their copies) 3; pendant 2; self-loop rows 0
    assert t.tolist() == [3, 3, 3, 3, 0, 3, 2, 0]
    assert k_truss(edges, 3).tolist() == [True, True, True, True, False, True, False, False]
    assert k_truss(edges, 2).tolist() == [True, True, True, True, False, True, True, False]
    g = simplify_edges(edges)
    assert g.edges().tolist() == [[0, 1], [0, 2], [1, 2], [2, 3]]
    assert g.row_to_edge.tolist() == [0, 2, 1, 0, -1, 0, 3, -1]


def test_degenerate_inputs() -> None:
    assert truss_decomposition(np.empty((0, 2), dtype=int)).shape == (0,)
    assert truss_decomposition([[4, 4], [5, 5]]).tolist() == [0, 0]
    assert max_truss([[4, 4]]) == 0
    assert max_truss([]) == 0
    assert k_truss_components([], 3) == []
    assert [c.tolist() for c in connected_components([[4, 4]])] == [[4]]
    with pytest.raises(ValueError):
        truss_decomposition(np.array([0, 1, 2]))
    with pytest.raises(TypeError):
        truss_decomposition(np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError):
        truss_decomposition([[0, 5]], n_nodes=5)


def test_sparse_huge_node_ids() -> None:
    G = nx.powerlaw_cluster_graph(120, 4, 0.8, seed=5)
    E = edge_array(G)
    shifted = E * 1_000_003 + 10**12  # ids like database element ids: huge and sparse
    assert np.array_equal(truss_decomposition(shifted), truss_decomposition(E))
    comps = k_truss_components(shifted, 4)
    expected = k_truss_components(E, 4)
    assert [c.tolist() for c in comps] == [(c * 1_000_003 + 10**12).tolist() for c in expected]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 11), st.integers(0, 11)),
        min_size=0,
        max_size=45,
    )
)
def test_arbitrary_edge_lists_match_networkx(rows: list[tuple[int, int]]) -> None:
    edges = np.array(rows, dtype=np.int64).reshape(-1, 2)
    G = nx.Graph()
    G.add_edges_from((a, b) for a, b in rows if a != b)
    ref = nx_truss_numbers(G)
    for method in METHODS:
        t = truss_decomposition(edges, method=method)
        expected = [0 if a == b else ref[(min(a, b), max(a, b))] for a, b in rows]
        assert t.tolist() == expected


# ------------------------------------------------------------------------------------------------
# components
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_k_truss_components_match_networkx(seed: int) -> None:
    # Two loosely joined dense blobs plus noise, so several k-truss components appear.
    G = nx.disjoint_union(nx.powerlaw_cluster_graph(80, 5, 0.9, seed=seed), nx.gnp_random_graph(40, 0.35, seed=seed))
    G.add_edges_from([(0, 100), (5, 110)])
    E = edge_array(G)
    for k in range(3, max_truss(E) + 2):
        ours = sorted(tuple(c.tolist()) for c in k_truss_components(E, k))
        ref = sorted(tuple(sorted(c)) for c in nx.connected_components(nx.k_truss(G, k)))
        assert ours == ref
    comps = k_truss_components(E, 3)
    assert [c.size for c in comps] == sorted((c.size for c in comps), reverse=True)


def test_connected_components_match_networkx() -> None:
    G = nx.gnp_random_graph(300, 0.006, seed=2)
    G.remove_nodes_from(list(nx.isolates(G)))
    ours = sorted(tuple(c.tolist()) for c in connected_components(edge_array(G)))
    ref = sorted(tuple(sorted(c)) for c in nx.connected_components(G))
    assert ours == ref
    assert len(ref) > 5


def test_is_connected_k_truss() -> None:
    k5 = clique(range(5))
    assert is_connected_k_truss(k5, 5)
    assert not is_connected_k_truss(k5, 6)
    assert not is_connected_k_truss([*k5, *clique(range(10, 15))], 5)  # two components
    assert not is_connected_k_truss([*k5, (4, 5)], 3)  # pendant edge in no triangle
    assert not is_connected_k_truss([], 2)


# ------------------------------------------------------------------------------------------------
# metrics
# ------------------------------------------------------------------------------------------------


def test_density_diameter_qrscore_definitions() -> None:
    assert density(5, 10) == 1.0
    assert density(5, 10, directed=True) == 0.5
    assert density(np.arange(4), np.zeros((3, 2))) == 0.5
    assert density(1, 0) == 0.0
    path = [(i, i + 1) for i in range(6)]
    assert diameter(path) == 6
    assert diameter(clique(range(6))) == 1
    assert diameter(path, nodes=[1, 3]) == 2  # B.3: distances measured in the given (global) graph
    assert diameter([(0, 1), (2, 3), (3, 4)]) == 2  # unreachable pairs are skipped
    emb = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [0.0, 0.0]])
    assert np.allclose(cosine_similarities(emb, [2.0, 0.0]), [1.0, 0.0, -1.0, 0.0])
    assert qrscore(emb[:3], [2.0, 0.0]) == pytest.approx(0.0)
    assert qrscore(emb[:2], [1.0, 1.0]) == pytest.approx(np.sqrt(0.5))
    with pytest.raises(ValueError):
        qrscore(np.empty((0, 2)), [1.0, 0.0])


@pytest.mark.parametrize("n", [40, 300, 700])
def test_diameter_against_networkx(n: int) -> None:
    """Longest finite shortest path, over all pairs or between given members only, on sparse random
    graphs with several components (networkx's all-pairs BFS as the reference)."""
    rng = np.random.default_rng(n)
    G = nx.gnm_random_graph(n, int(n * 1.3), seed=n)
    G.remove_nodes_from(list(nx.isolates(G)))
    E = edge_array(G)
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    assert diameter(E) == max(max(d.values()) for d in lengths.values())
    members = [*rng.choice(sorted(G.nodes), size=n // 5, replace=False).tolist(), n + 5]  # one absent
    inside = [a for a in members if a in G]
    assert diameter(E, nodes=members) == max(lengths[a].get(b, 0) for a in inside for b in inside)


@pytest.mark.parametrize(
    "graph",
    [
        nx.barbell_graph(6, 9),
        nx.lollipop_graph(7, 12),
        nx.balanced_tree(3, 4),
        nx.grid_2d_graph(7, 11),
        nx.watts_strogatz_graph(300, 6, 0.05, seed=3),
        nx.barabasi_albert_graph(400, 2, seed=4),
        nx.disjoint_union(nx.cycle_graph(31), nx.path_graph(40)),
        nx.complete_graph(9),
    ],
    ids=["barbell", "lollipop", "tree", "grid", "small-world", "scale-free", "cycle+path", "clique"],
)
def test_diameter_with_bounds_against_networkx(graph: nx.Graph) -> None:
    """The diameter found with eccentricity bounds (few BFS) equals networkx's largest eccentricity
    per component on graphs whose centre and periphery sit differently."""
    G = nx.convert_node_labels_to_integers(graph)
    expected = max(nx.diameter(G.subgraph(c)) for c in nx.connected_components(G))
    assert diameter(edge_array(G)) == expected


def test_diameter_of_a_long_graph() -> None:
    """A long path (a k-truss community can be a long chain of triangles)."""
    assert diameter([(i, i + 1) for i in range(99)]) == 99
    assert diameter([(i, i + 1) for i in range(99)], nodes=[10, 80]) == 70


@pytest.mark.parametrize(("name", "G"), RANDOM_GRAPHS[::3], ids=[n for n, _ in RANDOM_GRAPHS[::3]])
def test_paper_bounds_on_all_k_truss_components(name: str, G: nx.Graph) -> None:
    E = edge_array(G)
    truss = truss_decomposition(E)
    for k in range(3, int(truss.max()) + 1):
        TkG = nx.Graph(E[truss >= k].tolist())
        for comp in k_truss_components(E, k):
            H = nx.Graph(TkG.subgraph(comp.tolist()))
            assert nx_is_connected_k_truss(H, k)
            assert comp.size >= k
            assert_bounds(H, k)


def assert_bounds(H: nx.Graph, k: int) -> None:
    """Appendix A.1 / A.2 on a connected k-truss H."""
    n_v, n_e = H.number_of_nodes(), H.number_of_edges()
    d = density(n_v, n_e)
    bound = (k - 1) / (n_v - 1)
    assert d >= bound - 1e-12
    # The paper says "greater than"; equality happens exactly for the clique K_k.
    is_kk = n_v == k and n_e == k * (k - 1) // 2
    assert d > bound or is_kk
    diam = diameter(np.array(list(H.edges())))
    assert diam == nx.diameter(H)
    assert diam <= (2 * n_v - 2) // k


# ------------------------------------------------------------------------------------------------
# Q-Peel
# ------------------------------------------------------------------------------------------------


def nx_is_connected_k_truss(H: nx.Graph, k: int) -> bool:
    return H.number_of_edges() > 0 and nx.is_connected(H) and nx.k_truss(H, k).number_of_edges() == H.number_of_edges()


def check_community(c: Community, comp_graph: nx.Graph, emb: np.ndarray, q: np.ndarray, k: int) -> None:
    nodes = c.nodes.tolist()
    H = comp_graph.subgraph(nodes)
    # the community is the component's subgraph induced by its nodes, and a connected k-truss
    assert edge_set(c.edges) == edge_set(list(H.edges()))
    assert nx_is_connected_k_truss(nx.Graph(H), k)
    # never worse than the component it was peeled from
    assert c.qrscore >= qrscore(emb[list(comp_graph.nodes())], q) - 1e-12
    assert c.qrscore == pytest.approx(qrscore(emb[nodes], q))
    assert c.density == pytest.approx(density(len(nodes), H.number_of_edges()))
    assert c.k == k
    assert_bounds(nx.Graph(H), k)
    # termination condition of Algorithm 1: no node is a valid improvement any more
    sims = cosine_similarities(emb[nodes], q)
    for x, s in zip(nodes, sims, strict=True):
        if s < sims.mean():
            rest = nx.Graph(H.subgraph([y for y in nodes if y != x]))
            assert not nx_is_connected_k_truss(rest, k), f"node {x} could still be peeled"


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [3, 4, 5])
def test_q_peel_on_random_graphs(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    G = nx.powerlaw_cluster_graph(120, 5, 0.85, seed=seed)
    E = edge_array(G)
    emb = rng.normal(size=(120, 8))
    q = rng.normal(size=8)
    tk = E[k_truss(E, k)]
    comps = k_truss_components(E, k)
    communities = q_peel_communities(E, emb, q, k)
    assert len(communities) == len(comps)
    TkG = nx.Graph(tk.tolist())
    by_comp = {}
    for c in communities:
        home = [comp for comp in comps if np.isin(c.nodes, comp).all()]
        assert len(home) == 1
        by_comp[tuple(home[0].tolist())] = c
        check_community(c, nx.Graph(TkG.subgraph(home[0].tolist())), emb, q, k)
    assert len(by_comp) == len(comps)  # one community per component
    assert [c.qrscore for c in communities] == sorted((c.qrscore for c in communities), reverse=True)
    best = q_peel(E, emb, q, k)
    if comps:
        assert best is not None
        assert best.qrscore == max(c.qrscore for c in communities)
    else:
        assert best is None


def test_q_peel_actually_peels() -> None:
    # With random embeddings Q-Peel should usually strictly improve on the component's QRScore.
    improved = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        G = nx.powerlaw_cluster_graph(150, 6, 0.9, seed=seed)
        E = edge_array(G)
        emb, q = rng.normal(size=(150, 8)), rng.normal(size=8)
        comp = k_truss_components(E, 4)[0]
        tk = E[k_truss(E, 4)]
        c = q_peel_component(tk[np.isin(tk[:, 0], comp)], emb, q, 4)
        improved += c.qrscore > qrscore(emb[comp], q) + 1e-9 and c.nodes.size < comp.size
    assert improved >= 8


def test_q_peel_k5_hand_example() -> None:
    # K5 with k=4: node 0 is the least relevant; K5 - {0} = K4 is still a 4-truss and raises the
    # mean, but no K4 minus a node (a triangle) is a 4-truss, so Q-Peel stops at {1, 2, 3, 4}.
    cos = [-0.5, 0.1, 0.2, 0.3, 0.9]
    emb = np.stack([unit_with_cosine(c) for c in cos])
    q = np.array([1.0, 0, 0, 0])
    c = q_peel_component(clique(range(5)), emb, q, 4)
    assert c.nodes.tolist() == [1, 2, 3, 4]
    assert edge_set(c.edges) == set(clique(range(1, 5)))
    assert c.qrscore == pytest.approx(np.mean(cos[1:]))
    assert (c.density, c.diameter, c.k) == (1.0, 1, 4)
    # with k=3 it keeps peeling down to the best triangle
    c3 = q_peel_component(clique(range(5)), emb, q, 3)
    assert c3.nodes.tolist() == [2, 3, 4]


def test_q_peel_keeps_node_whose_removal_breaks_the_truss() -> None:
    # Two K4s sharing the edge (0, 1).  Every edge except (0, 1) lies in exactly 2 triangles.
    edges = [*clique([0, 1, 2, 3]), *clique([0, 1, 4, 5])]
    cos = [-0.9, 0.8, 0.7, 0.75, 0.1, 0.2]
    emb = np.stack([unit_with_cosine(c) for c in cos])
    q = np.array([1.0, 0, 0, 0])
    assert is_connected_k_truss(edges, 4)
    # k=4: removing any node leaves some edge in a single triangle, so although 0, 4 and 5 are
    # below the mean, nothing may be peeled.
    c4 = q_peel_component(edges, emb, q, 4)
    assert c4.nodes.tolist() == [0, 1, 2, 3, 4, 5]
    # k=3: node 0 goes (two triangles 1-2-3 and 1-4-5 remain, joined at 1); then 4 and 5 are still
    # below the new mean 0.51 but removing either leaves an edge in no triangle.
    c3 = q_peel_component(edges, emb, q, 3)
    assert c3.nodes.tolist() == [1, 2, 3, 4, 5]
    assert c3.qrscore == pytest.approx(0.51)
    check_community(c3, nx.Graph(edges), emb, q, 3)


def test_q_peel_never_disconnects() -> None:
    # Node 0 joins two K4s through the triangles 0-1-2 and 0-5-6.  Removing it keeps every remaining
    # edge in a triangle (a 3-truss) and raises the mean, but splits the graph in two: not allowed.
    edges = [*clique([1, 2, 3, 4]), *clique([5, 6, 7, 8]), (0, 1), (0, 2), (0, 5), (0, 6)]
    emb = np.stack([unit_with_cosine(-0.9)] + [unit_with_cosine(0.5)] * 8)
    q = np.array([1.0, 0, 0, 0])
    assert is_connected_k_truss(edges, 3)
    assert is_connected_k_truss([e for e in edges if 0 not in e], 3) is False
    c = q_peel_component(edges, emb, q, 3)
    assert c.nodes.tolist() == list(range(9))
    check_community(c, nx.Graph(edges), emb, q, 3)


def test_q_peel_refines_every_component() -> None:
    # Algorithm 1 sets `updated <- true` only once; read literally the second component would never
    # be refined.  Component A (nodes 0-4) is flat at 0.5; component B (10-14) averages 0.3 but its
    # K4 without the outlier scores 0.6, so the refined B must win.
    emb = np.zeros((15, 4))
    for i in range(5):
        emb[i] = unit_with_cosine(0.5)
    for i in range(10, 14):
        emb[i] = unit_with_cosine(0.6)
    emb[14] = unit_with_cosine(-0.9)
    q = np.array([1.0, 0, 0, 0])
    edges = [*clique(range(5)), *clique(range(10, 15))]
    communities = q_peel_communities(edges, emb, q, 4)
    assert [c.nodes.tolist() for c in communities] == [[10, 11, 12, 13], [0, 1, 2, 3, 4]]
    assert communities[0].qrscore == pytest.approx(0.6)
    assert communities[1].qrscore == pytest.approx(0.5)
    best = q_peel(edges, emb, q, 4)
    assert best is not None and best.nodes.tolist() == [10, 11, 12, 13]


def test_q_peel_rejects_bad_input() -> None:
    emb = np.eye(6)
    with pytest.raises(ValueError, match="not a connected 3-truss"):
        q_peel_component([(0, 1), (1, 2)], emb, emb[0], 3)
    with pytest.raises(ValueError, match="not a connected"):
        q_peel_component([*clique(range(3)), *clique(range(3, 6))], emb, emb[0], 3)
    with pytest.raises(ValueError):
        q_peel_component(clique(range(3)), emb, emb[0], 1)
    with pytest.raises(ValueError, match="index rows"):
        q_peel_component(clique(range(3)), emb[:2], emb[0], 3)
    assert q_peel([(0, 1), (1, 2)], emb, emb[0], 3) is None
    assert q_peel_communities([], emb, emb[0], 3) == []


def test_community_to_dict_round_trips_json() -> None:
    import json

    emb = np.stack([unit_with_cosine(c) for c in (0.1, 0.2, 0.3)])
    c = q_peel_component(clique(range(3)), emb, [1.0, 0, 0, 0], 3)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["nodes"] == [0, 1, 2] and d["k"] == 3 and d["diameter"] == 1
    assert d["qrscore"] == pytest.approx(0.2)


def test_q_peel_k2_removes_a_leaf_but_not_a_cut_vertex() -> None:
    # A connected 2-truss is any connected graph: the leaf 0 may go, the cut vertex 3 may not.
    edges = [(0, 1), (1, 2), (2, 3), (3, 4)]
    cos = [-0.9, 0.5, 0.6, -0.5, 0.7]
    emb = np.stack([unit_with_cosine(c) for c in cos])
    c = q_peel_component(edges, emb, np.array([1.0, 0, 0, 0]), 2)
    assert c.nodes.tolist() == [1, 2, 3, 4]
    assert (c.diameter, c.k) == (3, 2)
    check_community(c, nx.Graph(edges), emb, np.array([1.0, 0, 0, 0]), 2)


def literal_q_peel(G: nx.Graph, emb: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    """Algorithm 1, lines 6-11, read literally with networkx: after every removal sort S again and
    scan from the least relevant node; remove the first x whose removal raises QRScore and leaves a
    connected k-truss; stop when the QRScore test fails or the scan ends."""
    S = set(G.nodes())
    sims = dict(zip(G.nodes(), cosine_similarities(emb[list(G.nodes())], q).tolist(), strict=True))
    while len(S) >= 2:
        total = sum(sims[v] for v in S)
        removed = False
        for x in sorted(S, key=lambda v: (sims[v], v)):
            rest = S - {x}
            if not sum(sims[v] for v in rest) / len(rest) > total / len(S) + 1e-12:
                break
            if nx_is_connected_k_truss(nx.Graph(G.subgraph(rest)), k):
                S, removed = rest, True
                break
        if not removed:
            break
    return sorted(S)


def glued_cliques(rng: np.random.Generator) -> nx.Graph:
    """Cliques of 3-7 nodes, chained through shared nodes: cut vertices everywhere."""
    G, last = nx.Graph(), None
    for _ in range(int(rng.integers(3, 7))):
        start = G.number_of_nodes()
        members = list(range(start, start + int(rng.integers(3, 8))))
        G.add_edges_from(itertools.combinations(members, 2))
        if last is not None:
            G = nx.relabel_nodes(G, {members[0]: last})
        last = members[-1]
    return nx.convert_node_labels_to_integers(G)


@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sets"])
@pytest.mark.parametrize("seed", range(40))
def test_q_peel_equals_the_literal_algorithm(seed: int, dense: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Q-Peel skips nodes whose last failed check still holds; the literal loop re-checks everything
    # after every removal. Both must remove the same nodes, on trusses with and without cut vertices,
    # with the dense-matrix state (components up to DENSE_LIMIT nodes) and the adjacency-set state.
    from graphstrata.algorithms import qpeel

    monkeypatch.setattr(qpeel, "DENSE_LIMIT", 10**6 if dense else 0)
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    kind = seed % 3
    if kind == 0:
        G = nx.powerlaw_cluster_graph(int(rng.integers(30, 90)), 5, 0.8, seed=seed)
    elif kind == 1:
        G = glued_cliques(rng)
        k = min(k, 3)
    else:
        G = nx.gnp_random_graph(int(rng.integers(15, 45)), float(rng.uniform(0.2, 0.6)), seed=seed)
    dim = 6
    emb = rng.normal(size=(G.number_of_nodes(), dim))
    q = rng.normal(size=dim)
    while not nx.k_truss(G, k).number_of_edges():  # the largest k up to the drawn one that has a truss
        k -= 1
    truss = nx.k_truss(G, k)
    comps = [c for c in nx.connected_components(truss) if len(c) > 1]
    for comp in comps:
        H = nx.Graph(truss.subgraph(comp))
        c = q_peel_component(edge_array(H), emb, q, k)
        assert c.nodes.tolist() == literal_q_peel(H, emb, q, k)


@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sets"])
def test_a_peel_start_serves_every_query_unchanged(dense: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PeelStart (what DA-RAG keeps per chunk-layer component) is copied, never used up: peeling it
    for one query after another gives each the literal algorithm's result."""
    from graphstrata.algorithms import qpeel

    monkeypatch.setattr(qpeel, "DENSE_LIMIT", 10**6 if dense else 0)
    rng = np.random.default_rng(7)
    truss = nx.k_truss(nx.powerlaw_cluster_graph(80, 5, 0.8, seed=7), 3)
    H = nx.Graph(truss.subgraph(max(nx.connected_components(truss), key=len)))
    emb = rng.normal(size=(80, 6))
    start = qpeel.peel_start(edge_array(H), 3)
    removed = []
    for _ in range(6):
        q = rng.normal(size=6)
        got = q_peel_component(start, emb, q, 3).nodes.tolist()
        assert got == literal_q_peel(H, emb, q, 3)
        removed.append(H.number_of_nodes() - len(got))
    assert max(removed) > 5  # the queries did peel
    with pytest.raises(ValueError, match="k=3"):
        q_peel_component(start, emb, rng.normal(size=6), 4)
