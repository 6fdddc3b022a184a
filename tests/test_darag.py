"""DA-RAG retrieval (graphstrata/retrieval/darag.py) against a real Neo4j.

The hand-built graph below plants communities on the three layers with hand-set embeddings, so the
coarse and fine EACS results can be computed by hand (each step is spelt out next to the data).
Every embedding is ``cos * e0 + sqrt(1 - cos^2) * e_axis`` with its own axis, and the query is
``e0``: a node's cosine to the query is exactly the ``cos`` it was given.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from graphstrata.algorithms.eacs import density_bound, diameter_bound, eacs, greedy_pack, pairwise_similarity
from graphstrata.algorithms.ktruss import is_connected_k_truss
from graphstrata.algorithms.qpeel import q_peel
from graphstrata.config import Settings
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.darag import DARAGRetriever
from graphstrata.text.tokens import count_tokens
from tests.fake_openai import fake_llm_settings

pytest_plugins = ["tests.conftest_llm"]

DIM = 384

# ---- chunk layer L_C -------------------------------------------------------------------------------
# A = K4 a1..a4 (0.93, 0.90, 0.88, 0.86); x (0.10) closes one triangle with a1, a2 (a free rider
# inside the 3-truss); B = K5 b1..b5 (0.50 .. 0.46); z (0.95, the single most similar chunk) hangs off
# a1 by one edge in no triangle; n1 (0.20) is isolated.
#   k=3: components A+x and B. Q-Peel on A+x: drop x (mean 0.732 -> 0.89), drop a4 (-> 0.9033: a
#        triangle is still a 3-truss); then dropping a3 or a2 would raise the mean but leave a bare
#        edge, and dropping a1 would lower it -> {a1, a2, a3}, QRScore 0.90333 (beats B's <= 0.5).
#   k=4: x's edges close one triangle only -> out. A = K4 cannot lose a node (a triangle is no 4-truss)
#        -> {a1..a4}, QRScore 0.8925.
#   k=5: only B (K5, nothing removable) -> {b1..b5}, QRScore 0.48.  k=6: nothing.
#   H_C = the best QRScore over k = {a1, a2, a3} (k=3); z is not in any k-truss.
CHUNKS = {
    "a1": 0.93,
    "a2": 0.90,
    "a3": 0.88,
    "a4": 0.86,
    "x": 0.10,
    "b1": 0.50,
    "b2": 0.49,
    "b3": 0.48,
    "b4": 0.47,
    "b5": 0.46,
    "z": 0.95,
    "n1": 0.20,
}
K4_A = [("a1", "a2"), ("a1", "a3"), ("a1", "a4"), ("a2", "a3"), ("a2", "a4"), ("a3", "a4")]
K5_B = [(f"b{i}", f"b{j}") for i in range(1, 6) for j in range(i + 1, 6)]
CHUNK_EDGES = [*K4_A, ("x", "a1"), ("x", "a2"), *K5_B, ("z", "a1")]

# ---- entities, KG layer L_KG and similarity layer L_S ----------------------------------------------
# Mentions: a1 -> p1 p2 y r1; a2 -> p3 p4 r2; a3 -> r3 s1 s2 s3 s4; a4 (not in H_C) -> w.
# KG: P = K4 p1..p4 (0.80, 0.77, 0.75, 0.72); y (0.05) in triangles with p1, p2; w (0.85, would
# *raise* P's QRScore) in triangles with p1, p2 but outside V_work; R = triangle r1..r3 (0.30 .. 0.28).
#   k=3: P+y: drop y (-> 0.76), drop p4 (-> 0.7733); then p3/p2 would raise the mean but break the
#        truss, p1 would lower it -> {p1, p2, p3}, 0.77333 (beats R's 0.29).
#   k=4: P (y's edges close one triangle only) -> {p1..p4}, 0.76.
# Similarity: S = K4 s1..s4 (0.61, 0.58, 0.56, 0.50) by SIMILAR edges s_i -> s_j (i < j), plus
# s1 -> w (outside V_work).
#   k=3: drop s4 (0.5625 -> 0.58333); s3/s2 cannot go -> {s1, s2, s3}, 0.58333.  k=4: {s1..s4}, 0.5625.
#   With k_neighbor = 1 each entity keeps its single best neighbour, the edges read in both directions
#   (the layer stores a pair once): s1-w (outside), s2-s1, s3-s2, s4-s3 (ties by id): three edges
#   inside V_work, no triangle, no similarity community.
ENTITIES = {
    "p1": 0.80,
    "p2": 0.77,
    "p3": 0.75,
    "p4": 0.72,
    "y": 0.05,
    "w": 0.85,
    "r1": 0.30,
    "r2": 0.29,
    "r3": 0.28,
    "s1": 0.61,
    "s2": 0.58,
    "s3": 0.56,
    "s4": 0.50,
}
MENTIONS = {
    "a1": ["p1", "p2", "y", "r1"],
    "a2": ["p3", "p4", "r2"],
    "a3": ["r3", "s1", "s2", "s3", "s4"],
    "a4": ["w"],
}
K4_P = [("p1", "p2"), ("p1", "p3"), ("p1", "p4"), ("p2", "p3"), ("p2", "p4"), ("p3", "p4")]
RELATED = [*K4_P, ("y", "p1"), ("y", "p2"), ("w", "p1"), ("w", "p2"), ("r1", "r2"), ("r2", "r3"), ("r1", "r3")]
SIMILAR = [
    ("s1", "s2", 0.9),
    ("s1", "s3", 0.8),
    ("s1", "s4", 0.7),
    ("s2", "s3", 0.9),
    ("s2", "s4", 0.8),
    ("s3", "s4", 0.9),
    ("s1", "w", 0.95),
]


def unit(cos: float, axis: int) -> list[float]:
    v = [0.0] * DIM
    v[0], v[axis] = cos, float(np.sqrt(1 - cos * cos))
    return v


Q = unit(1.0, 1)


class QueryEmbedder:
    """Embeds every text as the query vector e0 (the graph's embeddings are hand-set)."""

    name, dim = "hand-set", DIM

    def embed(self, texts: list[str], progress: Any = None) -> np.ndarray:
        return np.array([Q for _ in texts], dtype=np.float32)


@pytest.fixture
def hand_graph(graph: Database) -> Database:
    axes = iter(range(2, DIM))
    chunk_rows = [
        {"id": c, "text": f"Passage {c}.", "doc_title": f"Doc {c}", "embedding": unit(cos, next(axes))}
        for c, cos in CHUNKS.items()
    ]
    entity_rows = [
        {"id": e, "name": f"Entity {e.upper()}", "embedding": unit(cos, next(axes))} for e, cos in ENTITIES.items()
    ]
    graph.write(
        "UNWIND $rows AS r CREATE (c:Chunk {id: r.id, text: r.text, doc_title: r.doc_title}) "
        "WITH c, r CALL db.create.setNodeVectorProperty(c, 'embedding', r.embedding)",
        rows=chunk_rows,
    )
    graph.write(
        "UNWIND $rows AS r CREATE (e:Entity {id: r.id, name: r.name, type: 'THING'}) "
        "WITH e, r CALL db.create.setNodeVectorProperty(e, 'embedding', r.embedding)",
        rows=entity_rows,
    )
    graph.write(
        "UNWIND $rows AS r MATCH (a:Chunk {id: r[0]}), (b:Chunk {id: r[1]}) "
        "CREATE (a)-[:CHUNK_RELATED {weight: 1}]->(b)",
        rows=[list(e) for e in CHUNK_EDGES],
    )
    graph.write(
        "UNWIND $rows AS r MATCH (c:Chunk {id: r[0]}), (e:Entity {id: r[1]}) CREATE (c)-[:MENTIONS {count: 1}]->(e)",
        rows=[[c, e] for c, es in MENTIONS.items() for e in es],
    )
    graph.write(
        "UNWIND $rows AS r MATCH (a:Entity {id: r[0]}), (b:Entity {id: r[1]}) "
        "CREATE (a)-[:RELATED {predicate: 'links', weight: 1, description: r[0] + ' links ' + r[1]}]->(b)",
        rows=[list(e) for e in RELATED],
    )
    graph.write(
        "UNWIND $rows AS r MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b}) "
        "CREATE (a)-[:SIMILAR {kind: 'semantic', score: r.s}]->(b)",
        rows=[{"a": a, "b": b, "s": s} for a, b, s in SIMILAR],
    )
    graph.write(query("meta.await_indexes"), seconds=60)
    return graph


#: the paper's literal coarse search (all of L_C, any community, no filling), which the hand
#: computations above follow; the defaults' bounded, anchored search has tests of its own
PAPER = {"coarse_candidates": None, "coarse_anchors": 0, "fill": False}


class PaperDARAG(DARAGRetriever):
    def retrieve(self, question: str, **params: Any) -> Any:
        return super().retrieve(question, **(PAPER | params))


def retriever(db: Database, settings: Settings, paper: bool = True) -> DARAGRetriever:
    cls = PaperDARAG if paper else DARAGRetriever
    return cls(db, QueryEmbedder(), settings)  # type: ignore[arg-type]


def communities(notes: dict, layer: str) -> dict[int, dict]:
    """The non-duplicate communities of one layer by k."""
    return {c["k"]: c for c in notes["communities"] if c["layer"] == layer and "duplicate_of_k" not in c}


def assert_valid_community(c: dict) -> None:
    """A connected k-truss satisfying the bounds of Appendix A.1 and A.2, with consistent metrics."""
    k, n = c["k"], c["size"]
    index = {x: i for i, x in enumerate(c["nodes"])}
    edges = np.array([[index[a], index[b]] for a, b in c["edges"]], dtype=np.int64).reshape(-1, 2)
    assert n == len(c["nodes"]) >= k and c["n_edges"] == len(c["edges"])
    assert is_connected_k_truss(edges, k), c
    assert set(np.unique(edges).tolist()) == set(range(n))  # no isolated member
    g = nx.Graph([tuple(e) for e in c["edges"]])
    assert c["diameter"] == nx.diameter(g) <= diameter_bound(n, k) == (2 * n - 2) // k
    assert c["density"] == pytest.approx(nx.density(g), abs=1e-4)
    assert c["density"] >= density_bound(n, k) - 1e-4 and density_bound(n, k) == pytest.approx((k - 1) / (n - 1))


# --------------------------------------------------------------------------------------------------
# hand-built graph: coarse and fine communities as computed by hand
# --------------------------------------------------------------------------------------------------


def test_large_communities_are_noted_without_their_edge_lists(
    hand_graph: Database, neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A community's edges are listed up to NOTE_MAX_EDGES; above, only counted (the planted chunk
    communities have 3, 6 and 10 edges)."""
    from graphstrata.retrieval import darag_layers

    monkeypatch.setattr(darag_layers, "NOTE_MAX_EDGES", 6)
    chunk = communities(
        retriever(hand_graph, neo4j_settings).retrieve("which planted community?", use_llm=False).notes, "chunk"
    )
    assert [chunk[k]["n_edges"] for k in (3, 4, 5)] == [3, 6, 10]
    assert len(chunk[3]["edges"]) == 3 and len(chunk[4]["edges"]) == 6
    assert "edges" not in chunk[5] and chunk[5]["edges_listed"] is False


def test_coarse_and_fine_communities_match_the_hand_computation(hand_graph: Database, neo4j_settings: Settings) -> None:
    r = retriever(hand_graph, neo4j_settings).retrieve("which planted community?", use_llm=False)
    n = r.notes
    # coarse: one Q-Peel community per k on the chunk layer, H_C = the best QRScore
    chunk = communities(n, "chunk")
    assert sorted(chunk) == [3, 4, 5]
    assert set(chunk[3]["nodes"]) == {"a1", "a2", "a3"} and chunk[3]["qrscore"] == pytest.approx(2.71 / 3, abs=1e-4)
    assert set(chunk[4]["nodes"]) == {"a1", "a2", "a3", "a4"} and chunk[4]["qrscore"] == pytest.approx(0.8925, abs=1e-4)
    assert set(chunk[5]["nodes"]) == {f"b{i}" for i in range(1, 6)} and chunk[5]["qrscore"] == pytest.approx(
        0.48, abs=1e-4
    )
    assert n["coarse"]["fallback"] is False and n["coarse"]["k"] == 3 and chunk[3]["selected"]
    assert n["coarse"]["chunks"] == ["a1", "a2", "a3"]  # x peeled, z (most similar, in no triangle) excluded
    assert n["coarse"]["candidates"] == len(CHUNKS) and n["coarse"]["edges"] == len(CHUNK_EDGES)
    # working subgraph: entities of a1, a2, a3 only (w is mentioned by a4 alone)
    assert n["working"] == {"entities": 12, "kg_edges": len(RELATED) - 2, "similarity_edges": 6}
    kg = communities(n, "kg")
    assert set(kg) == {3, 4}
    assert set(kg[3]["nodes"]) == {"p1", "p2", "p3"} and kg[3]["qrscore"] == pytest.approx(2.32 / 3, abs=1e-4)
    assert set(kg[4]["nodes"]) == {"p1", "p2", "p3", "p4"} and kg[4]["qrscore"] == pytest.approx(0.76, abs=1e-4)
    sim = communities(n, "similarity")
    assert set(sim) == {3, 4}
    assert set(sim[3]["nodes"]) == {"s1", "s2", "s3"} and sim[3]["qrscore"] == pytest.approx(1.75 / 3, abs=1e-4)
    assert set(sim[4]["nodes"]) == {"s1", "s2", "s3", "s4"} and sim[4]["qrscore"] == pytest.approx(0.5625, abs=1e-4)
    for c in n["communities"]:
        assert_valid_community(c)
        assert "w" not in c["nodes"] and "y" not in c["nodes"] and "x" not in c["nodes"]
    # B.3 average pairwise similarity: members share only e0, so cos(u, v) = cos_u * cos_v
    cos = [ENTITIES[e] for e in ("p1", "p2", "p3")]
    pairs = [cos[0] * cos[1], cos[0] * cos[2], cos[1] * cos[2]]
    assert kg[3]["avg_similarity"] == pytest.approx(np.mean(pairs), abs=1e-4)


def test_no_llm_context_ranks_communities_by_qrscore(hand_graph: Database, neo4j_settings: Settings) -> None:
    r = retriever(hand_graph, neo4j_settings).retrieve("which planted community?", use_llm=False)
    assert r.notes["ranking"] == "qrscore" and r.notes["llm"] == {"used": False}
    comm = [i for i in r.items if i.label == "EACSCommunity"]
    chunks = [i for i in r.items if i.label == "Chunk"]
    assert r.items == chunks + comm  # coarse to fine: H_C's chunks, then the packed communities
    # no model wrote a report: C_b is 1/3 of the default budget 4800 (the text units' share of Table 4)
    assert r.notes["report_budget"] == 1600
    by_id = {c["id"]: c for c in r.notes["communities"] if c["layer"] != "chunk"}
    assert [(by_id[i.node_id]["layer"], by_id[i.node_id]["k"]) for i in comm] == [
        ("kg", 3),
        ("kg", 4),
        ("similarity", 3),
        ("similarity", 4),
    ]
    assert all(i.score == pytest.approx(by_id[i.node_id]["qrscore"], abs=1e-4) for i in comm)
    assert all(by_id[i.node_id]["selected"] for i in comm)
    # the extractive rendering: member names and the relations among them
    assert "Entity P1" in comm[0].text and "p1 links p2" in comm[0].text and "Entity Y" not in comm[0].text
    # provenance: H_C chunks mentioning the members, most members first
    assert comm[0].chunk_ids == ["a1", "a2"] and comm[2].chunk_ids == ["a3"]
    assert [i.node_id for i in chunks] == ["a1", "a2", "a3"]
    assert [round(i.score, 4) for i in chunks] == [0.93, 0.90, 0.88]
    assert r.chunk_ids() == ["a1", "a2", "a3"]
    assert {"a1", "p1", "s1"} <= set(r.subgraph.nodes) and "a1-CHUNK_RELATED->a2" in r.subgraph.relationships
    # the chunks get only what the packed reports leave of the budget
    reports = sum(i.tokens for i in comm)
    unit = chunks[0].tokens
    assert all(i.tokens == unit for i in chunks)
    r = retriever(hand_graph, neo4j_settings).retrieve(
        "q", use_llm=False, budget=reports + 2 * unit + 1, report_budget=reports
    )
    assert [i.node_id for i in r.items if i.label == "Chunk"] == ["a1", "a2"]
    assert sum(i.label == "EACSCommunity" for i in r.items) == 4 and r.tokens <= r.budget
    # the other layout: the same items, the reports first
    r2 = retriever(hand_graph, neo4j_settings).retrieve(
        "which planted community?", use_llm=False, layout="reports_first"
    )
    assert r2.items == comm + chunks


def test_parameters_layers_k_and_k_neighbor(hand_graph: Database, neo4j_settings: Settings) -> None:
    darag = retriever(hand_graph, neo4j_settings)
    r = darag.retrieve("q", use_llm=False, k_neighbor=1)
    assert communities(r.notes, "similarity") == {} and r.notes["working"]["similarity_edges"] == 3
    r = darag.retrieve("q", use_llm=False, layers=["kg"], k_max=3)
    assert {c["layer"] for c in r.notes["communities"]} == {"chunk", "kg"}
    assert {c["k"] for c in r.notes["communities"]} == {3}
    r = darag.retrieve("q", use_llm=False, coarse_k=4)  # the chunk community of k = 4: H_C = A
    assert r.notes["coarse"]["chunks"] == ["a1", "a2", "a3", "a4"] and r.notes["coarse"]["k"] == 4
    assert "w" in {e for c in r.notes["communities"] for e in c["nodes"]}  # a4 brings w into V_work
    r = darag.retrieve("q", use_llm=False, report_budget=1)  # no community fits C_b: chunks only
    assert r.notes["selected"] == 0 and {i.label for i in r.items} == {"Chunk"}
    with pytest.raises(Exception, match="k_max"):
        darag.retrieve("q", k_min=5, k_max=4)
    with pytest.raises(Exception, match="layers"):
        darag.retrieve("q", layers=["chunks"])


def test_coarse_fallback_when_the_chunk_layer_has_no_truss(hand_graph: Database, neo4j_settings: Settings) -> None:
    hand_graph.write("MATCH (:Chunk)-[r:CHUNK_RELATED]->(:Chunk) DELETE r")
    r = retriever(hand_graph, neo4j_settings).retrieve("q", use_llm=False, chunk_k=3)
    assert r.notes["coarse"]["fallback"] is True and "no 3-truss" in r.notes["coarse"]["reason"]
    assert r.notes["coarse"]["chunks"] == ["z", "a1", "a2"]  # the most similar chunks stand in for H_C
    assert [c["layer"] for c in r.notes["communities"]].count("chunk") == 0
    assert [i.node_id for i in r.items if i.label == "Chunk"] == ["z", "a1", "a2"]
    kg3 = next(i for i in r.items if i.label == "EACSCommunity")
    assert kg3.chunk_ids == ["a1", "a2"]  # the KG community {p1, p2, p3}: p1, p2 in a1, p3 in a2
    assert r.chunk_ids() == ["z", "a1", "a2"]


def test_default_coarse_community_holds_a_chunk_nearest_the_query(
    hand_graph: Database, neo4j_settings: Settings
) -> None:
    """The default search: H_C must hold one of the 5 chunks nearest the query (z, a1, a2, a3, a4), so
    the K5 B (k=5, about something else) is no candidate; the budget H_C and the reports leave is
    filled with the nearest other chunks, z first."""
    r = retriever(hand_graph, neo4j_settings, paper=False).retrieve("q", use_llm=False, budget=300)
    n = r.notes
    assert n["coarse"]["anchors"] == ["z", "a1", "a2", "a3", "a4"]
    assert sorted(communities(n, "chunk")) == [3, 4]  # B's k=5 community holds no anchor
    assert n["coarse"]["chunks"] == ["a1", "a2", "a3"] and not n["coarse"]["fallback"]
    fill = [i.node_id for i in r.items if i.why.startswith("fills")]
    assert fill[:2] == ["z", "a4"] and n["filled"] == len(fill)
    assert set(r.chunk_ids()) == set(CHUNKS) or r.tokens > 0.9 * 300  # the budget is used (or every chunk)


def test_sparse_layer_whose_only_truss_is_off_topic(hand_graph: Database, neo4j_settings: Settings) -> None:
    """A sparse layer: the only k-truss left is B, far from the query. The paper's literal search
    makes B (QRScore 0.48) the coarse community; the anchored default falls back to the chunks
    nearest the query, and the context holds them."""
    hand_graph.write("MATCH (a:Chunk)-[r:CHUNK_RELATED]-(b:Chunk) WHERE a.id STARTS WITH 'a' DELETE r")
    paper = retriever(hand_graph, neo4j_settings).retrieve("q", use_llm=False)
    assert set(paper.notes["coarse"]["chunks"]) <= {"b1", "b2", "b3", "b4", "b5"}  # off topic
    r = retriever(hand_graph, neo4j_settings, paper=False).retrieve("q", use_llm=False, chunk_k=3)
    assert r.notes["coarse"]["fallback"] is True and "nearest the query" in r.notes["coarse"]["reason"]
    assert r.notes["coarse"]["chunks"] == ["z", "a1", "a2"]
    assert r.chunk_ids()[:3] == ["z", "a1", "a2"]


def test_search_range_is_the_seeds_and_their_neighbours() -> None:
    """The bounded coarse range on a 3,000-chunk random layer: the seeds (nearest chunks) and their
    neighbours, at most ``limit`` (nearest kept), and the truss numbers of the layer induced on them,
    checked against networkx."""
    from graphstrata.retrieval.darag_layers import ChunkLayer

    rng = np.random.default_rng(7)
    n = 3000
    text = rng.normal(size=(n, 8)).astype(np.float32)
    g = nx.gnm_random_graph(n, 30_000, seed=7)
    pairs = np.array(sorted((min(a, b), max(a, b)) for a, b in g.edges()), dtype=np.int64)
    both = np.concatenate([pairs, pairs[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(both[:, 0], minlength=n))])
    layer = ChunkLayer([f"c{i}" for i in range(n)], text, text, np.zeros(n, bool), [None] * n, pairs, ptr, both[:, 1])
    cos = rng.uniform(size=n)
    seeds = np.argsort(-cos)[:20]
    around = set(seeds.tolist()) | {j for i in seeds.tolist() for j in g.neighbors(i)}
    members, truss = layer.search_range(cos, 20, 10_000)
    assert set(members.tolist()) == around
    sub = g.subgraph(around)
    local = {v: i for i, v in enumerate(members.tolist())}
    assert sorted(map(tuple, truss.edges.tolist())) == sorted(
        tuple(sorted((local[a], local[b]))) for a, b in sub.edges()
    )
    members, _ = layer.search_range(cos, 20, 100)
    assert members.size == 100 and set(seeds.tolist()) <= set(members.tolist())
    assert set(members.tolist()) == set(seeds.tolist()) | set(sorted(around, key=lambda i: -cos[i])[:100])
    assert layer.search_range(cos, None, 5)[0].size == n  # None: the whole layer, as the paper
    # bounded in edges too: the longest nearest-first prefix of the range (seeds first) whose induced
    # layer holds at most max_edges edges, found by brute force over the prefixes
    full = sorted(around, key=lambda i: (i not in set(seeds.tolist()), -cos[i], i))
    for max_edges in (50, 400, 3_000):
        members, truss = layer.search_range(cos, 20, 10_000, max_edges)
        size = max(
            p
            for p in range(len(seeds), len(full) + 1)
            if p == len(seeds) or g.subgraph(full[:p]).number_of_edges() <= max_edges
        )
        assert set(members.tolist()) == set(full[:size]), max_edges
        assert len(truss.edges) == g.subgraph(full[:size]).number_of_edges()
        assert len(truss.edges) <= max_edges or size == len(seeds)


def test_empty_graph(graph: Database, neo4j_settings: Settings) -> None:
    from graphstrata.retrieval.darag import warm

    chunks, entities = warm(graph)  # a server starting on an empty graph
    assert chunks.ids == [] and entities.ids == []
    r = retriever(graph, neo4j_settings).retrieve("anything")
    assert r.items == [] and r.notes["coarse"]["candidates"] == 0


# --------------------------------------------------------------------------------------------------
# LLM path (fake OpenAI-compatible server)
# --------------------------------------------------------------------------------------------------

REPORTS = {  # (layer, k) -> (score, report)
    ("similarity", 3): (90, "Similar entities S1, S2 and S3 answer the question directly."),
    ("similarity", 4): (90, "S1 to S4 are similar; S4 adds a little."),
    ("kg", 4): (70, "P1, P2, P3 and P4 are all linked to each other, which " + "matters a great deal " * 10),
    ("kg", 3): (40, "P1-P3 linked."),
}


def scripted_reply(messages: list[dict], failure: str | None) -> str:
    prompt = messages[-1]["content"]
    m = re.search(r"Community \((\w+) [\w ]*layer, k-truss with k=(\d+)", prompt)
    assert m, prompt
    layer = "kg" if m.group(1) == "knowledge" else m.group(1)
    score, report = REPORTS[(layer, int(m.group(2)))]
    assert "Question: which planted community?" in prompt
    return json.dumps({"score": score, "report": report})


def test_llm_scores_reports_and_greedy_budget(
    hand_graph: Database, neo4j_settings: Settings, fake_openai: Any, tmp_path: Path
) -> None:
    fake_openai.chat_reply = scripted_reply
    tokens = {key: count_tokens(rep) for key, (_, rep) in REPORTS.items()}
    assert tokens[("kg", 4)] > tokens[("kg", 3)]
    # C_b fits both similarity reports and the short KG k=3 one, not the long KG k=4 one: the greedy
    # takes 90, 90, skips 70 (does not fit), takes 40.
    cb = tokens[("similarity", 3)] + tokens[("similarity", 4)] + tokens[("kg", 3)]
    darag = retriever(hand_graph, fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache"))
    r = darag.retrieve("which planted community?", report_budget=cb)
    n = r.notes
    assert n["ranking"] == "llm" and n["llm"]["calls"] == 4 and n["llm"]["failures"] == []
    assert fake_openai.calls_by_path["/v1/chat/completions"] == 4
    comm = [i for i in r.items if i.label == "EACSCommunity"]
    by_id = {c["id"]: c for c in n["communities"] if c["layer"] != "chunk"}
    assert [(by_id[i.node_id]["layer"], by_id[i.node_id]["k"]) for i in comm] == [
        ("similarity", 3),  # 90, higher QRScore of the tie
        ("similarity", 4),
        ("kg", 3),
    ]
    assert [i.text for i in comm] == [
        REPORTS[("similarity", 3)][1],
        REPORTS[("similarity", 4)][1],
        REPORTS[("kg", 3)][1],
    ]
    assert [i.score for i in comm] == [90, 90, 40]
    assert sum(i.tokens for i in comm) <= cb
    kg4 = next(c for c in by_id.values() if c["layer"] == "kg" and c["k"] == 4)
    assert kg4["llm_score"] == 70 and kg4["selected"] is False
    assert r.tokens <= r.budget and [i.node_id for i in r.items if i.label == "Chunk"] == ["a1", "a2", "a3"]
    # a second run is served from the LLM cache
    fake_openai.reset()
    again = darag.retrieve("which planted community?", report_budget=cb)
    assert fake_openai.calls == 0 and again.notes["llm"]["cache_hits"] == 4
    assert [i.node_id for i in again.items] == [i.node_id for i in r.items]
    # with the model's reports and no C_b given: Table 4's 3200 of 4800
    assert darag.retrieve("which planted community?").notes["report_budget"] == 3200
    # use_llm=False on an LLM-configured graph: QRScore ranks, no calls
    fake_openai.reset()
    r = darag.retrieve("which planted community?", use_llm=False)
    assert r.notes["ranking"] == "qrscore" and fake_openai.calls == 0


def test_llm_failures_fall_back_to_qrscore(
    hand_graph: Database, neo4j_settings: Settings, fake_openai: Any, tmp_path: Path
) -> None:
    # the fake's default chat reply is prose, never the JSON asked for: every assessment fails
    darag = retriever(hand_graph, fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache"))
    r = darag.retrieve("which planted community?")
    n = r.notes
    assert n["ranking"] == "qrscore" and len(n["llm"]["failures"]) == 4
    comm = [i for i in r.items if i.label == "EACSCommunity"]
    assert len(comm) == 4 and "Entity P1" in comm[0].text  # extractive renderings, QRScore order
    assert [i.score for i in comm] == sorted((i.score for i in comm), reverse=True)


# --------------------------------------------------------------------------------------------------
# pure functions
# --------------------------------------------------------------------------------------------------


def test_greedy_pack() -> None:
    assert greedy_pack([9, 8, 7, 6], [5, 6, 2, 1], 8) == [0, 2, 3]  # 8 does not fit after 9: skipped
    assert greedy_pack([5, 0, 3], [1, 1, 1], 10) == [0, 2]  # a zero score adds nothing
    assert greedy_pack([], [], 10) == []


@pytest.mark.parametrize("seed", range(24))
def test_eacs_on_random_graphs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = nx.gnp_random_graph(int(rng.integers(12, 40)), float(rng.uniform(0.15, 0.5)), seed=seed)
    if seed >= 12:  # many components: eacs skips those that cannot win, q_peel peels them all
        parts = [nx.gnp_random_graph(int(rng.integers(5, 15)), 0.6, seed=seed + i) for i in range(8)]
        g = nx.disjoint_union_all([g, *parts])
    edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    emb = rng.normal(size=(g.number_of_nodes(), 8))
    q = rng.normal(size=8)
    found, top = eacs(edges, emb, q, range(3, 9))
    assert top == max((k for k in range(2, 40) if nx.k_truss(g, k).number_of_edges()), default=0)
    assert [c.k for c in found] == list(range(3, min(top, 8) + 1))
    for c in found:  # one truss decomposition for all k gives what Algorithm 1 gives per k
        ref = q_peel(edges, emb, q, c.k)
        assert ref is not None and ref.nodes.tolist() == c.nodes.tolist() and ref.qrscore == c.qrscore
    for c in found:
        assert is_connected_k_truss(c.edges, c.k)
        assert c.density >= density_bound(c.nodes.size, c.k) - 1e-12
        assert c.diameter <= diameter_bound(c.nodes.size, c.k)
        # Q-Peel never does worse than the component of the maximal k-truss it started from
        truss = nx.k_truss(g, c.k)
        comp = next(cc for cc in nx.connected_components(truss) if int(c.nodes[0]) in cc)
        sims = emb @ q / (np.linalg.norm(emb, axis=1) * np.linalg.norm(q))
        assert c.qrscore >= np.mean([sims[v] for v in comp]) - 1e-12
        assert pairwise_similarity(emb[c.nodes]) <= 1.0


def test_pairwise_similarity_is_the_mean_cosine_over_pairs() -> None:
    """Appendix B.3's average pairwise similarity against the pairs counted one by one (a zero
    vector has cosine 0 with everything)."""
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(23, 16)) + 0.3
    emb[7] = 0.0
    pairs = [
        float(emb[i] @ emb[j] / (np.linalg.norm(emb[i]) * np.linalg.norm(emb[j])))
        if np.linalg.norm(emb[i]) and np.linalg.norm(emb[j])
        else 0.0
        for i, j in itertools.combinations(range(len(emb)), 2)
    ]
    assert pairwise_similarity(emb) == pytest.approx(np.mean(pairs), abs=1e-12)
    assert pairwise_similarity(emb[:1]) == 0.0


# --------------------------------------------------------------------------------------------------
# a real corpus (spaCy extraction): every community is a connected k-truss within the bounds
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(db: Database, neo4j_settings: Settings):
    from graphstrata.client import GraphStrata
    from graphstrata.ingest.pipeline import IngestOptions
    from tests.conftest import wipe

    wipe(db)
    gs = GraphStrata(neo4j_settings, db=db)
    gs.ingest(["samples/corpus"], IngestOptions(extractor="spacy"))
    gs.ingest_texts(EXTRA, IngestOptions(extractor="spacy"))  # more chunks than the old 50-chunk range
    gs.augment(["entity_similarity", "darag_chunk_edges"])
    return gs


EXTRA = [
    (f"{river} (river)", f"The {river} flows through {a} and {b}. {a} and {b} trade along the {river}.")
    for river, a, b in [
        ("Danube", "Vienna", "Budapest"),
        ("Rhine", "Basel", "Cologne"),
        ("Elbe", "Dresden", "Hamburg"),
        ("Oder", "Wroclaw", "Szczecin"),
        ("Vistula", "Krakow", "Warsaw"),
        ("Moselle", "Metz", "Koblenz"),
        ("Main", "Frankfurt", "Wurzburg"),
        ("Neckar", "Stuttgart", "Heidelberg"),
    ]
]


QUESTIONS = [
    "Who directed the film that was shot in or around Leland, North Carolina in 1986?",
    "Who wrote The Hukilau Song?",
    "Which league did Debbie Black play in?",
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_real_corpus_communities_are_valid(corpus: Any, question: str) -> None:
    r = corpus.retrieve(question, "darag", chunk_k=10, budget=2000)
    n = r.notes
    assert n["coarse"]["candidates"] > 0 and r.items and r.tokens <= 2000
    assert n["communities"], n["coarse"]
    for c in n["communities"]:
        assert_valid_community(c)
    hc = set(n["coarse"]["chunks"])
    for item in r.items:
        if not item.why.startswith("fills"):
            assert set(item.chunk_ids) <= hc  # every context item but the filling maps back to chunks of H_C
    if not n["coarse"]["fallback"]:
        assert any(c["layer"] == "chunk" and c["selected"] and set(c["nodes"]) == hc for c in n["communities"])


def test_coarse_eacs_searches_the_whole_chunk_layer(corpus: Any) -> None:
    """§4: the chunk community H_C is the best Q-Peel community of all of L_C — checked against
    networkx's k-truss and a literal reading of Algorithm 1 on the layer read with plain Cypher."""
    from tests.test_ktruss import literal_q_peel

    rows = corpus.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.embedding AS e ORDER BY c.id")
    ids = [r["id"] for r in rows]
    emb = np.array([r["e"] for r in rows])
    pos = {c: i for i, c in enumerate(ids)}
    layer = nx.Graph(
        (pos[r["a"]], pos[r["b"]])
        for r in corpus.db.read("MATCH (a:Chunk)-[:CHUNK_RELATED]->(b:Chunk) RETURN a.id AS a, b.id AS b")
    )
    assert len(ids) > 50  # more than the old 50-chunk search range
    for question in QUESTIONS:
        r = corpus.retrieve(question, "darag", chunk_attribute="text", budget=2000, **PAPER)
        coarse = r.notes["coarse"]
        assert coarse["candidates"] == len(ids)
        q = np.asarray(corpus.embedder.embed([question])[0], dtype=np.float64)
        best: tuple[float, int, list[int]] | None = None
        for k in range(3, 7):
            truss = nx.k_truss(layer, k)
            for comp in nx.connected_components(truss):
                nodes = literal_q_peel(nx.Graph(truss.subgraph(comp)), emb, q, k)
                score = float(np.mean(emb[nodes] @ q / (np.linalg.norm(emb[nodes], axis=1) * np.linalg.norm(q))))
                if best is None or (score, k) > best[:2]:
                    best = (score, k, nodes)
        assert best is not None, "the sample layer has a 3-truss"
        assert not coarse["fallback"] and coarse["k"] == best[1]
        assert sorted(coarse["chunks"]) == sorted(ids[i] for i in best[2])


