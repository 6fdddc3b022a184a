"""Whole-graph stages after a small ingest (graphstrata/augment/deferral.py): kept from their last full
run while the chunks changed since are at most ``defer_share`` of those it saw, run whole beyond it,
when named, with ``defer_share=0`` or with other parameters; the other stages always update."""

from __future__ import annotations

import pytest

from graphstrata.augment import AugmentContext, run
from graphstrata.augment.deferral import WHOLE_GRAPH
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions

CITIES = ["Paris", "Vienna", "Cologne", "Tokyo", "Kyoto", "Lyon", "Basel", "Prague", "Madrid", "Lisbon", "Oslo", "Rome"]
PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Marie Curie", "Niels Bohr", "Lise Meitner"]
# 24 one-chunk documents, each person in four cities: a connected entity graph with communities
DOCS = [
    (
        f"doc {i}",
        f"{PEOPLE[i % 6]} visited {CITIES[i % 12]} in {1900 + i}. "
        f"{PEOPLE[(i + 1) % 6]} met her in {CITIES[(i + 5) % 12]}.",
    )
    for i in range(24)
]
OPTS = IngestOptions(extractor="spacy")


@pytest.fixture
def ctx(graph: Database, neo4j_settings: Settings) -> AugmentContext:
    GraphStrata(neo4j_settings, db=graph).ingest_texts(DOCS, OPTS)
    return AugmentContext(graph, GraphStrata(neo4j_settings, db=graph).embedder, neo4j_settings)


def deferred_layers(db: Database) -> tuple[list, list]:
    """What the whole-graph stages write: NodeRAG's nodes (ids and texts) and their relationships, the
    synonym links and DA-RAG's chunk layer."""
    nodes = db.read(
        "MATCH (n) WHERE n:Attribute OR n:Community OR n:HighLevel OR n:Overview "
        "RETURN labels(n)[0] AS l, n.id AS id, n.text AS text ORDER BY l, id"
    )
    rels = db.read(
        "MATCH (a)-[r]-(b) WHERE ((a:Attribute OR a:Community OR a:HighLevel OR a:Overview) AND type(r) <> 'SEMANTIC') "
        "OR type(r) IN ['SYNONYM', 'CHUNK_RELATED'] RETURN a.id AS a, type(r) AS t, b.id AS b ORDER BY a, t, b"
    )
    return nodes, rels


def deferred(reports: list) -> set[str]:
    return {r.stage for r in reports if "deferred" in r.notes}


def add(ctx: AugmentContext, title: str, text: str) -> None:
    GraphStrata(ctx.settings, db=ctx.db).ingest_texts([(title, text)], OPTS)


def test_whole_graph_stages_wait_for_a_share_of_new_chunks_and_the_rest_update(ctx: AugmentContext) -> None:
    assert deferred(run(ctx)) == set()  # never run: whole
    before = deferred_layers(ctx.db)
    assert before[0] and "CHUNK_RELATED" in {r["t"] for r in before[1]}, "the corpus gives layers to keep"

    add(ctx, "doc 24", "Emmy Noether visited Gottingen in 1915. Alan Turing met her in Paris.")  # 1 of 24 chunks
    reports = {r.stage: r for r in run(ctx)}
    assert deferred(reports.values()) == set(WHOLE_GRAPH)
    assert reports["communities"].counts == {"changed_chunks": 1, "chunks_at_full_run": 24}
    assert deferred_layers(ctx.db) == before  # kept as the full run wrote them
    new_chunk = "MATCH (c:Chunk {doc_title: 'doc 24'})-[:SIMILAR {kind: 'semantic'}]-() RETURN count(*) AS n"
    assert ctx.db.read_one(new_chunk)["n"] > 0  # the top-k layers took the new document
    noether = "MATCH (e:Entity)-[:SIMILAR {kind: 'semantic'}]-() WHERE e.name CONTAINS 'Noether' RETURN count(*) AS n"
    assert ctx.db.read_one(noether)["n"] > 0

    # a stage named by the caller, defer_share 0 (--full) and other parameters of a stage run whole
    assert deferred(run(ctx, ["communities"])) == set()
    ctx.params = ctx.params.model_copy(update={"defer_share": 0.0})
    assert deferred(run(ctx, None)) == set()
    ctx.params = ctx.params.model_copy(update={"defer_share": 0.05, "knn_incremental": False, "knn_k": 4})
    assert deferred(run(ctx)) == set(WHOLE_GRAPH)  # nothing changed that shapes them
    ctx.params = ctx.params.model_copy(update={"min_community_texts": 2})
    assert deferred(run(ctx)) == set(WHOLE_GRAPH) - {"communities"}
    ctx.params = ctx.params.model_copy(update={"kmeans_sample": 1000, "betweenness_samples": 5})
    assert deferred(run(ctx)) == set(WHOLE_GRAPH) - {"semantic_matching", "important_entities"}

    # changes add up from the last full run (25 chunks): 1 more is 4%, 2 more 8% (> 5%)
    add(ctx, "doc 25", "Lise Meitner visited Berlin in 1907.")
    assert deferred(run(ctx)) == set(WHOLE_GRAPH)
    GraphStrata(ctx.settings, db=ctx.db).delete("doc 3")  # a deleted document counts as a change too
    assert deferred(run(ctx)) == set()


def test_a_whole_graph_stage_that_stopped_half_way_runs_whole_next_time(
    ctx: AugmentContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphstrata import augment

    run(ctx)
    add(ctx, "doc 24", "Emmy Noether visited Gottingen in 1915.")
    original = augment.STAGES["communities"]

    def broken(c: AugmentContext):
        raise RuntimeError("stopped half-way")

    monkeypatch.setitem(augment.STAGES, "communities", broken)
    with pytest.raises(RuntimeError):
        run(ctx, ["communities"])
    monkeypatch.setitem(augment.STAGES, "communities", original)
    assert "communities" not in deferred(run(ctx))  # its record says it was being written
