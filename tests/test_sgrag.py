"""SG-RAG retrieval on a real Neo4j: a hand-made knowledge graph with planted multi-constraint answers.

People, cities, companies and schools joined by RELATED edges (predicates as ingest stores them):
only alice and dave were born in Paris *and* work for Acme; only alice also studied at MIT; nobody
born in Berlin works for Globex (the fallback case).
"""

from __future__ import annotations

import json

import pytest

from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.embed import get_embedder
from graphstrata.ingest.extract import normalize_name
from graphstrata.retrieval.base import get_retriever
from graphstrata.retrieval.sgrag import spacy_query_graph

ENTITIES = {
    "alice": ("Alice Martin", "PERSON"),
    "bob": ("Bob Stone", "PERSON"),
    "carol": ("Carol White", "PERSON"),
    "dave": ("Dave Brown", "PERSON"),
    "erin": ("Erin Black", "PERSON"),
    "paris": ("Paris", "LOCATION"),
    "berlin": ("Berlin", "LOCATION"),
    "london": ("London", "LOCATION"),
    "acme": ("Acme Corporation", "ORGANIZATION"),
    "globex": ("Globex", "ORGANIZATION"),
    "mit": ("MIT", "ORGANIZATION"),
}
RELATED = [
    ("alice", "born in", "paris"),
    ("alice", "works for", "acme"),
    ("alice", "studied at", "mit"),
    ("bob", "born in", "paris"),
    ("bob", "works for", "globex"),
    ("carol", "born in", "berlin"),
    ("carol", "works for", "acme"),
    ("dave", "born in", "paris"),
    ("dave", "works for", "acme"),
    ("erin", "born in", "london"),
    ("erin", "studied at", "mit"),
    ("acme", "located in", "london"),
    ("globex", "located in", "berlin"),
]


def qg(*known: tuple[str, str], target: str = "person") -> str:
    """An explicit query graph: UNK target linked to each (entity label, relation)."""
    nodes = [{"id": "t", "label": "UNK", "description": target}]
    edges = []
    for i, (label, rel) in enumerate(known):
        nodes.append({"id": f"k{i}", "label": label})
        edges.append({"src": "t", "dst": f"k{i}", "relation": rel})
    return json.dumps({"nodes": nodes, "edges": edges})


@pytest.fixture(scope="module")
def kg(db: Database, neo4j_settings: Settings) -> Database:
    from graphstrata.schema import apply_schema
    from tests.conftest import wipe

    wipe(db)
    emb = get_embedder()
    apply_schema(db, emb.name, emb.dim)
    names = [n for n, _ in ENTITIES.values()]
    vecs = emb.embed(names)
    rows = [
        {"id": k, "name": n, "normalized": normalize_name(n), "type": t, "description": f"{n}, a {t.lower()}",
         "embedding": v.tolist()}
        for (k, (n, t)), v in zip(ENTITIES.items(), vecs, strict=True)
    ]  # fmt: skip
    db.write("UNWIND $rows AS r CREATE (e:Entity) SET e = r", rows=rows)
    db.write(
        "UNWIND $rows AS r MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b}) "
        "CREATE (a)-[:RELATED {predicate: r.p, weight: 1.0, description: r.a + ' ' + r.p + ' ' + r.b}]->(b)",
        rows=[{"a": a, "p": p, "b": b} for a, p, b in RELATED],
    )
    # provenance: one chunk per person mentioning it; alice's "works for" relation nodalized
    db.write(
        "UNWIND $people AS p MATCH (e:Entity {id: p}) "
        "CREATE (c:Chunk {id: 'chunk-' + p, doc_title: 'doc-' + p, text: e.name})-[:MENTIONS]->(e)",
        people=["alice", "bob", "carol", "dave", "erin"],
    )
    db.write(
        "MATCH (a:Entity {id: 'alice'}), (b:Entity {id: 'acme'}), (c:Chunk {id: 'chunk-alice'}) "
        "CREATE (a)-[:SUBJECT_OF]->(r:Relation {id: 'rel-alice-acme', subject: 'Alice Martin', "
        "predicate: 'works for', object: 'Acme Corporation', text: 'Alice Martin works for Acme Corporation'})"
        "-[:OBJECT]->(b), (c)-[:HAS_RELATION]->(r)"
    )
    db.write("CALL db.awaitIndexes(60)")
    return db


@pytest.fixture
def sgrag(kg: Database, neo4j_settings: Settings):
    settings = neo4j_settings.model_copy(update={"chat_model": None})  # offline: the spaCy query graph
    return get_retriever("sgrag", kg, get_embedder(), settings)


def answers(res) -> set[str]:
    return {it.node_id for it in res.items if it.label == "Entity"}


