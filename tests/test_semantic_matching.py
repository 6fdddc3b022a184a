"""NodeRAG's semantic matching (Algorithm 2) on a hand graph whose clusters are known: four tight
blobs of embeddings, each one high-level element (H) and three semantic units (S), in two Leiden
communities. K = sqrt(16) = 4, so K-means must find the blobs, and GROUPS joins each H to the S of its
blob that are also of its community — whether the centroids are fitted on every node or on a sample."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.augment import AugmentContext, run
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.embed import get_embedder

DIM = 384  # the schema's vector indexes' dimension (a vector of another size would not be indexed)


def _vector(blob: int, rng: np.random.Generator) -> list[float]:
    v = np.zeros(DIM)
    v[blob] = 1.0
    v[:8] += rng.normal(0, 0.02, 8)  # tight around the blob's axis, far (distance ~1.4) from the others
    return v.tolist()


@pytest.fixture
def blobs(graph: Database) -> Database:
    rng = np.random.default_rng(7)
    rows = []
    for blob in range(4):
        community = "c1" if blob < 2 else "c2"
        rows.append({"id": f"h{blob}", "label": "HighLevel", "community": community, "v": _vector(blob, rng)})
        for j in range(3):
            # s0_2 is of blob 0 but of the other community: K-means puts it with h0, the community keeps it apart
            c = "c2" if (blob, j) == (0, 2) else community
            rows.append({"id": f"s{blob}_{j}", "label": "SemanticUnit", "community": c, "v": _vector(blob, rng)})
    graph.write("UNWIND ['c1', 'c2'] AS id CREATE (:Community {id: id})")
    graph.write(
        "UNWIND $rows AS r MATCH (c:Community {id: r.community}) "
        "CALL (r, c) { WITH r, c WHERE r.label = 'HighLevel' "
        "  CREATE (:HighLevel {id: r.id, text: r.id, embedding: r.v})-[:OF_COMMUNITY]->(c) } "
        "CALL (r, c) { WITH r, c WHERE r.label = 'SemanticUnit' "
        "  CREATE (:SemanticUnit {id: r.id, text: r.id, embedding: r.v})-[:IN_COMMUNITY]->(c) }",
        rows=rows,
    )
    return graph


EXPECTED = {
    ("h0", "s0_0"),
    ("h0", "s0_1"),
    ("h1", "s1_0"),
    ("h1", "s1_1"),
    ("h1", "s1_2"),
    ("h2", "s2_0"),
    ("h2", "s2_1"),
    ("h2", "s2_2"),
    ("h3", "s3_0"),
    ("h3", "s3_1"),
    ("h3", "s3_2"),
}


@pytest.mark.parametrize("sample", [None, 20_000, 12], ids=["paper", "below-sample", "sampled"])
def test_semantic_matching_groups_each_high_level_element_with_its_blob(
    blobs: Database, neo4j_settings: Settings, sample: int | None
) -> None:
    ctx = AugmentContext(blobs, get_embedder(), neo4j_settings, params={"kmeans_sample": sample})
    (report,) = run(ctx, ["semantic_matching"])
    assert report.counts["clusters"] == 4
    assert report.notes["fitted_on"] == (12 if sample == 12 else 16)
    groups = {(r["h"], r["n"]) for r in blobs.read("MATCH (h:HighLevel)-[:GROUPS]->(n) RETURN h.id AS h, n.id AS n")}
    assert groups == EXPECTED
