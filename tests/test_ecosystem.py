"""The libraries people already use on Neo4j, run on a graph that graphstrata wrote.

LangChain's `Neo4jGraph` / `Neo4jVector` and neo4j-graphrag's retrievers and `get_schema` run here
against the test server (they are dev dependencies; nothing leaves this machine): a change to what
graphstrata writes, or to the server's plugins, that breaks them fails this file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, connection_params
from graphstrata.ecosystem import RETRIEVAL_QUERY, graphrag_embedder, langchain_embeddings
from graphstrata.ingest.pipeline import IngestOptions

DOCS = [
    {
        "title": "Curie",
        "text": "Marie Curie was born in Warsaw. Marie Curie discovered Polonium in 1898.",
        "triples": [["Marie Curie", "born in", "Warsaw"], ["Marie Curie", "discovered", "Polonium"]],
    },
    {
        "title": "Danube",
        "text": "The Danube flows through Vienna and Budapest into the Black Sea.",
        "triples": [["Danube", "flows through", "Vienna"], ["Danube", "flows into", "Black Sea"]],
    },
    {
        "title": "Photosynthesis",
        "text": "Photosynthesis converts light energy into chemical energy in plants and algae.",
        "triples": [["Photosynthesis", "occurs in", "plants"]],
    },
]
QUESTION = "Which river flows through Vienna?"


@pytest.fixture(scope="module")
def built(db: Database, neo4j_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> GraphStrata:
    """A small graph made by graphstrata's own ingest (bring-your-own extractions: no model needed)."""
    from graphstrata.schema import apply_schema
    from tests.conftest import wipe

    wipe(db)
    gs = GraphStrata(neo4j_settings, db=db)
    apply_schema(db, gs.embedder.name, gs.embedder.dim)
    path: Path = tmp_path_factory.mktemp("eco") / "docs.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n")
    report = gs.ingest_extractions(path, IngestOptions())
    assert report.documents_new == 3 and report.relations == 5
    return gs


@pytest.fixture(scope="module")
def driver(neo4j_settings: Settings) -> Iterator[Driver]:
    uri, auth = connection_params(neo4j_settings)
    with GraphDatabase.driver(uri, auth=auth) as d:
        yield d


def test_langchain_neo4jgraph_reads_the_schema_through_apoc(built: GraphStrata, neo4j_settings: Settings) -> None:
    from langchain_neo4j import Neo4jGraph

    uri, (user, password) = connection_params(neo4j_settings)
    graph = Neo4jGraph(url=uri, username=user, password=password, database=neo4j_settings.neo4j_database)
    try:
        schema = graph.get_structured_schema
        assert {"Chunk", "Entity", "Document", "Relation"} <= set(schema["node_props"])
        assert {"text", "doc_title", "id"} <= {p["property"] for p in schema["node_props"]["Chunk"]}
        rels = {(r["start"], r["type"], r["end"]) for r in schema["relationships"]}
        assert {
            ("Entity", "RELATED", "Entity"),
            ("Chunk", "MENTIONS", "Entity"),
            ("Document", "HAS_CHUNK", "Chunk"),
        } <= rels
        assert "predicate" in {p["property"] for p in schema["rel_props"]["RELATED"]}
        assert "(:Entity)-[:RELATED]->(:Entity)" in graph.get_schema
    finally:
        graph.close()


def test_langchain_enhanced_schema_through_read_only_apoc(built: GraphStrata, neo4j_settings: Settings) -> None:
    """`enhanced_schema=True` samples property values and counts relationships with APOC functions
    (`apoc.any.property`, `apoc.schema.properties.distinct`): the server allows those read-only ones."""
    from langchain_neo4j import Neo4jGraph

    uri, (user, password) = connection_params(neo4j_settings)
    graph = Neo4jGraph(
        url=uri, username=user, password=password, database=neo4j_settings.neo4j_database, enhanced_schema=True
    )
    try:
        schema = graph.get_structured_schema
        chunk = {p["property"]: p for p in schema["node_props"]["Chunk"]}
        # the enhanced schema's examples: values read from the graph graphstrata wrote
        assert any("Danube" in str(v) for v in chunk["doc_title"].get("values", chunk["doc_title"].get("examples", [])))
        assert "Entity" in graph.get_schema
    finally:
        graph.close()
    # the writing procedures stay unloaded
    names = {r["name"] for r in built.db.read("SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.'")}
    assert "apoc.schema.properties.distinct" in names and not {"apoc.merge.node", "apoc.create.addLabels"} & names
    functions = {r["name"] for r in built.db.read("SHOW FUNCTIONS YIELD name WHERE name STARTS WITH 'apoc.'")}
    assert "apoc.any.property" in functions


