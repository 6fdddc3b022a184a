"""GDS on the real server, driven as graphstrata drives it (graphstrata/gds.py: the graphdatascience
client), agrees with independent references (networkx, numpy brute force)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import networkx as nx
import numpy as np
import pytest

from graphstrata.db import Database
from graphstrata.gds import GDS


def load_graph(db: Database, g: nx.Graph | nx.DiGraph, props: dict[int, list[float]] | None = None) -> None:
    nodes = [{"i": int(n), "v": (props or {}).get(n, [0.0])} for n in g.nodes]
    db.write("UNWIND $rows AS r CREATE (:T {i: r.i, v: r.v})", rows=nodes)
    db.write("CREATE INDEX t_i IF NOT EXISTS FOR (n:T) ON (n.i)")
    db.write("CALL db.awaitIndexes(60)")
    edges = [{"a": int(a), "b": int(b)} for a, b in g.edges]
    db.write("UNWIND $rows AS r MATCH (a:T {i: r.a}), (b:T {i: r.b}) CREATE (a)-[:E]->(b)", rows=edges)


def by_i(gds: GDS, stream: Any, value: str) -> dict[int, float]:
    """A stream's `value` column by the test nodes' `i` (a GDS node id is the node's id())."""
    rows = gds.resolve(
        "UNWIND $rows AS r MATCH (n) WHERE id(n) = r.nodeId RETURN n.i AS i, r.x AS x",
        ["i", "x"],
        nodeId=stream["nodeId"],
        x=stream[value],
    )
    return {r["i"]: r["x"] for r in rows}


def test_pagerank_matches_networkx(empty_db: Database) -> None:
    g = nx.gnp_random_graph(60, 0.08, seed=7, directed=True)
    for n in g.nodes:  # no dangling nodes: GDS does not redistribute their mass, networkx does
        if g.out_degree(n) == 0:
            g.add_edge(n, (n + 1) % 60)
    load_graph(empty_db, g)
    gds = GDS(empty_db)
    p = gds.project("pr", "T", "E")
    assert (p.nodes, p.rels) == (60, g.number_of_edges())
    ours = by_i(
        gds,
        gds.client.page_rank.stream(
            p.graph, damping_factor=0.85, max_iterations=200, tolerance=1e-12, concurrency=gds.concurrency
        ),
        "score",
    )
    ref = nx.pagerank(g, alpha=0.85, tol=1e-14, max_iter=1000)
    a = np.array([ours[n] for n in g.nodes])
    b = np.array([ref[n] for n in g.nodes])
    np.testing.assert_allclose(a / a.sum(), b, rtol=1e-4, atol=1e-7)
    # same ranking of the top nodes
    assert sorted(g.nodes, key=lambda n: -ours[n])[:5] == sorted(g.nodes, key=lambda n: -ref[n])[:5]


def test_kcore_matches_networkx(empty_db: Database) -> None:
    g = nx.powerlaw_cluster_graph(120, 3, 0.4, seed=3)
    g.add_edges_from(itertools.combinations(range(200, 207), 2))  # a 7-clique: core number 6
    load_graph(empty_db, g)
    gds = GDS(empty_db)
    p = gds.project("kc", "T", {"E": {"orientation": "UNDIRECTED"}})
    ours = by_i(gds, gds.client.kcore.stream(p.graph, concurrency=gds.concurrency), "coreValue")
    assert ours == {n: c for n, c in nx.core_number(g).items()}
    assert ours[200] == 6


def test_leiden_recovers_planted_communities(empty_db: Database) -> None:
    g = nx.Graph()
    blocks = [list(range(b * 8, b * 8 + 8)) for b in range(4)]
    for block in blocks:
        g.add_edges_from(itertools.combinations(block, 2))
    g.add_edges_from([(0, 8), (9, 16), (17, 24), (25, 1)])  # a ring of single bridges
    load_graph(empty_db, g)
    gds = GDS(empty_db)
    p = gds.project("ld", "T", {"E": {"orientation": "UNDIRECTED"}})
    ours = by_i(gds, gds.client.leiden.stream(p.graph, random_seed=42, concurrency=1), "communityId")
    found = {frozenset(n for n in ours if ours[n] == c) for c in set(ours.values())}
    assert found == {frozenset(b) for b in blocks}
    # GDS's modularity of that partition equals networkx's computation of it
    stats = gds.client.leiden.stats(p.graph, random_seed=42, concurrency=1)
    assert stats.modularity == pytest.approx(nx.community.modularity(g, found), abs=1e-6)


def test_knn_matches_brute_force(empty_db: Database) -> None:
    rng = np.random.default_rng(11)
    vecs = rng.normal(size=(40, 8))
    g = nx.empty_graph(40)
    load_graph(empty_db, g, {i: vecs[i].tolist() for i in range(40)})
    gds = GDS(empty_db)
    p = gds.project("knn", {"T": {"properties": "v"}}, "*")
    k = 3
    knn = gds.client.knn.stream(
        p.graph,
        node_properties={"v": "COSINE"},
        top_k=k,
        sample_rate=1.0,
        delta_threshold=0.0,
        max_iterations=100,
        random_joins=20,
        random_seed=42,
        concurrency=1,
    )
    rows = gds.resolve(
        "UNWIND $rows AS r MATCH (a) WHERE id(a) = r.node1 MATCH (b) WHERE id(b) = r.node2 "
        "RETURN a.i AS a, b.i AS b, r.similarity AS similarity",
        ["a", "b", "similarity"],
        node1=knn["node1"],
        node2=knn["node2"],
        similarity=knn["similarity"],
    )
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ unit.T
    np.fill_diagonal(cos, -np.inf)
    # GDS KNN is NN-descent, an approximation: most true neighbours, and exact scores for what it finds.
    hits = 0
    for i in range(40):
        mine = {r["b"] for r in rows if r["a"] == i}
        assert len(mine) == k
        hits += len(mine & set(np.argsort(-cos[i])[:k].tolist()))
    assert hits / (40 * k) >= 0.9, f"recall {hits / (40 * k):.2f}"
    for r in rows:  # GDS maps cosine from [-1, 1] to [0, 1]
        assert r["similarity"] == pytest.approx((1 + cos[r["a"], r["b"]]) / 2, abs=1e-6)


def test_projection_is_reused_until_the_graph_changes(empty_db: Database) -> None:
    from graphstrata.cypher import query

    load_graph(empty_db, nx.path_graph(5))
    empty_db.write(query("meta.touch"))
    gds = GDS(empty_db)
    first = gds.project("reuse", "T", "E")
    again = gds.project("reuse", "T", "E")
    assert (first.reused, again.reused) == (False, True)
    empty_db.write("CREATE (:T {i: 99})")
    empty_db.write(query("meta.touch"))
    rebuilt = gds.project("reuse", "T", "E")
    assert not rebuilt.reused and rebuilt.nodes == 6


def test_betweenness_matches_networkx(empty_db: Database) -> None:
    g = nx.gnp_random_graph(50, 0.1, seed=random.Random(5).randint(0, 999))
    load_graph(empty_db, g)
    gds = GDS(empty_db)
    p = gds.project("bc", "T", {"E": {"orientation": "UNDIRECTED"}})
    ours = by_i(gds, gds.client.betweenness.stream(p.graph, concurrency=gds.concurrency), "score")
    ref = nx.betweenness_centrality(g, normalized=False)
    for n in g.nodes:
        assert ours[n] == pytest.approx(ref[n], rel=1e-6, abs=1e-6)
