"""Augment's bulk reads: every vector of a layer read once, page by page, in id order."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.augment import similarity
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions

DOCS = [(f"doc {i}", f"Town number {i} lies on river {i % 3} near the hill of {i % 5}.") for i in range(9)]


@pytest.mark.parametrize("page", [1, 4, 10_000])
def test_embedded_reads_every_vector_once_in_pages(
    graph: Database, neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_texts(DOCS, IngestOptions(extractor="none"))
    monkeypatch.setattr(similarity, "EMBEDDED_PAGE", page)
    ids, vecs = similarity.embedded(graph, ["Chunk", "SubChunk"])
    want = graph.read(
        "MATCH (n) WHERE (n:Chunk OR n:SubChunk) AND n.embedding IS NOT NULL "
        "RETURN n.id AS id, n.embedding AS e ORDER BY id"
    )
    assert len(want) > 9 and ids == [r["id"] for r in want]
    np.testing.assert_allclose(vecs, np.array([r["e"] for r in want], dtype=np.float32))
