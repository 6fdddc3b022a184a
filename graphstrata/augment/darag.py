"""DA-RAG §4.1 Semantic Chunk Layer edges: chunks c_i and c_j are linked when a relation of the
knowledge graph joins an entity extracted from c_i to one extracted from c_j."""

from __future__ import annotations

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query


@stage("darag_chunk_edges", order=60)
def darag_chunk_edges(ctx: AugmentContext) -> StageReport:
    ctx.db.write(query("augment.delete_chunk_relations"))
    edges = ctx.db.write(query("augment.write_chunk_relations"))[0]["edges"]
    return StageReport(stage="darag_chunk_edges", counts={"edges": edges})