def test_warm_reads_the_layers_the_first_question_uses(corpus: Any) -> None:
    """What the server does at start: after ``warm`` the first question reads no layer."""
    from graphstrata import walkgraph
    from graphstrata.retrieval.darag import warm

    walkgraph._CACHE.pop(corpus.db, None)
    assert corpus.retrieve(QUESTIONS[0], "darag").notes["coarse"]["layer_cached"] is False
    walkgraph._CACHE.pop(corpus.db, None)
    chunks, entities = warm(corpus.db)
    assert len(chunks.ids) > 50 and len(entities.ids) > 50
    assert corpus.retrieve(QUESTIONS[0], "darag").notes["coarse"]["layer_cached"] is True


def test_questions_at_once_get_what_each_gets_alone(corpus: Any) -> None:
    """Questions answered side by side share the layers read once per graph version and the peel
    starts kept on them (the compiled peel runs without the GIL): each gets its result alone."""
    from concurrent.futures import ThreadPoolExecutor

    from graphstrata import walkgraph

    def ask(question: str) -> list[tuple[str, float]]:
        return [(i.node_id, i.score) for i in corpus.retrieve(question, "darag", budget=2000).items]

    alone = {q: ask(q) for q in QUESTIONS}
    assert all(alone.values())
    walkgraph._CACHE.pop(corpus.db, None)  # the layers are read, and the peel starts built, under load
    questions = QUESTIONS * 4
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(ask, questions))
    assert together == [alone[q] for q in questions]


