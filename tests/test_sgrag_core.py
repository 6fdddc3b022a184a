"""SG-RAG algorithmic core (graphstrata.algorithms.sgrag) on hand-made and seeded random graphs; no Neo4j.

References used as ground truth: networkx subgraph monomorphisms (matching), brute force over
injective maps (star / path containment), brute force over path subsets (decomposition), the literal
Cartesian-product Algorithm 8 (assembly).
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism

from graphstrata.algorithms.sgrag import (
    DataGraph,
    DataPath,
    DominanceConfig,
    DominanceEmbedder,
    HashingLabelEncoder,
    Hop,
    PathIndex,
    QueryGraph,
    QueryPath,
    Star,
    StarGAT,
    assemble,
    assemble_cartesian,
    build_path_index,
    candidate_labels,
    candidate_query_paths,
    completions,
    decompose,
    dominance_violations,
    enumerate_paths,
    fit_dominance,
    from_record,
    match_query,
    n_completions,
    negative_pairs,
    one_hop_subgraph,
    path_contained,
    plan_key,
    simple_query_paths,
    star_contained,
    substructure_pairs,
    to_record,
    train_dominance,
)
from graphstrata.algorithms.sgrag.dominance import dominance_mask, dominates
from graphstrata.algorithms.sgrag.query_graph import enumerate_paths_through, hop_compatible

ENC = HashingLabelEncoder(16, seed=3)


def monotone_embedder(seed: int = 0) -> DominanceEmbedder:
    return DominanceEmbedder(StarGAT(16, hidden=16, out_dim=8, monotone=True, seed=seed), ENC)


# ------------------------------------------------------------------------------------------------
# reference implementations
# ------------------------------------------------------------------------------------------------


def nx_matches(query: QueryGraph, graph: DataGraph, directed: bool = False) -> set[frozenset]:
    """All injective label/relation-preserving maps of the query into the data graph (networkx VF2).

    Requires no parallel edges in either graph (networkx counts parallel edges for monomorphisms).
    """
    cls = nx.DiGraph if directed else nx.Graph
    G, Q = cls(), cls()
    for v, lab in graph.labels.items():
        G.add_node(v, label=lab)
    for e in graph.edges:
        assert not G.has_edge(e.src, e.dst), "reference needs a simple data graph"
        G.add_edge(e.src, e.dst, rel=e.relation)
    for q, lab in query.labels.items():
        Q.add_node(q, label=lab)
    for e in query.edges:
        assert not Q.has_edge(e.src, e.dst), "reference needs a simple query graph"
        Q.add_edge(e.src, e.dst, rel=e.relation)
    matcher_cls = isomorphism.DiGraphMatcher if directed else isomorphism.GraphMatcher
    matcher = matcher_cls(
        G,
        Q,
        node_match=lambda d, q: q["label"] is None or q["label"] == d["label"],
        edge_match=lambda d, q: q["rel"] is None or q["rel"] == d["rel"],
    )
    return {frozenset((q, d) for d, q in m.items()) for m in matcher.subgraph_monomorphisms_iter()}


def result_set(result) -> set[frozenset]:
    return {frozenset(m.binding) for m in result.matches}


def brute_star(query, q, graph, v, pinned, forbidden, directed) -> bool:
    def label_ok(a, b):
        return a is None or a == b

    if not label_ok(query.labels[q], graph.labels[v]):
        return False

    def pair_ok(u, w) -> bool:
        if (u in pinned and pinned[u] != w) or (u not in pinned and w in forbidden):
            return False
        if not label_ok(query.labels[u], graph.labels[w]):
            return False
        return all(any(hop_compatible(qh, dh, directed) for dh in graph.hops(v, w)) for qh in query.hops(q, u))

    qn = list(query.neighbors(q))
    dn = list(graph.neighbors(v))
    return any(
        all(pair_ok(u, w) for u, w in zip(qn, perm, strict=True)) for perm in itertools.permutations(dn, len(qn))
    )


def brute_path(query, qpath, graph, dpath, directed) -> bool:
    if len(set(dpath.nodes)) != len(dpath.nodes):
        return False
    for i in range(qpath.length):
        edge = query.edges[qpath.edges[i]]
        qh = Hop(edge.relation, edge.src == qpath.nodes[i])
        if not hop_compatible(qh, dpath.hops[i], directed):
            return False
    pinned = dict(zip(qpath.nodes, dpath.nodes, strict=True))
    return all(brute_star(query, q, graph, v, pinned, set(dpath.nodes), directed) for q, v in pinned.items())


def random_data_graph(rng, n, m, n_labels, relations=("r0", "r1"), directed_pairs=False) -> DataGraph:
    g = nx.gnm_random_graph(n, m, seed=int(rng.integers(1 << 30)), directed=directed_pairs)
    labels = {v: f"T{rng.integers(n_labels)}" for v in g.nodes}
    return DataGraph(labels, [(a, b, str(rng.choice(relations))) for a, b in g.edges])


def random_query_from(rng, graph: DataGraph, n_nodes: int, p_unknown=0.3, p_wild_rel=0.5, keep_dir=True):
    """A connected query graph copied from a random connected piece of ``graph`` (so it has a match)."""
    starts = [v for v in graph.nodes if graph.neighbors(v)]
    start = starts[int(rng.integers(len(starts)))]
    chosen = [start]
    while len(chosen) < n_nodes:
        frontier = sorted({u for v in chosen for u in graph.neighbors(v)} - set(chosen), key=repr)
        if not frontier:
            break
        chosen.append(frontier[int(rng.integers(len(frontier)))])
    sub = graph.subgraph(chosen)
    # a spanning tree keeps the query connected; other induced edges are kept with probability 1/2
    tree = nx.minimum_spanning_tree(nx.Graph([(e.src, e.dst) for e in sub.edges]))
    tree_edges = {frozenset(e) for e in tree.edges}
    edges = []
    for e in sub.edges:
        if frozenset((e.src, e.dst)) in tree_edges or rng.random() < 0.5:
            rel = None if rng.random() < p_wild_rel else e.relation
            edges.append((f"q{e.src}", f"q{e.dst}", rel) if keep_dir else (f"q{e.dst}", f"q{e.src}", rel))
            tree_edges.discard(frozenset((e.src, e.dst)))
    labels = {f"q{v}": (None if rng.random() < p_unknown else sub.label(v)) for v in sub.nodes}
    return QueryGraph(labels, edges)


# ------------------------------------------------------------------------------------------------
# data model
# ------------------------------------------------------------------------------------------------


def test_query_graph_reads_unknown_tokens_and_rejects_self_loops():
    q = QueryGraph({"a": "UNK", "b": "unknown", "c": "?", "d": None, "e": "Aspirin"}, [("a", "e")])
    assert q.unknown_nodes == ("a", "b", "c", "d")
    assert q.known_nodes == ("e",)
    with pytest.raises(ValueError):
        QueryGraph({"a": "x"}, [("a", "a")])
    with pytest.raises(ValueError):
        DataGraph({"a": None}, [])
    with pytest.raises(ValueError):
        QueryGraph({"a": "x"}, [("a", "zzz")])


def test_enumerate_paths_matches_networkx_both_orientations():
    rng = np.random.default_rng(1)
    graph = random_data_graph(rng, 12, 22, 3)
    G = nx.Graph([(e.src, e.dst) for e in graph.edges])
    for length in (1, 2, 3):
        ours = [p.nodes for p in enumerate_paths(graph, length)]
        assert len(ours) == len(set(ours))
        ref = {
            tuple(p)
            for s in G.nodes
            for t in G.nodes
            if s != t
            for p in nx.all_simple_paths(G, s, t, cutoff=length)
            if len(p) == length + 1
        }
        assert set(ours) == ref
        for p in enumerate_paths(graph, length):
            assert p.labels == tuple(graph.label(v) for v in p.nodes)
            for i, hop in enumerate(p.hops):
                src, dst = (p.nodes[i], p.nodes[i + 1]) if hop.forward else (p.nodes[i + 1], p.nodes[i])
                assert any(e.src == src and e.dst == dst and e.relation == hop.relation for e in graph.edges)


def test_parallel_edges_give_one_path_per_edge_and_from_sequence():
    g = DataGraph({1: "A", 2: "B"}, [(1, 2, "x"), (2, 1, "y"), (1, 1, "self")])
    paths = enumerate_paths(g, 1)
    assert {(p.nodes, p.hops) for p in paths} == {
        ((1, 2), (Hop("x", True),)),
        ((1, 2), (Hop("y", False),)),
        ((2, 1), (Hop("x", False),)),
        ((2, 1), (Hop("y", True),)),
    }
    assert len(paths) == 4
    p = DataPath.from_sequence([(1, "A", "x"), (2, "B", "y", False), (3, "C")])
    assert p.hops == (Hop("x", True), Hop("y", False)) and p.length == 2
    assert p.reversed().reversed() == p
    assert Star.of("A", ["c", "b", "b"]).contains(Star.of("A", ["b", "c"]))
    assert not Star.of("A", ["b", "c"]).contains(Star.of("A", ["b", "b"]))
    assert not Star.of("A", ["b"]).contains(Star.of("B", []))


# ------------------------------------------------------------------------------------------------
# decomposition (Algorithm 4)
# ------------------------------------------------------------------------------------------------


def brute_force_plan(query: QueryGraph, length: int):
    cands = candidate_query_paths(query, length)
    all_edges = set(range(len(query.edges)))
    best = None
    for k in range(1, len(query.edges) + 1):
        for combo in itertools.combinations(cands, k):
            if set().union(*(p.edges for p in combo)) == all_edges:
                key = plan_key(query, list(combo))
                best = key if best is None or key < best else best
        if best is not None:
            return best
    return best


def random_query_graph(rng, n_nodes, n_edges) -> QueryGraph:
    n_edges = max(n_edges, n_nodes - 1)  # connected needs a spanning tree
    while True:
        g = nx.gnm_random_graph(n_nodes, n_edges, seed=int(rng.integers(1 << 30)))
        if nx.is_connected(g):
            return QueryGraph({v: f"L{v}" for v in g.nodes}, list(g.edges))


def test_candidate_paths_are_the_simple_paths_of_length_l():
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = random_query_graph(rng, int(rng.integers(3, 7)), int(rng.integers(3, 8)))
        G = nx.Graph([(e.src, e.dst) for e in q.edges])
        for length in (1, 2, 3):
            ours = {p.nodes for p in simple_query_paths(q, length) if p.length == length}
            ref = set()
            for s, t in itertools.permutations(G.nodes, 2):
                for p in nx.all_simple_paths(G, s, t, cutoff=length):
                    if len(p) == length + 1:
                        p = tuple(p)
                        ref.add(min(p, p[::-1]))
            assert {min(p, p[::-1]) for p in ours} == ref


@pytest.mark.parametrize("length", [1, 2, 3])
def test_decomposition_covers_all_edges_at_brute_force_minimal_cost(length):
    rng = np.random.default_rng(10 + length)
    for _ in range(25):
        q = random_query_graph(rng, int(rng.integers(3, 7)), int(rng.integers(2, 8)))
        plan = decompose(q, length, method="exact")
        covered = set().union(*(p.edges for p in plan.paths))
        assert covered == set(range(len(q.edges)))
        assert all(1 <= p.length <= length for p in plan.paths)
        for p in plan.paths:  # each path is a simple path walking real query edges
            assert len(set(p.nodes)) == len(p.nodes)
            for i, e in enumerate(p.edges):
                assert {q.edges[e].src, q.edges[e].dst} == {p.nodes[i], p.nodes[i + 1]}
        assert plan.key == brute_force_plan(q, length)
        greedy = decompose(q, length, method="greedy")
        assert set().union(*(p.edges for p in greedy.paths)) == covered
        assert greedy.key >= plan.key
        assert decompose(q, length).key == plan.key  # auto = exact for small queries


def test_decomposition_hand_cases():
    star = QueryGraph({"x": None, "a": "A", "b": "B", "c": "C", "d": "D"}, [("x", n) for n in "abcd"])
    plan = decompose(star, 2)
    assert plan.key == (2, 0, -12)  # two 2-paths through the centre, no overlap, w = -(4+1+1) each
    assert all("x" in p.nodes and p.nodes[1] == "x" for p in plan.paths)
    assert decompose(star, 1).key == (4, 0, -20)
    tri = QueryGraph({1: "a", 2: "b", 3: "c"}, [(1, 2), (2, 3), (3, 1)])
    assert decompose(tri, 2).key == (2, 1, -12)
    single = QueryGraph({1: "a", 2: "b"}, [(1, 2)])
    plan = decompose(single, 3)  # no path of length 3: the longest through the edge
    assert [p.length for p in plan.paths] == [1]
    assert decompose(QueryGraph({1: "a"}, []), 2).paths == ()
    chain = QueryGraph({i: str(i) for i in range(5)}, [(i, i + 1) for i in range(4)])
    assert [p.nodes for p in decompose(chain, 2).paths] == [(0, 1, 2), (2, 3, 4)]
    # disconnected query: every component is covered
    two = QueryGraph({1: "a", 2: "b", 3: "c", 4: "d"}, [(1, 2), (3, 4)])
    assert decompose(two, 2).key == (2, 0, -4) == decompose(two, 2, method="greedy").key


# ------------------------------------------------------------------------------------------------
# exact containment check
# ------------------------------------------------------------------------------------------------


def test_star_contained_equals_brute_force():
    rng = np.random.default_rng(4)
    positives = 0
    for trial in range(400):
        directed = bool(trial % 2)
        nq = int(rng.integers(1, 5))
        q_labels = {"c": "C", **{f"u{i}": (None if rng.random() < 0.3 else f"L{rng.integers(3)}") for i in range(nq)}}
        q_edges = []
        for i in range(nq):
            a, b = ("c", f"u{i}") if rng.random() < 0.5 else (f"u{i}", "c")
            q_edges.append((a, b, None if rng.random() < 0.5 else f"r{rng.integers(2)}"))
        nd = int(rng.integers(0, 6))
        d_labels = {"v": "C", **{f"w{i}": f"L{rng.integers(3)}" for i in range(nd)}}
        d_edges = []
        for i in range(nd):
            for _ in range(int(rng.integers(1, 3))):  # parallel edges with other relations / directions
                a, b = ("v", f"w{i}") if rng.random() < 0.5 else (f"w{i}", "v")
                d_edges.append((a, b, f"r{rng.integers(2)}"))
        query, graph = QueryGraph(q_labels, q_edges), DataGraph(d_labels, d_edges)
        pinned = {}
        if nq and nd and rng.random() < 0.3:
            pinned = {"u0": f"w{rng.integers(nd)}"}
        forbidden = set(pinned.values())
        got = star_contained(query, "c", graph, "v", pinned=pinned, forbidden=forbidden, directed=directed)
        assert got == brute_star(query, "c", graph, "v", pinned, forbidden, directed)
        positives += got
    assert positives > 50


@pytest.mark.parametrize("directed", [False, True])
def test_path_contained_has_no_false_positives_or_negatives(directed):
    rng = np.random.default_rng(5 + directed)
    positives = checked = 0
    for _ in range(6):
        graph = random_data_graph(rng, 10, 18, 3)
        query = random_query_from(rng, graph, 4)
        data_paths = enumerate_paths(graph, 2) + enumerate_paths(graph, 1)
        for qpath in simple_query_paths(query, 2):
            for dpath in data_paths:
                if dpath.length != qpath.length:
                    continue
                got = path_contained(query, qpath, graph, dpath, directed=directed)
                assert got == brute_path(query, qpath, graph, dpath, directed)
                positives += got
                checked += 1
    assert positives > 20 and checked > 1000


# ------------------------------------------------------------------------------------------------
# dominance embeddings (star GAT + hinge loss)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("monotone", "with_negatives"), [(True, False), (False, False), (True, True)])
def test_gat_backward_matches_finite_differences(monotone, with_negatives):
    rng = np.random.default_rng(0)
    vocab = [f"L{i}" for i in range(5)]
    stars = [Star.of(str(rng.choice(vocab)), rng.choice(vocab, size=int(rng.integers(0, 4)))) for _ in range(8)]
    unique, pairs = substructure_pairs(stars)
    negs = negative_pairs(stars, unique, 3, seed=1)[1] if with_negatives else None
    assert negs is None or len(negs) > 0
    model = StarGAT(16, hidden=5, out_dim=3, monotone=monotone, seed=1)
    _, grads = model.pair_loss(unique, ENC, pairs, 0.5, negs, 2.0)
    eps = 1e-6
    for name in model.PARAMS:
        param = getattr(model, name)
        num = np.zeros_like(param)
        for idx in np.ndindex(param.shape):
            old = param[idx]
            param[idx] = old + eps
            up, _ = model.pair_loss(unique, ENC, pairs, 0.5, negs, 2.0)
            param[idx] = old - eps
            down, _ = model.pair_loss(unique, ENC, pairs, 0.5, negs, 2.0)
            param[idx] = old
            num[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[name], num, rtol=1e-4, atol=1e-7)


def test_substructure_lattice():
    unique, pairs = substructure_pairs([Star.of("C", ["a", "a", "b"])])
    assert len(unique) == 6  # (0..2 a) x (0..1 b)
    for g, s in pairs:
        assert unique[g].contains(unique[s]) and len(unique[g].leaves) == len(unique[s].leaves) + 1
    assert len(pairs) == 7  # covering relations of the 3x2 grid
    big = Star.of("C", [f"x{i}" for i in range(12)])  # 4096 sub-stars > budget: sampled chains
    unique, pairs = substructure_pairs([big], max_per_star=50)
    assert big in unique and Star("C", ()) in unique
    assert all(unique[g].contains(unique[s]) for g, s in pairs)


def generated_containments(rng, n_stars: int, vocab: list[str]):
    """Random stars and, for each, random sub-stars and random super-stars (seeded)."""
    pairs = []
    for _ in range(n_stars):
        center = str(rng.choice(vocab[:3]))
        leaves = list(rng.choice(vocab, size=int(rng.integers(0, 9))))
        star = Star.of(center, leaves)
        for _ in range(4):  # sub-structures
            keep = [x for x in leaves if rng.random() < 0.5]
            pairs.append((star, Star.of(center, keep)))
        for _ in range(4):  # super-graphs
            extra = list(rng.choice(vocab, size=int(rng.integers(1, 30))))
            pairs.append((Star.of(center, leaves + extra), star))
    return pairs


def test_monotone_gat_never_rejects_a_true_containment():
    rng = np.random.default_rng(123)
    vocab = [f"L{i}" for i in range(10)]
    pairs = generated_containments(rng, 400, vocab)
    train_stars = [
        Star.of(str(rng.choice(vocab[:3])), rng.choice(vocab, size=int(rng.integers(0, 6)))) for _ in range(50)
    ]
    for seed in range(3):
        model = StarGAT(16, hidden=16, out_dim=8, monotone=True, seed=seed)
        report = train_dominance(model, train_stars, ENC, epochs=5, margin=0.05)
        assert report.violations == 0
        uppers = model.embed([g for g, _ in pairs], ENC)
        lowers = model.embed([s for _, s in pairs], ENC)
        for up, lo, (g, s) in zip(uppers, lowers, pairs, strict=True):
            assert g.contains(s)
            assert dominates(up, lo), (g, s)
    # and the embeddings are not trivial: many non-containments are rejected
    unique = list({s for pair in pairs for s in pair})
    emb = model.embed(unique, ENC)
    rejected = total = 0
    for i, j in rng.integers(len(unique), size=(3000, 2)):
        if unique[i].center == unique[j].center and not unique[i].contains(unique[j]):
            total += 1
            rejected += not dominates(emb[i], emb[j])
    assert rejected / total > 0.5


def test_paper_gat_trained_to_zero_loss_certifies_its_lattice():
    rng = np.random.default_rng(7)
    vocab = [f"L{i}" for i in range(6)]
    stars = [Star.of(str(rng.choice(vocab[:2])), rng.choice(vocab, size=int(rng.integers(0, 5)))) for _ in range(25)]
    model = StarGAT(16, hidden=12, out_dim=6, monotone=False, seed=0)
    unique, pairs = substructure_pairs(stars)
    before = dominance_violations(model, unique, pairs, ENC)
    report = train_dominance(model, stars, ENC, epochs=400, lr=0.02, margin=0.05)
    assert before > 0  # an untrained softmax GAT does violate dominance
    assert report.violations == 0
    # all pairs of the lattice (not only the covering ones used for training) by transitivity
    emb = dict(zip(unique, model.embed(unique, ENC), strict=True))
    n = 0
    for g in unique:
        for s in unique:
            if g.contains(s):
                assert dominates(emb[g], emb[s])
                n += 1
    assert n > len(pairs)


def test_dominance_mask_tolerance():
    up = np.array([[1.0, 2.0], [1.0, 1.9999]])
    assert dominance_mask(up, np.array([1.0, 2.0])).tolist() == [True, False]
    assert dominates([1.0, 2.0], [1.0 + 1e-12, 2.0])


# ------------------------------------------------------------------------------------------------
# path index
# ------------------------------------------------------------------------------------------------


def test_index_candidates_equal_linear_scan():
    rng = np.random.default_rng(8)
    graph = random_data_graph(rng, 60, 200, 3, relations=("r0", "r1", "r2"))
    emb = monotone_embedder()
    node_emb = emb.node_embeddings(graph)
    paths = enumerate_paths(graph, 2) + enumerate_paths(graph, 1)
    index = PathIndex(paths, node_emb)
    assert len(index) == len(paths) and index.lengths == (1, 2)
    labels_seen = sorted(set(graph.labels.values()))
    nonempty = 0
    for trial in range(300):
        p = paths[int(rng.integers(len(paths)))]
        labels = list(p.labels)
        # query embedding: the path's own embedding scaled down, or a random vector
        base = np.concatenate([node_emb[v] for v in p.nodes])
        q = base * rng.uniform(0.5, 1.0) if trial % 2 else base + rng.normal(0, 0.5, size=base.shape)
        hops = [
            None if rng.random() < 0.5 else Hop(str(rng.choice(["r0", "r1", "r2"])), bool(rng.random() < 0.5))
        ] * p.length
        directed = bool(rng.random() < 0.5)
        got = index.candidates(labels, hops, q, directed=directed)
        ref = index.scan(labels, hops, q, directed=directed)
        assert np.array_equal(got, ref)
        nonempty += len(got) > 0
        # wildcard lookups (Algorithm 5) against brute force
        wild = [None if rng.random() < 0.5 else x for x in labels]
        brute = [
            i
            for i, z in enumerate(index.paths(p.length))
            if all(w is None or w == x for w, x in zip(wild, z.labels, strict=True))
        ]
        assert index.rows(wild).tolist() == brute
    assert nonempty > 100
    assert len(index.candidates(["nope", labels_seen[0], labels_seen[0]])) == 0
    with pytest.raises(ValueError):
        index.candidates(list(paths[0].labels), None, np.zeros(3))


def test_index_without_embeddings_uses_labels_and_hops_only():
    g = DataGraph({1: "A", 2: "B", 3: "A"}, [(1, 2, "x"), (3, 2, "y")])
    index = PathIndex(enumerate_paths(g, 1))
    rows = index.candidates(["A", "B"], [Hop("y")])
    assert [index.path(1, r).nodes for r in rows] == [(3, 2)]
    assert len(index.candidates(["A", "B"], [Hop("y", False)], directed=True)) == 0
    assert len(index.candidates(["A", "B"], [Hop("zzz")])) == 0


# ------------------------------------------------------------------------------------------------
# label completion (Algorithms 5-6)
# ------------------------------------------------------------------------------------------------


def test_completions_enumerate_the_cartesian_product():
    q = QueryGraph({"q1": None, "q2": None, "k": "K"}, [("q1", "k"), ("q2", "k")])
    cands = {"q1": frozenset({"l1", "l2"}), "q2": frozenset({"l3"})}  # U of Appendix E
    assert list(completions(q, cands)) == [{"q1": "l1", "q2": "l3"}, {"q1": "l2", "q2": "l3"}]
    assert n_completions(cands) == 2
    completed = q.with_labels({"q1": "l1", "q2": "l3"})
    assert completed.unknown_nodes == () and completed.labels["q1"] == "l1"


def test_candidate_labels_keep_every_true_answer_and_intersect_paths():
    g = DataGraph(
        {"d1": "D1", "d2": "D2", "d3": "D3", "a": "A", "b": "B", "c": "C"},
        [("d1", "a"), ("d1", "b"), ("d2", "a"), ("d3", "b"), ("d3", "c"), ("d2", "c")],
    )
    q = QueryGraph({"x": None, "a": "A", "b": "B"}, [("x", "a"), ("x", "b")])
    index = build_path_index(g, [1, 2])
    per_edge = decompose(q, 1).paths  # x-a and x-b separately: the intersection does the work
    found = candidate_labels(q, per_edge, index)
    assert found == {"x": frozenset({"D1"})}
    refined = candidate_labels(q, decompose(q, 2).paths, index, g)
    assert refined == {"x": frozenset({"D1"})}


# ------------------------------------------------------------------------------------------------
# assembly (Algorithm 8) and fallback
# ------------------------------------------------------------------------------------------------


def test_assembly_never_combines_conflicting_bindings():
    rng = np.random.default_rng(9)
    plan = [QueryPath(("a", "x", "b"), (0, 1)), QueryPath(("c", "x", "d"), (2, 3)), QueryPath(("b", "e"), (4,))]
    nodes = list(range(7))
    hop = Hop()
    for _ in range(40):
        cands = []
        for p in plan:
            lst = []
            for _ in range(int(rng.integers(0, 12))):
                vs = tuple(int(v) for v in rng.choice(nodes, size=len(p.nodes), replace=False))
                lst.append(DataPath(vs, tuple("L" for _ in vs), tuple(hop for _ in vs[1:])))
            cands.append(lst)
        for injective in (True, False):
            got = assemble(plan, cands, injective=injective)
            ref = assemble_cartesian(plan, cands, injective=injective)
            assert {m.binding for m in got} == {m.binding for m in ref}
            for m in got:
                mapping = m.mapping
                assert len(mapping) == 6
                if injective:
                    assert len(set(mapping.values())) == len(mapping)
                for qp, dp in zip(plan, m.paths, strict=True):
                    assert all(mapping[q] == v for q, v in zip(qp.nodes, dp.nodes, strict=True))
    # Algorithm 8 alone (injective=False) accepts two query nodes on one data node; we do not
    p1, p2 = QueryPath(("x", "a"), (0,)), QueryPath(("x", "b"), (1,))
    d1 = DataPath((1, 2), ("X", "A"), (hop,))
    assert assemble([p1, p2], [[d1], [d1]]) == []
    assert len(assemble([p1, p2], [[d1], [d1]], injective=False)) == 1
    assert assemble([p1, p2], [[d1], []]) == []
    many = [
        [DataPath((0, i), ("X", "A"), (hop,)) for i in range(1, 6)],
        [DataPath((0, i), ("X", "A"), (hop,)) for i in range(1, 6)],
    ]
    assert len(assemble([p1, p2], many)) == 20
    assert len(assemble([p1, p2], many, max_results=3)) == 3


def test_one_hop_subgraph():
    g = DataGraph({i: f"N{i}" for i in range(6)}, [(0, 1), (1, 2), (2, 3), (4, 0), (4, 5)])
    sub = one_hop_subgraph(g, [0])
    assert set(sub.nodes) == {0, 1, 4}
    assert {(e.src, e.dst) for e in sub.edges} == {(0, 1), (4, 0)}


# ------------------------------------------------------------------------------------------------
# end to end: planted multi-constraint answers
# ------------------------------------------------------------------------------------------------


def medical_graph() -> DataGraph:
    """Fig. 1 of the paper with decoys that satisfy all but one constraint."""
    nodes = {
        "t2d": "Type 2 diabetes",
        "pa": "Primary aldosteronism",
        "cs": "Cushing's syndrome",
        "ob": "Obesity",
        "pheo": "Pheochromocytoma",
        "massage": "Massage",
        "htn": "Hypertension",
        "ai": "Adrenal incidentaloma",
        "scs": "Subclinical Cushing's syndrome",
        "acu": "Acupuncture",
    }
    edges = [
        ("t2d", "massage", "adjuvant_therapy"),
        ("t2d", "htn", "complication"),
        ("t2d", "ai", "complication"),
        ("t2d", "scs", "differential_diagnosis"),
        ("pa", "massage", "adjuvant_therapy"),  # all but the differential diagnosis
        ("pa", "htn", "complication"),
        ("pa", "ai", "complication"),
        ("cs", "acu", "adjuvant_therapy"),  # wrong therapy
        ("cs", "htn", "complication"),
        ("cs", "ai", "complication"),
        ("cs", "scs", "differential_diagnosis"),
        ("ob", "massage", "adjuvant_therapy"),  # every neighbour, one with the wrong relation
        ("ob", "htn", "complication"),
        ("ob", "ai", "complication"),
        ("ob", "scs", "comorbidity"),
        ("scs", "pheo", "differential_diagnosis"),
        ("pheo", "htn", "complication"),
        ("pheo", "ai", "complication"),
        ("pheo", "massage", "adjuvant_therapy"),  # second planted answer
    ]
    return DataGraph(nodes, edges)


def medical_query() -> QueryGraph:
    return QueryGraph(
        {
            "x": "UNK",
            "m": "Massage",
            "h": "Hypertension",
            "a": "Adrenal incidentaloma",
            "s": "Subclinical Cushing's syndrome",
        },
        [
            ("x", "m", "adjuvant_therapy"),
            ("x", "h", "complication"),
            ("x", "a", "complication"),
            ("x", "s", "differential_diagnosis"),
        ],
    )


@pytest.mark.parametrize("length", [1, 2])
@pytest.mark.parametrize("with_embeddings", [False, True])
def test_planted_medical_answers_exactly(length, with_embeddings):
    graph, query = medical_graph(), medical_query()
    emb = monotone_embedder() if with_embeddings else None
    res = match_query(query, graph, path_length=length, embedder=emb)
    assert sorted(res.answers()) == ["pheo", "t2d"]
    assert not res.used_fallback and res.fallback is None
    assert result_set(res) == nx_matches(query, graph)
    for m in res.matches:  # every assembled subgraph realises every query edge
        assert len(m.edges) >= len(query.edges)
    # relations unknown (the paper's query edges have none): the decoy with the wrong relation joins
    loose = QueryGraph(query.labels, [(e.src, e.dst) for e in query.edges])
    assert sorted(match_query(loose, graph, path_length=length, embedder=emb).answers()) == ["ob", "pheo", "t2d"]


def test_planted_two_unknowns_chain_and_direction():
    """Which drug treats a disease that causes hypertension and is made by Acme?  (two unknowns)"""
    g = DataGraph(
        {
            "d1": "DrugOne",
            "d2": "DrugTwo",
            "d3": "DrugThree",
            "d4": "DrugFour",
            "a": "DiseaseA",
            "b": "DiseaseB",
            "htn": "Hypertension",
            "acme": "Acme",
            "umb": "Umbrella",
        },
        [
            ("d1", "a", "treats"),
            ("d1", "acme", "made_by"),
            ("a", "htn", "causes"),
            ("d2", "a", "treats"),
            ("d2", "umb", "made_by"),  # wrong maker
            ("d3", "b", "treats"),
            ("d3", "acme", "made_by"),  # disease does not cause hypertension
            ("b", "htn", "prevents"),
            ("d4", "b", "treats"),
            ("acme", "d4", "made_by"),  # reversed direction: only matches undirected
            ("htn", "b", "causes"),  # reversed: B is caused by hypertension (undirected: "b causes htn")
        ],
    )
    q = QueryGraph(
        {"drug": None, "dis": None, "h": "Hypertension", "m": "Acme"},
        [("drug", "dis", "treats"), ("dis", "h", "causes"), ("drug", "m", "made_by")],
    )
    emb = monotone_embedder(1)
    for length in (1, 2, 3):
        directed = match_query(q, g, path_length=length, embedder=emb, directed=True)
        assert {(m["drug"], m["dis"]) for m in directed.matches} == {("d1", "a")}
        assert result_set(directed) == nx_matches(q, g, directed=True)
        undirected = match_query(q, g, path_length=length, embedder=emb)
        assert {(m["drug"], m["dis"]) for m in undirected.matches} == {("d1", "a"), ("d3", "b"), ("d4", "b")}
        assert all(m["h"] == "htn" and m["m"] == "acme" for m in undirected.matches)
    with pytest.raises(ValueError):
        directed.answers()  # two unknown nodes: say which


def test_planted_answers_in_noisy_entity_graph():
    """Constraint entities C1..C4; planted answers linked to all four; decoys to three, or to all four
    with one wrong relation; plus a random noise graph around them."""
    rng = np.random.default_rng(11)
    nodes = {f"n{i}": f"Entity {i}" for i in range(150)}
    nodes.update({f"c{i}": f"Constraint {i}" for i in range(4)})
    planted = [f"ans{i}" for i in range(3)]
    decoys = [f"decoy{i}" for i in range(12)]
    nodes.update({v: v.title() for v in planted + decoys})
    rels = ["r0", "r1", "r2", "r3"]
    edges = set()
    noise = nx.gnm_random_graph(150, 400, seed=11)
    edges.update((f"n{a}", f"n{b}", str(rng.choice(rels))) for a, b in noise.edges)
    for v in planted:
        edges.update((v, f"c{i}", rels[i]) for i in range(4))
    for k, v in enumerate(decoys):
        drop = k % 4
        for i in range(4):
            if i != drop:
                edges.add((v, f"c{i}", rels[i]))
            elif k >= 8:
                edges.add((v, f"c{i}", rels[(i + 1) % 4]))  # all four neighbours, one wrong relation
    for v in planted + decoys + [f"c{i}" for i in range(4)]:  # wire them into the noise
        for u in rng.choice(150, size=3, replace=False):
            edges.add((v, f"n{u}", "r9"))
    graph = DataGraph(nodes, sorted(edges))
    q = QueryGraph(
        {"x": "UNK", **{f"k{i}": f"Constraint {i}" for i in range(4)}},
        [("x", f"k{i}", rels[i]) for i in range(4)],
    )
    for length in (1, 2):
        res = match_query(q, graph, path_length=length, embedder=monotone_embedder())
        assert sorted(res.answers()) == planted
        assert result_set(res) == nx_matches(q, graph)


@pytest.mark.parametrize("length", [1, 2, 3])
def test_random_typed_graphs_match_networkx(length):
    """Type-like labels (big label groups, the dominance filter matters): our matches equal VF2's."""
    rng = np.random.default_rng(100 + length)
    emb = monotone_embedder(length)
    pruned = label_rows = 0
    for trial in range(12):
        graph = random_data_graph(rng, 30, 60, 4)
        query = random_query_from(rng, graph, int(rng.integers(3, 6)))
        directed = bool(trial % 3 == 0)
        res = match_query(query, graph, path_length=length, embedder=emb, directed=directed)
        ref = nx_matches(query, graph, directed=directed)
        assert ref, "the query was cut from the graph, so it has a match"
        assert result_set(res) == ref
        assert not res.used_fallback
        for s in res.stats:
            label_rows += s.label_group
            pruned += s.label_group - s.filtered
    assert pruned > 0 and label_rows > 0


