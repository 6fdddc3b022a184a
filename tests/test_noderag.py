"""NodeRAG retrieval: PPR against a numpy power iteration, and dual search + PPR on a small corpus."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.noderag import GRAPH, RETRIEVABLE, WALKED, feedback_entities, warm
from graphstrata.walkgraph import walk_graph

LABEL = {"e": "Entity", "u": "SemanticUnit", "r": "Relation", "t": "Chunk", "a": "Attribute", "h": "HighLevel"}
EDGES = [
    ("u0", "e0", "MENTIONS"),
    ("u0", "e1", "MENTIONS"),
    ("u1", "e1", "MENTIONS"),
    ("u1", "e2", "MENTIONS"),
    ("u2", "e3", "MENTIONS"),
    ("u3", "e4", "MENTIONS"),
    ("u3", "e5", "MENTIONS"),
    ("e0", "r0", "SUBJECT_OF"),
    ("r0", "e3", "OBJECT"),
    ("t0", "u0", "HAS_UNIT"),
    ("t0", "u1", "HAS_UNIT"),
    ("e1", "a0", "HAS_ATTRIBUTE"),
    ("h0", "u2", "GROUPS"),
    ("t0", "e5", "MENTIONS"),
]  # the last: a chunk mention, not in G


@pytest.mark.parametrize(("alpha", "t", "sources"), [(0.5, 2, ["e1", "u2"]), (0.5, 1, ["e0"]), (0.3, 4, ["t0", "h0"])])
def test_ppr_equals_numpy_power_iteration(empty_db: Database, alpha: float, t: int, sources: list[str]) -> None:
    db = empty_db
    nodes = sorted({x for e in EDGES for x in e[:2]})
    for n in nodes:
        db.write(f"CREATE (:{LABEL[n[0]]} {{id: $id}})", id=n)
    for a, b, typ in EDGES:
        db.write(f"MATCH (a {{id: $a}}), (b {{id: $b}}) CREATE (a)-[:{typ}]->(b)", a=a, b=b)
    db.write(query("meta.touch"))
    graph = warm(db)
    pi = graph.ppr({x: 1.0 for x in sources}, 1 - alpha, t + 1, WALKED, from_seeds=True)
    ours = {i: s for i, _, s in graph.top(pi, 100)}
    # reference: the heterograph's undirected edges (the chunk->entity mention is not one), numpy iteration
    g = nx.MultiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from((a, b) for a, b, typ in EDGES if not (a.startswith("t") and typ == "MENTIONS"))
    adj = nx.to_numpy_array(g, nodelist=nodes)
    deg = adj.sum(1, keepdims=True)
    trans = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    p = np.array([1.0 if n in sources else 0.0 for n in nodes]) / len(sources)
    pi = p  # the paper's pi(0) = p (NodeRAG §2.5)
    for _ in range(t):
        pi = alpha * p + (1 - alpha) * trans.T @ pi
    np.testing.assert_allclose([ours.get(n, 0.0) for n in nodes], pi, atol=1e-12)
    # shallow: nothing beyond t hops of a source gets any score
    far = {
        n for n in nodes if min(nx.shortest_path_length(g, s, n) if nx.has_path(g, s, n) else 99 for s in sources) > t
    }
    assert not far & set(ours)


def test_augment_leaves_the_graph_read(corpus: GraphStrata) -> None:
    """No cold start: the first noderag question after augment walks the graph augment read."""
    assert walk_graph(corpus.db, GRAPH)[1] is True
    r = corpus.retrieve("Who wrote The Hukilau Song?", "noderag")
    assert r.notes["graph_reused"] is True


def test_noderag_finds_the_bridge_passage(corpus: GraphStrata) -> None:
    r = corpus.retrieve("Who directed the film that was shot in or around Leland, North Carolina in 1986?", "noderag")
    assert {"Leland", "North Carolina"} <= set(r.notes["entities"])
    linked = [n for n in r.notes["linked"] if n.endswith("(exact)")]
    assert {"Leland -> Leland (exact)", "North Carolina -> North Carolina (exact)"} <= set(linked)
    assert all(i.label in RETRIEVABLE for i in r.items)
    titles = {
        c["t"] for c in corpus.db.read("MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.doc_title AS t", ids=r.chunk_ids())
    }
    assert {"Leland, North Carolina", "Maximum Overdrive"} <= titles  # both hops of the question
    assert any("Stephen King" in i.text for i in r.items)  # the answer is in the retrieved context
    scores = [i.score for i in r.items]
    assert scores == sorted(scores, reverse=True) and r.tokens <= r.budget


def test_dual_search_similarity_is_one_top_k_over_all_rich_nodes(corpus: GraphStrata) -> None:
    """The similarity entry points are the k nearest of S, A, H and T together (brute force on
    the stored embeddings), not k of each type."""
    question = "Which American rock band recorded an album in North Carolina?"
    k = 7
    r = corpus.retrieve(question, "noderag", entry_k=k)
    rows = corpus.db.read(
        "MATCH (n) WHERE (n:SemanticUnit OR n:Attribute OR n:HighLevel OR n:Chunk) AND n.embedding IS NOT NULL "
        "RETURN n.id AS id, n.embedding AS v"
    )
    q = corpus.embedder.embed([question])[0]
    m = np.array([row["v"] for row in rows], dtype=np.float64)
    cos = m @ q / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
    expected = [rows[i]["id"] for i in np.argsort(-cos)[:k]]
    assert set(r.notes["similar"]) == set(expected)
    assert r.notes["similar"] == expected  # best first, k in all (not k of each type)


def test_noderag_parameters_and_empty_entry(corpus: GraphStrata) -> None:
    r1 = corpus.retrieve("Who wrote The Hukilau Song?", "noderag", iterations=1, cross_k=0, entry_k=3)
    assert r1.params["iterations"] == 1 and r1.items
    assert all("entry point" in i.why for i in r1.items)  # cross_k = 0: entry points only
    capped = corpus.retrieve("Who wrote The Hukilau Song?", "noderag", top_k=2)
    full = corpus.retrieve("Who wrote The Hukilau Song?", "noderag")
    assert len(full.items) > 2 and [i.node_id for i in capped.items] == [i.node_id for i in full.items[:2]]
    with pytest.raises(Exception, match="alpha"):
        corpus.retrieve("x", "noderag", alpha=1.5)


def test_items_keep_model_written_units_and_fold_copies_into_their_passage(empty_db: Database) -> None:
    """A semantic unit a model wrote stands as an item with its passage as source; a unit that is a
    sentence of its passage (no-LLM) is read in the passage, which takes its PPR mass."""
    from graphstrata.retrieval.base import fill_chunk_texts
    from graphstrata.retrieval.noderag import NodeRAGRetriever

    db = empty_db
    db.write(
        "CREATE (c:Chunk {id: 'c1', text: 'Leland is a town. It hosted a film.', doc_title: 'Leland'}),"
        " (c)-[:HAS_UNIT]->(:SemanticUnit {id: 's-llm', text: 'Leland hosted a shoot.', extractor: 'llm'}),"
        " (c)-[:HAS_UNIT]->(:SemanticUnit {id: 's-copy', text: 'Leland is a town.', extractor: 'spacy'}),"
        " (:Chunk {id: 'c2', text: 'Another passage.', doc_title: 'Other'})"
    )
    db.write(query("meta.touch"))
    graph = warm(db)
    assert graph.own_text[graph.index["s-llm"]] and not graph.own_text[graph.index["s-copy"]]
    retriever = NodeRAGRetriever(db, embedder=None)  # type: ignore[arg-type]
    score = {"s-llm": 0.3, "s-copy": 0.2, "c2": 0.25}
    items = retriever._items(graph, ["s-llm", "s-copy", "c2"], score, {"s-llm": 0.9}, {"s-copy", "c2"})
    assert [i.text for i in items if i.label == "Chunk"] == ["", ""]  # read after, for all items at once
    fill_chunk_texts(db, items)
    by_id = {i.node_id: i for i in items}
    assert set(by_id) == {"s-llm", "c1", "c2"}
    assert by_id["s-llm"].text == "Leland hosted a shoot." and by_id["s-llm"].chunk_ids == ["c1"]
    assert by_id["c1"].text == "Leland\nLeland is a town. It hosted a film." and by_id["c1"].score == 0.2
    assert [i.node_id for i in items] == ["s-llm", "c2", "c1"]  # by score


def test_feedback_entities_are_those_of_the_entry_points_passage(empty_db: Database) -> None:
    db = empty_db
    db.write(
        "CREATE (c1:Chunk {id: 'c1', text: 'x'}), (c2:Chunk {id: 'c2', text: 'y'}),"
        " (c1)-[:HAS_UNIT]->(:SemanticUnit {id: 's1', text: 'x'}),"
        " (a:Entity {id: 'a', name: 'A'}), (b:Entity {id: 'b', name: 'B'}), (z:Entity {id: 'z', name: 'Z'}),"
        " (c1)-[:MENTIONS]->(a), (c1)-[:MENTIONS]->(b), (c2)-[:MENTIONS]->(b), (c2)-[:MENTIONS]->(z)"
    )
    db.write(query("meta.touch"))
    graph = warm(db)
    # a sentence of c1 leads to c1's entities; B is in two passages, so half as specific
    assert feedback_entities(graph, "s1") == {"a": 1.0, "b": 0.5}
    assert feedback_entities(graph, "c2") == {"b": 0.5, "z": 1.0}
    assert feedback_entities(graph, "not-yet-walked") == {}
    # chunk mentions are read, never walked: from c1 the walk reaches no entity but through s1
    pi = graph.ppr({"c1": 1.0}, 0.5, 3, WALKED, from_seeds=True)
    assert pi[graph.index["a"]] == 0 and pi[graph.index["s1"]] > 0