def test_langchain_neo4jvector_on_graphstratas_chunk_index(built: GraphStrata, neo4j_settings: Settings) -> None:
    from langchain_neo4j import Neo4jVector

    uri, (user, password) = connection_params(neo4j_settings)
    common = {
        "embedding": langchain_embeddings(built.embedder),
        "url": uri,
        "username": user,
        "password": password,
        "database": neo4j_settings.neo4j_database,
        "index_name": "chunk_embedding",
        "text_node_property": "text",
    }
    store = Neo4jVector.from_existing_index(**common)
    try:
        docs = store.similarity_search(QUESTION, k=3)
        assert "Danube" in docs[0].page_content
        assert docs[0].metadata["doc_title"] == "Danube"
    finally:
        store._driver.close()
    # graphstrata's retrieval_query: chunk → entities → relations
    store = Neo4jVector.from_existing_index(**common, retrieval_query=RETRIEVAL_QUERY)
    try:
        top = store.similarity_search(QUESTION, k=1)[0]
        assert top.metadata["document"] == "Danube"
        assert "danube flows through vienna" in [r.lower() for r in top.metadata["relations"]]
    finally:
        store._driver.close()


def test_graphrag_vector_and_hybrid_retrievers(built: GraphStrata, driver: Driver, neo4j_settings: Settings) -> None:
    from neo4j_graphrag.retrievers import HybridRetriever, VectorRetriever

    embedder = graphrag_embedder(built.embedder)
    database = neo4j_settings.neo4j_database
    vector = VectorRetriever(
        driver, "chunk_embedding", embedder, return_properties=["text", "doc_title"], neo4j_database=database
    )
    items = vector.search(query_text=QUESTION, top_k=3).items
    assert len(items) == 3 and "Danube" in items[0].content
    hybrid = HybridRetriever(
        driver, "chunk_embedding", "chunk_text_fulltext", embedder, ["text", "doc_title"], neo4j_database=database
    )
    items = hybrid.search(query_text="Polonium", top_k=2).items
    assert "Polonium" in items[0].content


def test_graphrag_vector_cypher_retriever_walks_chunk_entities_relations(
    built: GraphStrata, driver: Driver, neo4j_settings: Settings
) -> None:
    from neo4j_graphrag.retrievers import VectorCypherRetriever

    retriever = VectorCypherRetriever(
        driver,
        "chunk_embedding",
        RETRIEVAL_QUERY,
        graphrag_embedder(built.embedder),
        neo4j_database=neo4j_settings.neo4j_database,
    )
    records = retriever.get_search_results(query_text="Who discovered Polonium?", top_k=1).records
    meta = records[0]["metadata"]
    assert meta["document"] == "Curie"
    assert {"marie curie", "warsaw", "polonium"} <= {e.lower() for e in meta["entities"]}
    assert {r.lower() for r in meta["relations"]} == {"marie curie born in warsaw", "marie curie discovered polonium"}


def test_graphrag_get_schema(built: GraphStrata, driver: Driver, neo4j_settings: Settings) -> None:
    from neo4j_graphrag.schema import get_schema, get_structured_schema

    structured = get_structured_schema(driver, database=neo4j_settings.neo4j_database)
    rels = {(r["start"], r["type"], r["end"]) for r in structured["relationships"]}
    assert ("Entity", "RELATED", "Entity") in rels and ("Chunk", "HAS_RELATION", "Relation") in rels
    text = get_schema(driver, database=neo4j_settings.neo4j_database)
    assert "Chunk" in text and ":RELATED" in text