def test_wildcard_pass_gives_the_same_matches():
    rng = np.random.default_rng(12)
    for _ in range(6):
        graph = random_data_graph(rng, 25, 50, 3)
        query = random_query_from(rng, graph, 4, p_unknown=0.6)
        normal = match_query(query, graph, path_length=2, embedder=monotone_embedder())
        wild = match_query(query, graph, path_length=2, embedder=monotone_embedder(), max_label_combinations=0)
        if query.unknown_nodes:
            assert wild.wildcard_pass
        assert result_set(normal) == result_set(wild) == nx_matches(query, graph)


def test_paths_through_labelled_nodes_are_the_enumeration_filtered():
    """enumerate_paths_through against its definition: every path of enumerate_paths (same order, one
    per parallel edge) with one of the (position, label) pairs, on multigraphs with parallel edges."""
    rng = np.random.default_rng(21)
    for _ in range(8):
        base = random_data_graph(rng, 14, 30, 4)
        extra = [(e.src, e.dst, "r2") for e in base.edges if rng.random() < 0.3]  # parallel edges
        graph = DataGraph(base.labels, [(e.src, e.dst, e.relation) for e in base.edges] + extra)
        for length in (1, 2, 3):
            anchored = {(int(rng.integers(length + 1)), f"T{rng.integers(4)}") for _ in range(int(rng.integers(1, 4)))}
            ref = [p for p in enumerate_paths(graph, length) if any(p.labels[i] == lab for i, lab in anchored)]
            assert enumerate_paths_through(graph, length, anchored) == ref
            assert ref, "a label of 4 on 14 nodes: some path has it"