# §4 working subgraph, read straight from the store: the entities the chunks mention, with those chunks
# and embeddings; the RELATED edges among them; each entity's k most similar entities (SIMILAR read from
# both ends, by descending score then id)
REFERENCE_WORKING = """
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE c.id IN $chunks
WITH e, collect(c.id) AS chunks
WITH collect({e: e, chunks: chunks}) AS rows
UNWIND rows AS r
WITH r.e AS e, r.chunks AS chunks, [x IN rows | x.e.id] AS ids
RETURN e.id AS id, e.embedding AS embedding, chunks,
       COLLECT { MATCH (e)-[x:RELATED]->(f:Entity) WHERE f.id IN ids RETURN [f.id, x.predicate] } AS related,
       COLLECT { MATCH (e)-[s:SIMILAR {kind: 'semantic'}]-(f:Entity)
                 WITH f, s ORDER BY s.score DESC, f.id LIMIT $k RETURN f.id } AS similar
"""


@pytest.mark.parametrize("k_neighbor", [1, 2, 5])
def test_working_subgraph_is_the_one_cypher_reads(corpus: Any, k_neighbor: int) -> None:
    """The working subgraph cut from the in-memory entity layer equals the one plain Cypher reads."""
    from graphstrata.retrieval.darag_layers import load_entity_layer
    from graphstrata.walkgraph import graph_version

    layer, _ = load_entity_layer(corpus.db, graph_version(corpus.db))
    all_chunks = [r["id"] for r in corpus.db.read("MATCH (c:Chunk) RETURN c.id AS id ORDER BY id")]
    some = all_chunks[::3]
    for chunks in (some, all_chunks[:7], ["no such chunk"]):
        w = layer.working(chunks, k_neighbor, ["kg", "similarity"], DIM)
        ref = {r["id"]: r for r in corpus.db.read(REFERENCE_WORKING, chunks=chunks, k=k_neighbor)}
        assert sorted(w.ids) == sorted(ref) and (len(ref) > 20 or chunks == ["no such chunk"])
        assert {e: sorted(w.chunks_of(e)) for e in w.ids} == {e: sorted(r["chunks"]) for e, r in ref.items()}
        kg, sim = w.graphs["kg"], w.graphs["similarity"]
        assert np.array_equal(kg.emb, np.array([ref[e]["embedding"] for e in kg.ids]).reshape(-1, DIM))
        pair = lambda a, b: frozenset((a, b))  # noqa: E731
        assert {pair(kg.ids[a], kg.ids[b]) for a, b in kg.edges.tolist()} == {
            pair(e, f) for e, r in ref.items() for f, _ in r["related"]
        }
        assert sorted((a, b, p) for (a, b), rels in w.relations.items() for p, _ in rels) == sorted(
            (e, f, p or "related to") for e, r in ref.items() for f, p in r["related"]
        )
        expected_sim = {pair(e, f) for e, r in ref.items() for f in r["similar"] if f in ref and f != e}
        got_sim = [pair(sim.ids[a], sim.ids[b]) for a, b in sim.edges.tolist()]
        assert len(got_sim) == len(set(got_sim)) and set(got_sim) == expected_sim
        if chunks is some:
            assert expected_sim and kg.edges.size


