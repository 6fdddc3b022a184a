"""HippoRAG 2 retrieval: the walk on the graph it loads against a numpy power iteration on a hand
graph, its seed weights against the paper's formula worked by hand, and the bridge passage of a two-hop question."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.hipporag import GRAPH, WITHOUT_RELATIONS, seed_weights, warm
from graphstrata.retrieval.linking import LinkedEntity
from graphstrata.walkgraph import walk_graph

# passages p*, entities e*
EDGES = [
    ("p0", "e0", "MENTIONS"),
    ("p0", "e1", "MENTIONS"),
    ("p1", "e1", "MENTIONS"),
    ("p1", "e2", "MENTIONS"),
    ("p2", "e3", "MENTIONS"),
    ("p3", "e3", "MENTIONS"),
    ("p3", "e4", "MENTIONS"),
    ("e2", "e3", "RELATED"),  # asserted by 3 chunks: weight 3
    ("e4", "e5", "SYNONYM"),  # similarity 0.4 (HippoRAG 2 weighs a synonym edge by it)
    ("p4", "e5", "MENTIONS"),
]


#: the edges' weights in the store: a relation's count of asserting chunks, a synonym's similarity
WEIGHTS = {"RELATED": 3.0, "SYNONYM": 0.4, "MENTIONS": 1.0}


def _reference(nodes: list[str], edges: list[tuple[str, str, str]], seeds: dict[str, float], d: float, it: int):
    """The recurrence pi(0) = (1-d) s, then pi = (1-d) s + d P^T pi (`it` counts pi(0)) on the
    undirected graph of `edges`, each weighted by WEIGHTS of its type, by dense numpy."""
    ix = {n: i for i, n in enumerate(nodes)}
    adj = np.zeros((len(nodes), len(nodes)))
    for a, b, typ in edges:
        adj[ix[a], ix[b]] += WEIGHTS[typ]
        adj[ix[b], ix[a]] += WEIGHTS[typ]
    deg = adj.sum(1, keepdims=True)
    trans = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    s = np.array([seeds.get(n, 0.0) for n in nodes])
    pi = (1 - d) * s
    for _ in range(it - 1):
        pi = (1 - d) * s + d * trans.T @ pi
    return {n: pi[ix[n]] for n in nodes}


@pytest.mark.parametrize("relations", [False, True])
def test_walk_on_the_loaded_graph_equals_numpy_power_iteration(empty_db: Database, relations: bool) -> None:
    """The graph read from the store is the §3.1 graph (passage-entity, relation and synonym edges,
    undirected), and the walk over it follows the recurrence, node by node."""
    db = empty_db
    nodes = sorted({x for e in EDGES for x in e[:2]})
    for n in nodes:
        label = "Chunk" if n.startswith("p") else "Entity"
        db.write(f"CREATE (:{label} {{id: $id, text: $id, doc_title: 'T ' + $id}})", id=n)
    for a, b, typ in EDGES:
        db.write(
            f"MATCH (a {{id: $a}}), (b {{id: $b}}) CREATE (a)-[r:{typ}]->(b) "
            "SET r.weight = CASE $t WHEN 'RELATED' THEN $w END, r.score = CASE $t WHEN 'SYNONYM' THEN $w END",
            a=a,
            b=b,
            t=typ,
            w=WEIGHTS[typ],
        )
    db.write(query("meta.touch"))
    graph = warm(db)
    assert sorted(graph.ids) == nodes
    assert {i for i, label in zip(graph.ids, graph.labels, strict=True) if label == "Chunk"} == {
        n for n in nodes if n.startswith("p")
    }
    seeds = {"p0": 0.05, "p2": 0.02, "e0": 0.7, "e4": 0.3}
    types = {True: None, False: WITHOUT_RELATIONS}
    ours = graph.ppr(seeds, 0.5, 6, types[relations])
    walked = [e for e in EDGES if relations or e[2] != "RELATED"]
    total = sum(seeds.values())
    ref = _reference(nodes, walked, {k: v / total for k, v in seeds.items()}, 0.5, 6)
    np.testing.assert_allclose([ours[graph.index[n]] for n in nodes], [ref[n] for n in nodes], atol=1e-12)
    # the relation edge e2-e3 joins p1's side to p2's: the two walks differ there
    p1 = graph.index["p1"]
    assert ours[p1] != pytest.approx(graph.ppr(seeds, 0.5, 6, types[not relations])[p1])
    # the passages, best first, as the retriever takes them
    top = graph.top(ours, 3, ("Chunk",))
    assert [i for i, _, _ in top] == sorted((n for n in nodes if n.startswith("p")), key=lambda n: -ref[n])[:3]


def test_the_graph_is_reloaded_when_the_store_changes(empty_db: Database) -> None:
    db = empty_db
    db.write("CREATE (:Chunk {id: 'p0', text: 'a'})-[:MENTIONS]->(:Entity {id: 'e0', name: 'A'})")
    db.write(query("meta.touch"))
    first = warm(db)
    assert walk_graph(db, GRAPH) == (first, True)  # unchanged store: the loaded graph is reused
    db.write("MATCH (e:Entity {id: 'e0'}) CREATE (:Chunk {id: 'p1', text: 'b'})-[:MENTIONS]->(e)")
    db.write(query("meta.touch"))
    second, reused = walk_graph(db, GRAPH)
    assert not reused and "p1" in second.index and second.transition(WITHOUT_RELATIONS).nnz == 4


def test_seed_weights_follow_the_paper_worked_by_hand() -> None:
    linked = [
        LinkedEntity(id="a", name="A", query_name="A", via="exact", score=1.0, chunks=4),  # specificity 1/4
        LinkedEntity(id="b", name="B", query_name="B", via="words", score=0.5, chunks=1),  # 0.5 x 1
    ]
    feedback = [{"id": "c", "name": "C", "chunks": 2}, {"id": "a", "name": "A", "chunks": 4}]
    passages = {"p": 0.9, "q": 0.7, "r": 0.5}
    chunks, entities = seed_weights(passages, linked, feedback, passage_weight=0.05, feedback_weight=1.0)
    # linked mass 0.25 + 0.5 = 0.75; feedback 1/2 and 1/4 scaled to 0.75 in total: c 0.5, a +0.25
    assert entities == pytest.approx({"a": 0.5 / 1.5, "b": 0.5 / 1.5, "c": 0.5 / 1.5})
    assert chunks == pytest.approx({"p": 0.05, "q": 0.025})  # min-max: r scores 0 and seeds nothing
    # nothing linked: the nearest passage's entities carry all the entity mass
    _, only_fb = seed_weights(passages, [], feedback, 0.05, 1.0)
    assert only_fb == pytest.approx({"c": 2 / 3, "a": 1 / 3})
    _, no_fb = seed_weights(passages, linked, feedback, 0.05, 0.0)
    assert no_fb == pytest.approx({"a": 1 / 3, "b": 2 / 3})


def _titles(gs: GraphStrata, ids: list[str]) -> list[str]:
    rows = gs.db.read("UNWIND $ids AS id MATCH (c:Chunk {id: id}) RETURN c.doc_title AS t", ids=ids)
    return list(dict.fromkeys(r["t"] for r in rows))


def test_hipporag_reaches_the_second_hop(corpus: GraphStrata) -> None:
    """The film shot in Leland is named only in Leland's passage; its own passage (the director's
    name) shares no name with the question: the walk through the entity finds it."""
    q = "Who directed the film that was shot in or around Leland, North Carolina in 1986?"
    r = corpus.retrieve(q, "hipporag", top_k=5)
    assert r.notes["graph_reused"] is True  # augment loaded it
    assert "Maximum Overdrive" in r.notes["feedback"]  # an entity of the nearest passage
    assert {"Leland, North Carolina", "Maximum Overdrive"} <= set(_titles(corpus, r.chunk_ids()))
    assert any("Stephen King" in i.text for i in r.items)
    scores = [i.score for i in r.items]
    assert scores == sorted(scores, reverse=True) and r.tokens <= r.budget
    # dense retrieval alone ranks it lower (or not at all): no word of the question is in it
    dense = _titles(corpus, corpus.retrieve(q, "vector", top_k=10).chunk_ids())
    walked = _titles(corpus, r.chunk_ids())
    film = "Maximum Overdrive"
    assert walked.index(film) < [*dense, film].index(film), (walked, dense)


def test_hipporag_parameters(corpus: GraphStrata) -> None:
    r = corpus.retrieve("Who wrote The Hukilau Song?", "hipporag", top_k=3)
    assert 0 < len(r.items) <= 3 and all(i.label == "Chunk" for i in r.items)
    with pytest.raises(Exception, match="damping"):
        corpus.retrieve("x", "hipporag", damping=1.5)


def test_fused_ppr_methods_parse_the_question_once(corpus: GraphStrata, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fusion computes the question's entities once, beside its embedding; hipporag and noderag reuse them."""
    from graphstrata.retrieval import linking

    parsed: list[str] = []
    real = linking.query_doc
    monkeypatch.setattr(linking, "query_doc", lambda q: parsed.append(q) or real(q))
    linking.clear_cache()
    question = "Which film was shot in the town where David Leland was born?"
    fused = corpus.retrieve(question, "fusion", methods=["hipporag", "noderag"])
    assert parsed == [question]
    assert set(fused.notes["methods"]) == {"hipporag", "noderag"} and not fused.notes.get("errors")