@pytest.mark.parametrize("length", [1, 2])
def test_index_of_the_paths_through_known_nodes_gives_the_full_index_matches(length):
    """match_query indexes only the paths through the query's known labels: the same matches, in the
    same order, and the same funnel as with an index of every path."""
    rng = np.random.default_rng(300 + length)
    emb = monotone_embedder(length)
    for _ in range(10):
        graph = random_data_graph(rng, 30, 70, 5)
        query = random_query_from(rng, graph, int(rng.integers(3, 6)), p_unknown=0.4)
        plan_lengths = decompose(query, length).lengths
        full = build_path_index(graph, plan_lengths, emb)
        ours = match_query(query, graph, path_length=length, embedder=emb)
        ref = match_query(query, graph, path_length=length, embedder=emb, index=full)
        assert [m.binding for m in ours.matches] == [m.binding for m in ref.matches]
        assert ours.funnel() == ref.funnel()


def test_prebuilt_index_and_max_matches():
    graph, query = medical_graph(), medical_query()
    emb = monotone_embedder()
    index = build_path_index(graph, [1], emb)
    with pytest.raises(ValueError):
        match_query(query, graph, path_length=2, index=index, embedder=emb)
    res = match_query(query, graph, path_length=1, index=index, embedder=emb)
    assert sorted(res.answers()) == ["pheo", "t2d"]
    assert len(match_query(query, graph, path_length=1, index=index, embedder=emb, max_matches=1).matches) <= 2