def test_chunk_attribute_is_the_embedding_of_title_and_description(
    graph: Database, neo4j_settings: Settings, fake_openai: Any, tmp_path: Path
) -> None:
    """§4.1: a chunk's attribute in L_C embeds the title + description the model wrote for it at
    extraction (the real client against the fake OpenAI-compatible server); the stage re-embeds only
    what changed; a chunk with no model's description (spaCy's extractive one, none at all) keeps
    none, and its text's vector serves."""
    from graphstrata.augment.darag import attribute_text
    from graphstrata.client import GraphStrata
    from graphstrata.ingest.pipeline import IngestOptions

    gs = GraphStrata(fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache"), db=graph)
    docs = [
        ("Curie", "Marie Curie discovered polonium in Paris. She won two Nobel Prizes."),
        ("Danube", "The Danube flows through Vienna and Budapest into the Black Sea."),
    ]
    gs.ingest_texts(docs, IngestOptions(extractor="llm"))
    gs.ingest_texts([("Rhine", "The Rhine flows through Basel and Cologne.")], IngestOptions(extractor="spacy"))
    gs.ingest_texts([("Bare", "A text written with no extraction at all.")], IngestOptions(extractor="none"))
    (report,) = gs.augment(["darag_chunk_attributes"])
    rows = gs.db.read(
        "MATCH (c:Chunk) RETURN c.doc_title AS doc, c.title AS title, c.description AS description, "
        "c.extractor AS extractor, c.attribute_embedding AS attribute ORDER BY doc"
    )
    described = [r for r in rows if r["doc"] in ("Curie", "Danube")]
    assert all(r["title"] and r["description"] and r["extractor"] == "llm" for r in described)
    # independent reference: embed "title\ndescription" ourselves (float32 at any precision: a passage's)
    expected = gs.embedder.embed([f"{r['title'].strip()}\n{r['description'].strip()}" for r in described])
    got = np.asarray([r["attribute"] for r in described])
    assert np.allclose(got, expected, atol=1e-6)
    assert attribute_text(None, " ", "llm") is None
    rhine = next(r for r in rows if r["doc"] == "Rhine")
    assert rhine["title"] and rhine["extractor"] == "spacy" and rhine["attribute"] is None
    assert next(r for r in rows if r["doc"] == "Bare")["attribute"] is None
    assert report.counts == {"chunks": 4, "with_attribute": 2, "embedded": 2, "cleared": 0}
    (again,) = gs.augment(["darag_chunk_attributes"])
    assert again.counts["embedded"] == 0  # nothing changed
    # the retriever's coarse EACS uses them (or the text's vectors when asked)
    question = "Where did Marie Curie discover polonium?"
    assert gs.retrieve(question, "darag", use_llm=False).notes["coarse"]["described"] == 2
    assert gs.retrieve(question, "darag", use_llm=False, chunk_attribute="text").notes["coarse"]["described"] == 0
    # a chunk that lost its description loses its attribute
    gs.db.write("MATCH (c:Chunk {doc_title: 'Danube'}) REMOVE c.title, c.description")
    (cleared,) = gs.augment(["darag_chunk_attributes"])
    assert cleared.counts["cleared"] == 1