def test_two_constraints_exact_answers_only(sgrag) -> None:
    res = sgrag.retrieve(
        "Who was born in Paris and works for Acme?", query_graph=qg(("Paris", ""), ("Acme Corporation", ""))
    )
    assert res.notes["fallback"] is False
    assert set(res.notes["answers"]) == {"Alice Martin", "Dave Brown"}
    assert answers(res) == {"alice", "dave"}  # bob (Paris only), carol (Acme only) excluded
    assert res.items[0].label == "Entity" and res.items[1].label == "Entity"  # answers first
    rel_texts = [it.text for it in res.items if it.label == "Relation"]
    assert "Alice Martin works for Acme Corporation — alice works for acme" in rel_texts
    assert "Dave Brown born in Paris — dave born in paris" in rel_texts
    assert not any("Bob" in t or "Carol" in t for t in rel_texts)
    # provenance: answer chunks and the nodalized relation's chunk
    assert {"chunk-alice", "chunk-dave"} <= set(res.chunk_ids())
    assert any(it.node_id == "rel-alice-acme" and it.chunk_ids == ["chunk-alice"] for it in res.items)
    assert res.notes["query_graph_source"] == "param"


def test_three_constraints_single_answer(sgrag) -> None:
    res = sgrag.retrieve("q", query_graph=qg(("Paris", ""), ("Acme Corporation", ""), ("MIT", "")))
    assert res.notes["answers"] == ["Alice Martin"]
    assert answers(res) == {"alice"}


def test_two_hop_constraint(sgrag) -> None:
    # a person who studied at MIT and works for a company located in London: alice only
    # (erin studied at MIT but is linked to London directly, not through a company)
    spec = {
        "nodes": [
            {"id": "p", "label": "UNK"},
            {"id": "c", "label": "UNK"},
            {"id": "m", "label": "MIT"},
            {"id": "l", "label": "London"},
        ],
        "edges": [{"src": "p", "dst": "m"}, {"src": "p", "dst": "c"}, {"src": "c", "dst": "l"}],
    }
    res = sgrag.retrieve("q", query_graph=json.dumps(spec))
    assert res.notes["fallback"] is False
    assert set(res.subgraph.nodes) == {"alice", "acme", "mit", "london"}


def test_relations_filter(sgrag) -> None:
    ok = sgrag.retrieve(
        "q", query_graph=qg(("Paris", "born in"), ("Acme Corporation", "works for")), match_relations=True
    )
    assert set(ok.notes["answers"]) == {"Alice Martin", "Dave Brown"}
    swapped = sgrag.retrieve(
        "q", query_graph=qg(("Paris", "works for"), ("Acme Corporation", "born in")), match_relations=True
    )
    assert swapped.notes["fallback"] is True and swapped.notes["matches"] == 0


def test_fallback_when_no_match(sgrag) -> None:
    res = sgrag.retrieve("Who was born in Berlin and works for Globex?", query_graph=qg(("Berlin", ""), ("Globex", "")))
    assert res.notes["fallback"] is True
    assert res.notes["matches"] == 0 and res.notes["answers"] == []
    ents = [it.node_id for it in res.items if it.label == "Entity"]
    assert set(ents) == {"berlin", "globex"}
    rel_texts = {it.text.split(" — ")[0] for it in res.items if it.label == "Relation"}
    # the 1-hop subgraph around the anchors: every edge incident to Berlin or Globex
    assert rel_texts == {
        "Carol White born in Berlin",
        "Bob Stone works for Globex",
        "Globex located in Berlin",
    }


def test_spacy_query_graph_end_to_end(sgrag) -> None:
    spec = spacy_query_graph("Who was born in Paris and works for Acme Corporation?")
    labels = {n.label for n in spec.nodes}
    assert "UNK" in labels and {"Paris", "Acme Corporation"} <= labels
    res = sgrag.retrieve("Who was born in Paris and works for Acme Corporation?")
    assert res.notes["query_graph_source"] in ("spacy", "llm")
    if res.notes["query_graph_source"] == "spacy":
        assert answers(res) == {"alice", "dave"}


def test_vector_normalisation(sgrag) -> None:
    # "Acme Corp" is no entity's normalized name: the vector index maps it to Acme Corporation
    res = sgrag.retrieve("q", query_graph=qg(("Paris", ""), ("Acme Corp", "")), min_similarity=0.5)
    assert any(v == "Acme Corporation" for v in res.notes["normalised"].values())
    assert answers(res) == {"alice", "dave"}


def test_bad_query_graph_rejected(sgrag) -> None:
    from graphstrata.retrieval.base import RetrievalError

    with pytest.raises(RetrievalError):
        sgrag.retrieve("q", query_graph="{not json")


def test_spacy_query_graph_terminates_without_governing_verb() -> None:
    # regression: walking up from a node whose ancestors hold no verb must stop at the root
    spec = spacy_query_graph("Which noun that 35 use and mount on struts?")
    assert spec.nodes[0].label == "UNK" and len(spec.edges) == len(spec.nodes) - 1