# ------------------------------------------------------------------------------------------------
# fallback
# ------------------------------------------------------------------------------------------------


def test_fallback_triggers_when_no_exact_match():
    graph = medical_graph()
    # no disease uses acupuncture and massage: the completion finds candidates, assembly finds nothing
    q = QueryGraph(
        {"x": None, "m": "Massage", "c": "Acupuncture", "h": "Hypertension"},
        [("x", "m", "adjuvant_therapy"), ("x", "c", "adjuvant_therapy"), ("x", "h")],
    )
    res = match_query(q, graph, embedder=monotone_embedder())
    assert res.matches == [] and res.used_fallback
    anchors = {"massage", "acu", "htn"}
    assert anchors <= set(res.fallback.nodes)
    assert set(res.fallback.nodes) == anchors | {u for a in anchors for u in graph.neighbors(a)}
    assert all(e.src in anchors or e.dst in anchors for e in res.fallback.edges)
    # an entity the graph does not have: no label candidates at all
    q2 = QueryGraph({"x": None, "m": "Massage", "z": "Zebra"}, [("x", "m"), ("x", "z")])
    res2 = match_query(q2, graph)
    assert res2.used_fallback and res2.label_candidates["x"] == frozenset()
    assert set(res2.fallback.nodes) == {"massage"} | set(graph.neighbors("massage"))
    # normalisation result given: its anchors are used
    res3 = match_query(q2, graph, normalized={"m": "htn"})
    assert "htn" in res3.fallback.nodes and "massage" not in res3.fallback.nodes
    # a query without edges cannot be matched structurally
    res4 = match_query(QueryGraph({"m": "Massage"}, []), graph)
    assert res4.used_fallback and res4.plan.paths == ()
    # and no fallback when there is a match
    assert match_query(medical_query(), graph).fallback is None


