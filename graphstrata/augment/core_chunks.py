"""KET-RAG §5.1 (Algorithm 3, lines 2-8): PageRank over the chunk KNN graph; the top beta share of
chunks are the core chunks whose knowledge-graph skeleton is extracted with the LLM."""

from __future__ import annotations

import math

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.gds import GDS

DAMPING = 0.85  # KET-RAG's reference implementation: networkx pagerank, alpha = 0.85


def select_core(scores: dict[str, float], beta: float) -> set[str]:
    """The ceil(beta * n) highest-PageRank chunks (ties broken by id, so the choice is deterministic)."""
    n = math.ceil(beta * len(scores))
    return {c for c, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:n]}


@stage("core_chunks", order=20)
def core_chunks(ctx: AugmentContext) -> StageReport:
    beta = ctx.params.beta
    gds = GDS(ctx.db, ctx.settings)
    # The KNN graph is undirected and simple (KET-RAG adds both neighbour kinds to one nx.Graph).
    with gds.temporary(
        gds.project(
            "chunk_pagerank",
            "Chunk",
            {"SIMILAR": {"type": "SIMILAR", "orientation": "UNDIRECTED", "aggregation": "SINGLE"}},
            force=True,
        )
    ) as p:
        pr = gds.client.page_rank.stream(
            p.graph, damping_factor=DAMPING, max_iterations=100, tolerance=1e-9, concurrency=gds.concurrency
        )
        rows = gds.resolve(query("augment.pagerank_chunks"), ["id", "score"], nodeId=pr["nodeId"], score=pr["score"])
    scores = {r["id"]: float(r["score"]) for r in rows}
    core = select_core(scores, beta)
    ctx.db.write_batches(
        query("augment.set_core_chunks"), [{"id": c, "score": s, "core": c in core} for c, s in scores.items()]
    )
    return StageReport(stage="core_chunks", counts={"chunks": len(scores), "core": len(core)}, notes={"beta": beta})
