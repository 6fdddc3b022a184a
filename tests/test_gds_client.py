"""The official `graphdatascience` client against the test server's GDS, on graphstrata's layers.

What this checks is compatibility (client 2.x with GDS 2.26 on Neo4j 2026.01, Python ≥ 3.11) and
that a user's own client, connected the ordinary way, reproduces what `graphstrata augment` wrote
(graphstrata's stages run GDS through this client too: graphstrata/gds.py, tests/test_gds_backends.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, connection_params

DOCS = [
    ("Seine", "The Seine is a river that flows through Paris and reaches the English Channel at Le Havre."),
    ("Loire", "The Loire is the longest river in France and flows into the Atlantic at Saint-Nazaire."),
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
    ("Danube", "The Danube flows through Vienna, Budapest and Belgrade into the Black Sea."),
    ("Zanzibar", "Zanzibar is an archipelago off the coast of Tanzania, known for cloves and nutmeg."),
    ("Photosynthesis", "Photosynthesis converts light energy into chemical energy in plants and algae."),
]
# core_chunks' projection of the chunk KNN graph (graphstrata/augment/core_chunks.py)
CHUNK_RELS = {"SIMILAR": {"type": "SIMILAR", "orientation": "UNDIRECTED", "aggregation": "SINGLE"}}


@pytest.fixture(scope="module")
def augmented(db: Database, neo4j_settings: Settings) -> GraphStrata:
    from graphstrata.embed import get_embedder
    from tests.conftest import fresh_graph

    gs = GraphStrata(neo4j_settings, db=fresh_graph(db), embedder=get_embedder())
    gs.ingest_texts(DOCS)
    gs.augment(["chunk_knn", "core_chunks"])
    return gs


@pytest.fixture(scope="module")
def client(neo4j_settings: Settings) -> Iterator:
    from graphdatascience import GraphDataScience

    uri, auth = connection_params(neo4j_settings)
    # The open edition has no Arrow Flight server: plain Bolt.
    gds = GraphDataScience(uri, auth=auth, database=neo4j_settings.neo4j_database, arrow=False)
    yield gds
    gds.close()


def test_client_speaks_to_the_installed_gds(client) -> None:
    from graphstrata.neo4j_local import GDS_VERSION

    v = client.server_version()
    assert f"{v.major}.{v.minor}.{v.patch}" == GDS_VERSION


def test_client_pagerank_equals_core_chunks(augmented: GraphStrata, client) -> None:
    estimate = client.graph.project.estimate("Chunk", CHUNK_RELS)
    assert estimate.node_count == len(DOCS) and estimate.bytes_max > 0
    G, _ = client.graph.project.native("gs_client_chunks", "Chunk", CHUNK_RELS)
    try:
        assert G.node_count() == len(DOCS) and G.relationship_count() > 0
        scores = client.page_rank.stream(G, damping_factor=0.85, max_iterations=100, tolerance=1e-9, concurrency=2)
        ids = client.util.as_nodes(scores["nodeId"].tolist())
        ours = {
            r["id"]: r["pagerank"]
            for r in augmented.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pagerank")
        }
        theirs = {node["id"]: float(score) for node, score in zip(ids, scores["score"], strict=True)}
        assert theirs.keys() == ours.keys()
        assert all(abs(theirs[c] - ours[c]) < 1e-9 for c in ours), (theirs, ours)
    finally:
        G.drop()


def test_a_write_procedure_through_graphstratas_runner_writes_in_a_write_transaction(
    augmented: GraphStrata,
) -> None:
    """A GDS ``.write`` call through graphstrata's runner goes through Database.write_tx (retried and
    counted as every write); what it writes equals the same algorithm's stream."""
    from graphstrata.gds import GDS

    gds = GDS(augmented.db, augmented.settings)
    G, _ = gds.client.graph.project.native("gs_write_chunks", "Chunk", CHUNK_RELS)
    try:
        streamed = gds.client.page_rank.stream(G, max_iterations=100, tolerance=1e-9, concurrency=1)
        ids = {n["id"]: n for n in gds.client.util.as_nodes(streamed["nodeId"].tolist())}
        expected = dict(zip(ids, map(float, streamed["score"]), strict=True))
        calls = []
        original = augmented.db.write_tx
        augmented.db.write_tx = lambda work, *a, **k: calls.append(1) or original(work, *a, **k)  # type: ignore[method-assign]
        try:
            out = gds.client.page_rank.write(
                G, write_property="pr_write_test", max_iterations=100, tolerance=1e-9, concurrency=1
            )
        finally:
            del augmented.db.write_tx
        assert calls and int(out.node_properties_written) == len(DOCS)
        written = {
            r["id"]: r["p"] for r in augmented.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.pr_write_test AS p")
        }
        assert all(abs(written[c] - expected[c]) < 1e-9 for c in expected), (written, expected)
    finally:
        G.drop()
        augmented.db.write("MATCH (c:Chunk) REMOVE c.pr_write_test")