def test_counts_are_consistent():
    res = match_query(medical_query(), medical_graph(), path_length=2, embedder=monotone_embedder())
    for s in res.stats:
        assert s.label_group >= s.filtered >= s.exact
    assert res.completions_tried == math.prod(len(v) for v in res.label_candidates.values())


# ------------------------------------------------------------------------------------------------
# the model trained on a corpus graph, stored and used in the wildcard (completion) lookups
# ------------------------------------------------------------------------------------------------


def test_fit_dominance_on_corpus_stars_and_record_round_trip():
    graph = random_data_graph(np.random.default_rng(21), 40, 90, 5)
    stars = [graph.star(v) for v in graph.nodes]
    cfg = DominanceConfig(max_stars=30, epochs=10, seed=2)
    emb, fit = fit_dominance(stars, cfg)
    assert fit.corpus_stars == len(set(stars)) and fit.train_stars == min(30, len(set(stars)))
    assert fit.violations == 0 and fit.loss <= fit.initial_loss and fit.pairs > 0
    assert 0.0 < fit.separated <= 1.0
    again, cfg2, fit2 = from_record(to_record(emb, cfg, fit))  # what the SGRAGModel node holds
    assert cfg2 == cfg and fit2 == fit
    np.testing.assert_array_equal(again.embed_stars(stars), emb.embed_stars(stars))
    # the star cache is content-addressed: cached and fresh embeddings agree
    fresh = DominanceEmbedder(emb.model, emb.encode)
    np.testing.assert_allclose(fresh.embed_stars(stars[::-1]), emb.embed_stars(stars[::-1]), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        from_record({**to_record(emb, cfg, fit), "version": 0})


def test_completion_dominance_filter_keeps_every_label_and_prunes():
    """Algorithm 5 with the per-row dominance filter: the same candidate labels as without it, and rows
    ruled out before the exact check (type-like labels, trained model)."""
    rng = np.random.default_rng(31)
    pruned = 0
    for _ in range(8):
        graph = random_data_graph(rng, 30, 55, 4)
        emb, _ = fit_dominance([graph.star(v) for v in graph.nodes], DominanceConfig(epochs=2))
        query = random_query_from(rng, graph, 4, p_unknown=0.5, p_wild_rel=1.0)
        plan = decompose(query, 2)
        index = build_path_index(graph, plan.lengths, emb)
        stats: list = []
        with_gat = candidate_labels(query, plan.paths, index, graph, embedder=emb, stats=stats)
        assert with_gat == candidate_labels(query, plan.paths, index, graph)
        for s in stats:
            assert s.phase == "completion" and s.structural >= s.filtered >= s.exact
            pruned += s.pruned_by_dominance
        assert result_set(match_query(query, graph, index=index, embedder=emb)) == nx_matches(query, graph)
    assert pruned > 0


def test_negative_term_keeps_exactness_and_rejects_non_contained_stars():
    """The optional non-containment term (not in the paper): still zero false negatives (monotone model),
    and the trained embeddings reject query stars with a leaf the data star lacks more often."""
    rng = np.random.default_rng(41)
    graph = random_data_graph(rng, 40, 80, 6)
    stars = [graph.star(v) for v in graph.nodes]
    plain, fit_plain = fit_dominance(stars, DominanceConfig(epochs=5))
    neg, fit_neg = fit_dominance(stars, DominanceConfig(epochs=15, negatives_per_star=4, out_dim=16))
    assert fit_neg.negatives > 0 and fit_neg.violations == 0 and fit_plain.negatives == 0
    assert fit_neg.negative_satisfied > 0
    pool, pairs = negative_pairs(stars, list(dict.fromkeys(stars)), 4, seed=9)  # fresh (q ⊄ g) pairs

    def rejected(emb: DominanceEmbedder) -> float:
        """Share of the pairs whose data star g does not dominate the query star q (filter says no)."""
        o = emb.embed_stars(pool)
        return float(np.mean([not dominates(o[g], o[q]) for q, g in pairs.tolist()]))

    assert rejected(neg) > rejected(plain)
    for _ in range(4):
        query = random_query_from(rng, graph, 4, p_unknown=0.5, p_wild_rel=1.0)
        assert result_set(match_query(query, graph, embedder=neg)) == nx_matches(query, graph)
