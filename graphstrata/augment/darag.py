"""DA-RAG §4.1 Semantic Chunk Layer: each chunk's attribute vector (the embedding of its title and
description, from extraction) and the layer's edges (chunks c_i and c_j are linked when a relation of
the knowledge graph joins an entity extracted from c_i to one extracted from c_j)."""

from __future__ import annotations

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.text.names import hid


def attribute_text(title: str | None, description: str | None) -> str | None:
    """What a chunk's attribute embeds: its title and description, or None when it has neither."""
    parts = [x.strip() for x in (title, description) if x and x.strip()]
    return "\n".join(parts) if parts else None


@stage("darag_chunk_attributes", order=58)
def darag_chunk_attributes(ctx: AugmentContext) -> StageReport:
    """Embeds the title + description of chunks whose text for it changed since the last run; a chunk
    with neither (no extraction, or your own triples) keeps none, and DA-RAG uses its text's vector."""
    rows = ctx.db.read(query("augment.chunk_attribute_state"))
    todo, stale = [], []
    for r in rows:
        text = attribute_text(r["title"], r["description"])
        if text is None:
            if r["key"] is not None:
                stale.append(r["id"])
        elif r["key"] != hid("attribute", text):
            todo.append((r["id"], text))
    with ctx.tracker.stage("chunk attributes", len(todo)) as advance:
        vectors = ctx.embedder.embed([t for _, t in todo], advance) if todo else []
    out = [
        {"id": cid, "embedding": v.tolist(), "key": hid("attribute", text)}
        for (cid, text), v in zip(todo, vectors, strict=True)
    ]
    ctx.db.write_batches(query("augment.write_chunk_attributes"), out, batch_size=500)
    if stale:
        ctx.db.write(query("augment.clear_chunk_attributes"), ids=stale)
    with_attribute = sum(attribute_text(r["title"], r["description"]) is not None for r in rows)
    return StageReport(
        stage="darag_chunk_attributes",
        counts={"chunks": len(rows), "with_attribute": with_attribute, "embedded": len(out), "cleared": len(stale)},
    )


@stage("darag_chunk_edges", order=60)
def darag_chunk_edges(ctx: AugmentContext) -> StageReport:
    ctx.db.write(query("augment.delete_chunk_relations"))
    edges = ctx.db.write(query("augment.write_chunk_relations"))[0]["edges"]
    return StageReport(stage="darag_chunk_edges", counts={"edges": edges})
