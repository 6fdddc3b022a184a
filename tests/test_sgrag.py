"""SG-RAG retrieval on a real Neo4j: a hand-made knowledge graph with planted multi-constraint answers.

People, cities, companies and schools joined by RELATED edges (predicates as ingest stores them):
only alice and dave were born in Paris *and* work for Acme; only alice also studied at MIT; nobody
born in Berlin works for Globex (the fallback case).

Also: the path-dominance GAT trained on this graph gives the same matches as the exact check alone and
prunes candidates before it; the LLM query graph (Table 10) through a real ``openai`` client and the fake
OpenAI-compatible server, including malformed / invalid / unusable replies.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.embed import get_embedder
from graphstrata.retrieval import sgrag_model as sgrag_module
from graphstrata.retrieval.base import get_retriever
from graphstrata.retrieval.sgrag_query import QUERY_GRAPH_PROMPT, spacy_query_graph
from graphstrata.text.names import normalize_name

pytest_plugins = ["tests.conftest_llm"]

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
def sgrag(kg: Database, neo4j_settings: Settings, tmp_path: Path):
    # offline: the spaCy query graph; the dominance model is kept under a per-test cache directory
    settings = neo4j_settings.model_copy(update={"chat_model": None, "cache_dir": tmp_path / "cache"})
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
    assert "(Alice Martin; works for; Acme Corporation): alice works for acme" in rel_texts
    assert "(Dave Brown; born in; Paris): dave born in paris" in rel_texts
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
    # g'' described: the anchors first, then their neighbours
    assert set(ents[:2]) == {"berlin", "globex"} and set(ents[2:]) == {"carol", "bob"}
    rel_texts = {it.text.split(": ")[0] for it in res.items if it.label == "Relation"}
    # the 1-hop subgraph around the anchors: every edge incident to Berlin or Globex
    assert rel_texts == {
        "(Carol White; born in; Berlin)",
        "(Bob Stone; works for; Globex)",
        "(Globex; located in; Berlin)",
    }


def test_an_empty_fallback_is_built_around_the_entities_the_question_mentions(sgrag, kg: Database) -> None:
    """§4.4: g'' is the 1-hop subgraph "around entities mentioned in q^o". The query graph's only known
    node is an entity with no RELATED edge, so the subgraph around it is empty; the question also names
    Carol White, and g'' is built around her too: her two edges."""
    emb = get_embedder()
    kg.write(
        "CREATE (e:Entity {id: 'zephyr', name: 'Zephyr Station', normalized: $n, type: 'LOCATION', "
        "description: 'Zephyr Station, a location'}) WITH e CALL db.create.setNodeVectorProperty(e, 'embedding', $v)",
        n=normalize_name("Zephyr Station"),
        v=emb.embed(["Zephyr Station"])[0].tolist(),
    )
    kg.write("CALL db.awaitIndexes(60)")
    try:
        question = "Which company did Carol White visit at Zephyr Station?"
        res = sgrag.retrieve(question, query_graph=qg(("Zephyr Station", "visit at"), target="company"))
        assert res.notes["fallback"] is True and res.notes["normalised"] == {"k0": "Zephyr Station"}
        assert res.notes["fallback_entities"] == ["Zephyr Station", "Carol White"]
        rel_texts = {it.text.split(": ")[0] for it in res.items if it.label == "Relation"}
        assert rel_texts == {"(Carol White; born in; Berlin)", "(Carol White; works for; Acme Corporation)"}
        # a question that names nothing else keeps the empty g'': only the anchor is described
        alone = sgrag.retrieve("What lies at Zephyr Station?", query_graph=qg(("Zephyr Station", "at"), target="x"))
        assert [it.node_id for it in alone.items if it.label != "Chunk"] == ["zephyr"]
        assert "fallback_entities" not in alone.notes
    finally:
        kg.write("MATCH (e:Entity {id: 'zephyr'}) DETACH DELETE e")


def test_source_passages_follow_the_subgraph_nearest_the_question_first(sgrag, kg: Database) -> None:
    question = "Who was born in Paris and works for Acme?"
    texts = {"chunk-alice": "A recipe for onion soup.", "chunk-dave": "Dave Brown, born in Paris, works for Acme."}
    emb = get_embedder()
    vecs = dict(zip(texts, emb.embed(list(texts.values())), strict=True))
    kg.write(
        "UNWIND $rows AS r MATCH (c:Chunk {id: r.id}) SET c.text = r.text, c.embedding = r.v",
        rows=[{"id": k, "text": t, "v": vecs[k].tolist()} for k, t in texts.items()],
    )
    try:
        res = sgrag.retrieve(question, query_graph=qg(("Paris", ""), ("Acme Corporation", "")), budget=10_000)
        plain = sgrag.retrieve(
            question, query_graph=qg(("Paris", ""), ("Acme Corporation", "")), budget=10_000, passages=False
        )
    finally:
        kg.write("MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) SET c.text = e.name REMOVE c.embedding")
    labels = [it.label for it in res.items]
    first_chunk = labels.index("Chunk")
    # the paper's labels and descriptions first, then the passages, never interleaved
    assert set(labels[:first_chunk]) == {"Entity", "Relation"} and set(labels[first_chunk:]) == {"Chunk"}
    assert [it.label for it in plain.items] == labels[:first_chunk]
    # the passages are the subgraph's sources, ordered by cosine with the question (numpy reference)
    q = emb.embed([question])[0]
    cos = {k: float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q))) for k, v in vecs.items()}
    assert [it.node_id for it in res.items[first_chunk:]] == sorted(cos, key=cos.get, reverse=True)
    assert res.items[first_chunk].text == "doc-dave\n" + texts["chunk-dave"]
    assert res.items[first_chunk].score == pytest.approx(cos["chunk-dave"], abs=1e-4)


def test_spacy_query_graph_end_to_end(sgrag) -> None:
    spec = spacy_query_graph("Who was born in Paris and works for Acme Corporation?")
    labels = {n.label for n in spec.nodes}
    assert "UNK" in labels and {"Paris", "Acme Corporation"} <= labels
    res = sgrag.retrieve("Who was born in Paris and works for Acme Corporation?")
    assert res.notes["query_graph_source"] in ("spacy", "llm")
    if res.notes["query_graph_source"] == "spacy":
        assert answers(res) == {"alice", "dave"}


def test_spacy_query_graph_keeps_a_described_entity_as_an_unknown_hop(sgrag) -> None:
    # SG-RAG §3.1: "the company located in London" is an entity the question describes, not one it
    # names: an UNK node between the target and London, so London constrains the answer two hops away
    question = "Who studied at MIT and works for the company located in London?"
    spec = spacy_query_graph(question)
    by_id = {n.id: n for n in spec.nodes}
    edges = {(by_id[e.src].label, by_id[e.src].description, by_id[e.dst].id) for e in spec.edges}
    assert [n.label for n in spec.nodes].count("UNK") == 2
    company = next(n.id for n in spec.nodes if n.label == "UNK" and n.description == "company")
    assert edges == {("MIT", "MIT", "q0"), ("UNK", "company", "q0"), ("London", "London", company)}
    res = sgrag.retrieve(question)
    if res.notes["query_graph_source"] == "spacy":
        # alice: MIT and Acme (in London); erin studied at MIT but no company of hers is in London
        assert res.notes["fallback"] is False
        assert res.notes["answers"] == ["Alice Martin"]
        assert set(res.subgraph.nodes) == {"alice", "acme", "mit", "london"}
    # a common noun that joins no named entity constrains nothing and is dropped
    bare = spacy_query_graph("What is the capital of the country?")
    assert [n.label for n in bare.nodes] == ["UNK"] and bare.edges == []


def test_vector_normalisation(sgrag) -> None:
    # "Acme Corp" is no entity's normalized name: the vector index maps it to Acme Corporation
    res = sgrag.retrieve("q", query_graph=qg(("Paris", ""), ("Acme Corp", "")), min_similarity=0.5)
    assert any(v == "Acme Corporation" for v in res.notes["normalised"].values())
    assert answers(res) == {"alice", "dave"}


def test_min_similarity_is_a_cosine(sgrag, kg: Database) -> None:
    """The vector index scores (1 + cos) / 2; min_similarity is compared as a cosine (a label whose
    nearest entity has cosine 0.25-0.55 was admitted at 0.6 when the score was compared)."""
    emb = get_embedder()
    names = [n for n, _ in ENTITIES.values()]
    ent = emb.embed(names)
    ent = ent / np.linalg.norm(ent, axis=1, keepdims=True)
    chosen = None
    for label in ("Parisian fashion", "Berliner", "a large corporation", "Londoner", "MIT graduate", "Bobby"):
        v = emb.embed([label])[0]
        cos = ent @ (v / np.linalg.norm(v))  # brute force over every entity name
        if 0.25 < cos.max() < 0.55:
            chosen = (label, names[int(cos.argmax())], float(cos.max()))
            break
    assert chosen, "no test label in the cosine band: pick others"
    label, nearest, best = chosen
    res = sgrag.retrieve("q", query_graph=qg((label, "")))
    # default 0.6 > its cosine: not admitted, only taken as Algorithm 3's fallback since nothing else was
    assert res.notes["normalised_below_threshold"] == {"k0": nearest}
    res = sgrag.retrieve("q", query_graph=qg((label, "")), min_similarity=best - 0.02)
    assert nearest in res.notes["normalised"].values() and "normalised_below_threshold" not in res.notes


def test_no_known_entity_falls_back_to_the_questions_nearest_entity(sgrag, kg: Database) -> None:
    # a query graph of only the UNK target used to return nothing; Algorithm 3 always takes a
    # nearest entity, so the question's own nearest entity anchors the 1-hop fallback
    question = "Who was born in Berlin?"
    emb = get_embedder()
    names = [n for n, _ in ENTITIES.values()]
    ent = emb.embed(names)
    q = emb.embed([question])[0]
    cos = (ent / np.linalg.norm(ent, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    nearest = names[int(cos.argmax())]
    only_target = json.dumps({"nodes": [{"id": "t", "label": "UNK"}], "edges": []})
    res = sgrag.retrieve(question, query_graph=only_target)
    assert res.notes["normalised_below_threshold"] == {"question": nearest}
    assert res.notes["fallback"] is True
    rels = [it for it in res.items if it.label == "Relation"]
    assert rels and all(nearest in it.text for it in rels)  # the edges incident to that entity


def test_truncated_candidate_subgraph_is_ordered_and_reported(sgrag) -> None:
    graph = qg(("Paris", ""), ("Acme Corporation", ""))
    full = sgrag.retrieve("q", query_graph=graph)
    assert "truncated" not in full.notes and full.notes["candidate_nodes"] == 11
    cut = sgrag.retrieve("q", query_graph=graph, max_nodes=10)
    assert "truncated" in cut.notes and cut.notes["candidate_nodes"] == 10
    # the neighbours linked to both anchors (the answers) are kept first
    assert answers(cut) == {"alice", "dave"}


def test_candidate_edges_are_capped_keeping_the_anchors_edges_first(sgrag, kg: Database) -> None:
    graph = qg(("Paris", ""), ("Acme Corporation", ""))
    full = sgrag.retrieve("q", query_graph=graph)
    at_anchors = kg.read_one(
        "MATCH (a:Entity)-[r:RELATED]-(:Entity) WHERE a.name IN ['Paris', 'Acme Corporation'] "
        "RETURN count(DISTINCT r) AS n"
    )["n"]
    assert "truncated_edges" not in full.notes and full.notes["candidate_edges"] > at_anchors
    cut = sgrag.retrieve("q", query_graph=graph, max_edges=at_anchors)
    assert "truncated_edges" in cut.notes and cut.notes["candidate_edges"] == at_anchors
    assert answers(cut) == answers(full) == {"alice", "dave"}  # the star's edges are all at the anchors
    fewer = sgrag.retrieve("q", query_graph=graph, max_edges=at_anchors - 1)
    assert fewer.notes["candidate_edges"] == at_anchors - 1


def test_bad_query_graph_rejected(sgrag) -> None:
    from graphstrata.retrieval.base import RetrievalError

    with pytest.raises(RetrievalError):
        sgrag.retrieve("q", query_graph="{not json")


def test_spacy_query_graph_terminates_without_governing_verb() -> None:
    # regression: walking up from a node whose ancestors hold no verb must stop at the root
    spec = spacy_query_graph("Which noun that 35 use and mount on struts?")
    assert spec.nodes[0].label == "UNK" and len(spec.edges) == len(spec.nodes) - 1


# ------------------------------------------------------------------------------------------------
# the path-dominance GAT trained on the corpus graph, in the query path
# ------------------------------------------------------------------------------------------------
CONSTRAINTS = [
    ("Paris", "born in"),
    ("Berlin", "born in"),
    ("London", "born in"),
    ("Acme Corporation", "works for"),
    ("Globex", "works for"),
    ("MIT", "studied at"),
]


def gat_queries() -> list[dict[str, Any]]:
    """Every query of 2–3 constraints on one UNK target, loose (any relation); pairs also with relations."""
    out = []
    for k in (2, 3):
        for combo in itertools.combinations(CONSTRAINTS, k):
            out.append({"query_graph": qg(*((label, "") for label, _ in combo))})
            if k == 2:
                out.append({"query_graph": qg(*combo), "match_relations": True})
    return out


def test_gat_filter_same_matches_as_exact_only_and_prunes(kg: Database, sgrag) -> None:
    sgrag_module._MODELS.clear()
    first = sgrag.retrieve("q", **gat_queries()[0])
    model = first.notes["dominance"]["model"]
    assert first.notes["dominance"]["used"] and model["source"] == "trained"
    # trained on the stars of this graph: the 11 entities (all have RELATED neighbours); the hinge loss fell
    assert model["corpus_stars"] == len(ENTITIES) and model["pairs"] > 0 and model["violations"] == 0
    assert model["loss"] <= model["initial_loss"] and model["separated"] > 0
    stored = sgrag_module.model_path(sgrag.settings.cache_dir, kg, model["graph_state"])
    assert json.loads(stored.read_text())["graph_state"] == model["graph_state"]
    labels = {r["label"] for r in kg.read("MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")}
    assert labels <= {"Entity", "Chunk", "Relation", "GraphStrata"}  # the model is not written to the graph

    pruned = structural = exact_checks_saved = 0
    for params in gat_queries():
        gat = sgrag.retrieve("q", **params)
        exact = sgrag.retrieve("q", dominance=False, **params)
        # the same answers, matches, context and subgraph: the filter never loses a true match
        assert gat.notes["answers"] == exact.notes["answers"], params
        assert gat.notes["matches"] == exact.notes["matches"] and gat.notes["fallback"] == exact.notes["fallback"]
        assert [i.text for i in gat.items] == [i.text for i in exact.items]
        assert gat.subgraph == exact.subgraph
        assert "dominance" not in exact.notes and exact.notes["funnel"]["pruned_by_dominance"] == 0
        f, e = gat.notes["funnel"], exact.notes["funnel"]
        assert f["exact"] == e["exact"] and f["structural"] == e["structural"]  # same rows, fewer exact checks
        pruned += f["pruned_by_dominance"]
        structural += f["structural"]
        exact_checks_saved += e["filtered"] - f["filtered"]
        assert gat.notes["dominance"]["model"]["source"] == "memory"  # trained once, then cached
    assert pruned > 0 and exact_checks_saved == pruned and pruned < structural
    # e.g. Paris + Acme + MIT: dave lies on a Paris–?–Acme path but has no MIT leaf; the embeddings drop him
    res = sgrag.retrieve("q", query_graph=qg(("Paris", ""), ("Acme Corporation", ""), ("MIT", "")))
    assert res.notes["answers"] == ["Alice Martin"] and res.notes["funnel"]["pruned_by_dominance"] >= 1


def test_gat_model_reloaded_from_its_file_and_retrained_after_a_graph_change(kg: Database, sgrag) -> None:
    params = {"query_graph": qg(("Paris", ""), ("Acme Corporation", ""))}
    sgrag_module._MODELS.clear()
    assert sgrag.retrieve("q", **params).notes["dominance"]["model"]["source"] == "trained"  # into this cache dir
    sgrag_module._MODELS.clear()  # a new process: the model file is used, not retrained
    again = sgrag.retrieve("q", **params)
    assert again.notes["dominance"]["model"]["source"] == "stored"
    assert set(again.notes["answers"]) == {"Alice Martin", "Dave Brown"}
    kg.write(
        "MATCH (a:Entity {id: 'erin'}), (b:Entity {id: 'acme'}) "
        "CREATE (a)-[:RELATED {predicate: 'works for', weight: 1.0, description: 'tmp'}]->(b)"
    )
    try:
        changed = sgrag.retrieve("q", **params)
        assert changed.notes["dominance"]["model"]["source"] == "trained"  # the graph state changed
        assert set(changed.notes["answers"]) == {"Alice Martin", "Dave Brown"}
    finally:
        kg.write("MATCH (:Entity {id: 'erin'})-[r:RELATED {description: 'tmp'}]->() DELETE r")


# ------------------------------------------------------------------------------------------------
# the LLM query graph (Table 10) through the fake OpenAI-compatible server
# ------------------------------------------------------------------------------------------------
QUESTION = "Who was born in Paris and works for Acme Corporation?"
TABLE10_REPLY = {
    "nodes": [
        {"id": "q0", "label": "UNK", "description": "person"},
        {"id": "q1", "label": "Paris", "description": "city"},
        {"id": "q2", "label": "Acme Corporation", "description": ""},
    ],
    "edges": [{"src": "q0", "dst": "q1", "relation": "born in"}, {"src": "q0", "dst": "q2", "relation": "works for"}],
}


def query_graph_reply(messages: list[dict], failure: str | None) -> str:
    """The fake model: a Table 10 query graph, or the scheduled kind of bad reply."""
    assert messages[0]["role"] == "system" and messages[0]["content"] == QUERY_GRAPH_PROMPT
    assert messages[1] == {"role": "user", "content": f"Text: {QUESTION}"}
    if failure == "malformed":  # repairable: prose around a fenced object with a trailing comma
        body = json.dumps(TABLE10_REPLY, indent=1)
        return "Here is the query graph:\n```json\n" + body[: body.rfind("}")].rstrip() + ",\n}\n```"
    if failure == "invalid":  # JSON, but two nodes share an id: not a graph
        return json.dumps({"nodes": [{"id": "q0", "label": "UNK"}, {"id": "q0", "label": "Paris"}], "edges": []})
    if failure == "garbage":
        return "I cannot draw graphs."
    return json.dumps(TABLE10_REPLY)


@pytest.fixture
def llm_sgrag(kg: Database, neo4j_settings: Settings, fake_openai: Any, tmp_path: Path):
    fake_openai.chat_reply = query_graph_reply
    settings = neo4j_settings.model_copy(
        update={
            "openai_api_key": fake_openai.api_key,
            "openai_base_url": fake_openai.base_url,
            "chat_model": "fake-chat",
            "cache_dir": tmp_path / "cache",
            "llm_timeout": 5.0,
        }
    )
    return get_retriever("sgrag", kg, get_embedder(), settings)


def chat_requests(fake: Any) -> list[dict]:
    return [r["body"] for r in fake.requests if r["path"] == "/v1/chat/completions"]


def test_llm_query_graph_end_to_end(llm_sgrag, fake_openai: Any) -> None:
    res = llm_sgrag.retrieve(QUESTION)
    assert res.notes["query_graph_source"] == "llm"
    assert res.notes["query_graph"] == {
        "nodes": [{**n, "description": n["description"]} for n in TABLE10_REPLY["nodes"]],
        "edges": TABLE10_REPLY["edges"],
    }
    assert answers(res) == {"alice", "dave"} and res.notes["fallback"] is False
    assert res.notes["llm"]["calls"] == 1 and "query_graph_error" not in res.notes
    [body] = chat_requests(fake_openai)
    assert body["model"] == "fake-chat" and body["messages"][0]["content"].startswith("Goal: Given a user question")
    # a second ask is served from the LLM cache: no request reaches the server
    again = llm_sgrag.retrieve(QUESTION)
    assert again.notes["query_graph_source"] == "llm" and len(chat_requests(fake_openai)) == 1
    assert again.notes["llm"]["cache_hits"] == 1


def test_llm_malformed_json_is_repaired(llm_sgrag, fake_openai: Any) -> None:
    fake_openai.fail_next("malformed")
    res = llm_sgrag.retrieve(QUESTION)
    assert fake_openai.failures_served["malformed"] == 1 and len(chat_requests(fake_openai)) == 1
    assert res.notes["query_graph_source"] == "llm" and answers(res) == {"alice", "dave"}


def test_llm_invalid_graph_is_re_asked(llm_sgrag, fake_openai: Any) -> None:
    fake_openai.fail_next("invalid")
    res = llm_sgrag.retrieve(QUESTION)
    first, second = chat_requests(fake_openai)
    assert len(second["messages"]) == len(first["messages"]) + 2  # the bad reply and the error go back
    assert "node ids must be unique" in second["messages"][-1]["content"]
    assert res.notes["query_graph_source"] == "llm" and answers(res) == {"alice", "dave"}
    assert res.notes["llm"]["calls"] == 2


def test_llm_unusable_replies_fall_back_to_spacy(llm_sgrag, fake_openai: Any) -> None:
    fake_openai.fail_next("garbage", 3)  # the first reply and both re-asks
    res = llm_sgrag.retrieve(QUESTION)
    assert len(chat_requests(fake_openai)) == 3 and fake_openai.failures_served["garbage"] == 3
    assert res.notes["query_graph_source"] == "spacy"
    assert "no valid QueryGraphSpec" in res.notes["query_graph_error"]
    assert answers(res) == {"alice", "dave"}  # the spaCy graph of this question finds the same answers
