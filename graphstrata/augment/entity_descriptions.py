"""KET-RAG's skeleton (§5.1, after GraphRAG's local search) matches a query to entities by the
embedding of their descriptions, which the LLM wrote while extracting. This stage embeds
``"{name}: {description}"`` for each entity with a description from an LLM or from the user's own
extractions; spaCy's stand-in description (the sentence the name occurs in) is not one, and those
entities stay matched by name (``entity_embedding``)."""

from __future__ import annotations

from graphstrata.augment import AugmentContext, StageReport, refresh_text_vectors, stage
from graphstrata.cypher import query


def description_text(name: str, descriptions: list[str]) -> str | None:
    """What an entity's description vector embeds, or None when no model or user described it."""
    text = " ".join(d.strip() for d in descriptions if d and d.strip())
    return f"{name}: {text}" if text else None


@stage("entity_descriptions", order=16)
def entity_descriptions(ctx: AugmentContext) -> StageReport:
    """Embeds the entities whose described text changed since the last run (incremental by a key of
    the text); clears the vector of an entity that lost its last written description."""
    rows = ctx.db.read_rows(
        query("augment.entity_description_state"),
        ["id", "name", "key", "descriptions"],
        max_descriptions=ctx.params.max_descriptions,
    )
    texts = [(i, description_text(name, descriptions), key) for i, name, key, descriptions in rows]
    embedded, cleared = refresh_text_vectors(
        ctx,
        texts,
        "description",
        "augment.write_entity_descriptions",
        "augment.clear_entity_descriptions",
        "entity descriptions",
    )
    return StageReport(
        stage="entity_descriptions",
        counts={
            "entities": len(rows),
            "described": sum(t is not None for _, t, _ in texts),
            "embedded": embedded,
            "cleared": cleared,
        },
    )