def test_fact_scores_weight_their_entities_by_hand() -> None:
    # query-to-triple seeds: an entity's weight is its fact's score x specificity (1/|P_i|)
    facts = [{"id": "c", "name": "C", "chunks": 2, "score": 0.8}, {"id": "d", "name": "D", "chunks": 1, "score": 0.6}]
    _, entities = seed_weights({}, [], facts, 0.05, 1.0)
    # 0.8/2 = 0.4 and 0.6/1 = 0.6, normalised to sum 1
    assert entities == pytest.approx({"c": 0.4, "d": 0.6})


def test_facts_nearest_the_question_seed_their_entities(corpus: GraphStrata) -> None:
    """A graph with fact vectors (an LLM's or the user's triples) seeds the walk from the facts
    nearest the question, not from the nearest passage (HippoRAG 2's query-to-triple step)."""
    rows = corpus.db.read(
        "MATCH (e:Entity) WHERE e.name IN ['Stephen King', 'Maximum Overdrive'] RETURN e.id AS id, e.name AS name"
    )
    assert {r["name"] for r in rows} == {"Stephen King", "Maximum Overdrive"}
    ids = {r["name"]: r["id"] for r in rows}
    fact = "Stephen King directed Maximum Overdrive"
    v = corpus.embedder.embed([fact])[0].tolist()
    corpus.db.write(
        "MATCH (s:Entity {id: $s}), (o:Entity {id: $o}) "
        "CREATE (s)-[:SUBJECT_OF]->(r:Relation {id: 'test-fact', text: $t})-[:OBJECT]->(o) "
        "WITH r CALL db.create.setNodeVectorProperty(r, 'embedding', $v)",
        s=ids["Stephen King"],
        o=ids["Maximum Overdrive"],
        t=fact,
        v=v,
    )
    try:
        corpus.db.write("CALL db.awaitIndexes(60)")
        r = corpus.retrieve("Who directed Maximum Overdrive?", "hipporag", top_k=5)
        assert r.notes["feedback_from"] == "facts"
        assert set(r.notes["feedback"]) == {"Stephen King", "Maximum Overdrive"}
        off = corpus.retrieve("Who directed Maximum Overdrive?", "hipporag", top_k=5, fact_k=0)
        assert off.notes["feedback_from"] == "nearest passage"
    finally:
        corpus.db.write("MATCH (r:Relation {id: 'test-fact'}) DETACH DELETE r")
