"""DA-RAG §4.1 Semantic Chunk Layer: each chunk's attribute vector (the embedding of the title and
description a model wrote for it at extraction) and the layer's edges (chunks c_i and c_j are linked when a relation of
the knowledge graph joins an entity extracted from c_i to one extracted from c_j)."""

from __future__ import annotations

from graphstrata.algorithms.chunk_links import chunk_links
from graphstrata.augment import AugmentContext, StageReport, refresh_text_vectors, stage
from graphstrata.augment.similarity import replace_edges
from graphstrata.cypher import query
from graphstrata.text.nlp import EXTRACTIVE


def attribute_text(title: str | None, description: str | None, extractor: str | None) -> str | None:
    """What a chunk's attribute embeds: the title and description a model wrote, or None (no
    extraction, your own triples, or spaCy's extractive stand-in: as the attribute it measured below
    the text's own vector, bench/results/graphs-darag-layer.md, which DA-RAG then uses)."""
    if extractor in EXTRACTIVE:
        return None
    parts = [x.strip() for x in (title, description) if x and x.strip()]
    return "\n".join(parts) if parts else None


@stage("darag_chunk_attributes", order=58)
def darag_chunk_attributes(ctx: AugmentContext) -> StageReport:
    """Embeds the title + description of chunks whose text for it changed since the last run; a chunk
    without a model's (see :func:`attribute_text`) keeps none, and DA-RAG uses its text's vector."""
    rows = ctx.db.read_rows(query("augment.chunk_attribute_state"), ["id", "title", "description", "extractor", "key"])
    texts = [(i, attribute_text(title, description, extractor), key) for i, title, description, extractor, key in rows]
    # a passage's attribute, ranked against the question as the passage is: float32
    # (docs/configuration.md, "Embeddings offline")
    embedded, cleared = refresh_text_vectors(
        ctx,
        texts,
        "attribute",
        "augment.write_chunk_attributes",
        "augment.clear_chunk_attributes",
        "chunk attributes",
        ctx.embedder,
    )
    return StageReport(
        stage="darag_chunk_attributes",
        counts={
            "chunks": len(rows),
            "with_attribute": sum(t is not None for _, t, _ in texts),
            "embedded": embedded,
            "cleared": cleared,
        },
    )


@stage("darag_chunk_edges", order=60)
def darag_chunk_edges(ctx: AugmentContext) -> StageReport:
    """§4.1 E_intra^C as a sparse matrix product (graphstrata/algorithms/chunk_links.py), without the
    hub entities of more than ``darag_hub_mentions`` chunks, each pair among the ``darag_chunk_links``
    heaviest of one of its chunks: at most that many edges per chunk, linear in the corpus."""
    chunks = sorted(r[0] for r in ctx.db.read_rows(query("augment.chunk_ids"), ["id"]))  # index order = id order
    mentions = ctx.db.read_rows(query("augment.chunk_mentions"), ["chunk", "entity"])
    relations = ctx.db.read_rows(query("augment.entity_relations"), ["source", "target"])
    a, b, weight = chunk_links(chunks, mentions, relations, ctx.params.darag_hub_mentions, ctx.params.darag_chunk_links)
    rows = [{"a": chunks[i], "b": chunks[j], "score": int(w)} for i, j, w in zip(a, b, weight, strict=True)]
    changed = replace_edges(ctx, rows, "chunk_related")  # only the pairs that changed are written
    return StageReport(stage="darag_chunk_edges", counts={"edges": len(rows), **changed})
