"""KET-RAG's skeleton (§5.1, after GraphRAG's local search) matches a query to entities by the
embedding of their descriptions, which the LLM wrote while extracting. This stage embeds
``"{name}: {description}"`` for each entity with a description from an LLM or from the user's own
extractions; spaCy's stand-in description (the sentence the name occurs in) is not one, and those
entities stay matched by name (``entity_embedding``)."""

from __future__ import annotations

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.text.names import hid


def description_text(name: str, descriptions: list[str]) -> str | None:
    """What an entity's description vector embeds, or None when no model or user described it."""
    text = " ".join(d.strip() for d in descriptions if d and d.strip())
    return f"{name}: {text}" if text else None


@stage("entity_descriptions", order=16)
def entity_descriptions(ctx: AugmentContext) -> StageReport:
    """Embeds the entities whose described text changed since the last run (incremental by a key of
    the text); clears the vector of an entity that lost its last written description."""
    rows = ctx.db.read(query("augment.entity_description_state"), max_descriptions=ctx.params.max_descriptions)
    todo, stale = [], []
    for r in rows:
        text = description_text(r["name"], r["descriptions"])
        if text is None:
            if r["key"] is not None:
                stale.append(r["id"])
        elif r["key"] != hid("description", text):
            todo.append((r["id"], text))
    with ctx.tracker.stage("entity descriptions", len(todo)) as advance:
        vectors = ctx.embedder.embed([t for _, t in todo], advance) if todo else []
    out = [
        {"id": eid, "embedding": v.tolist(), "key": hid("description", text)}
        for (eid, text), v in zip(todo, vectors, strict=True)
    ]
    ctx.db.write_batches(query("augment.write_entity_descriptions"), out, batch_size=500)
    if stale:
        ctx.db.write(query("augment.clear_entity_descriptions"), ids=stale)
    described = sum(description_text(r["name"], r["descriptions"]) is not None for r in rows)
    return StageReport(
        stage="entity_descriptions",
        counts={"entities": len(rows), "described": described, "embedded": len(out), "cleared": len(stale)},
    )
