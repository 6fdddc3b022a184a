"""NodeRAG retrieval (002_34c3f24544ea558e.txt §2.5, Appendix C.4): dual search for entry points,
shallow personalized PageRank for cross nodes, then the filter to retrievable node types.

1. Dual search: accurate search of the query's entities N^q on entity names (N) and overview
   titles (O); similarity search: the top-k of semantic units (S), attributes (A), high-level
   elements (H) and text chunks (T) together, as one HNSW over all of them would rank them.
2. Shallow PPR from the entry points on the heterograph: alpha = 0.5, t = 2 iterations
   (GDS dampingFactor = 1 - alpha); the top-k nodes of each type are the cross nodes.
   GDS computes pi(k) = alpha*1_S + (1-alpha) P^T pi(k-1) from pi(0) = alpha*1_S, counting the
   initialisation as its first iteration, so t propagation steps are maxIterations = t + 1. This is
   the paper's recurrence times |S| (p = 1_S/|S|) except that pi(0) is alpha*p rather than p: the
   t-hop term is weighted alpha*(1-alpha)^t instead of (1-alpha)^t (checked against numpy in
   tests/test_noderag.py).
3. Entry points and cross nodes of the retrievable types T, S, A, H, R form the context.
"""

from __future__ import annotations

from typing import Any

from neo4j.exceptions import ClientError
from pydantic import Field

from graphstrata.cypher import query
from graphstrata.gds import GDS
from graphstrata.ingest.analyze import query_entities
from graphstrata.retrieval.base import (
    ContextItem,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    hnsw_candidates,
    register,
)
from graphstrata.retrieval.baselines import MAX_CLAUSE_WORDS

RETRIEVABLE = ("Chunk", "SemanticUnit", "Attribute", "HighLevel", "Relation")
VECTOR_INDEXES = {
    "SemanticUnit": "semantic_unit_embedding",
    "Attribute": "attribute_embedding",
    "HighLevel": "high_level_embedding",
    "Chunk": "chunk_embedding",
}
GRAPH = "noderag_heterograph"


class NodeRAGParams(RetrieverParams):
    # The paper leaves k and the cross-node count open; the reference code uses 10 and 10. entry_k = 5
    # is what bench/noderag_sweep.py measured best without an LLM (S are then raw sentences, four per
    # chunk, so ten entry points crowd out the passages), on both halves of the question set.
    entry_k: int = Field(
        5, ge=1, le=200, description="similarity-search entry points: the top k over S, A, H and T together"
    )
    alpha: float = Field(0.5, gt=0, lt=1, description="PPR teleport probability (paper: 0.5)")
    iterations: int = Field(2, ge=1, le=50, description="PPR iterations t (paper: 2, 'shallow')")
    cross_k: int = Field(10, ge=0, le=100, description="cross nodes kept per retrievable type")
    top_k: int | None = Field(
        None, ge=1, le=1000, description="cap on the context items (default: every entry and cross node)"
    )


@register
class NodeRAGRetriever(Retriever):
    name = "noderag"
    summary = "NodeRAG: dual search (exact N/O, vector S/A/H/T) + shallow personalized PageRank on the heterograph."
    Params = NodeRAGParams

    def _retrieve(
        self, question: str, p: NodeRAGParams, t: Timer
    ) -> tuple[list[ContextItem], Subgraph, dict[str, Any]]:
        with t.stage("entities"):
            names = query_entities(question)
        with t.stage("embed"):
            vector = self.embed_query(question)
        with t.stage("dual_search"):
            # one phrase clause per name, within Lucene's clause limit however long the question
            terms = " OR ".join('"' + n.replace('"', " ").replace("\\", " ") + '"' for n in names[:MAX_CLAUSE_WORDS])
            rows = self.db.read(
                query("noderag.dual_search"),
                names=names,
                terms=terms,
                indexes=list(VECTOR_INDEXES.values()),
                k=p.entry_k,
                candidates=hnsw_candidates(p.entry_k),
                vector=vector,
            )
        exact = [r for r in rows if r["via"] == "exact"]
        similar = {r["id"]: r["score"] for r in sorted(rows, key=lambda r: -r["score"]) if r["via"] == "similarity"}
        entry = list(dict.fromkeys([r["id"] for r in exact] + list(similar)))
        if not entry:
            return [], Subgraph(), {"entities": names, "entry_points": 0}
        gds = GDS(self.db, self.settings.gds_concurrency)
        ranked: list[dict] = []
        for attempt in (1, 2):  # a concurrent request may replace a stale projection under us: retry once
            with t.stage("project"):
                proj = gds.project_cypher(GRAPH, query("noderag.project_heterograph"))
            try:
                with t.stage("ppr"):
                    ranked = self.db.read(
                        query("noderag.ppr"),
                        graph=proj.name,
                        sources=entry,
                        damping=1 - p.alpha,
                        iterations=p.iterations + 1,
                        concurrency=gds.concurrency,
                        limit=max(200, 20 * p.cross_k),
                    )
                break
            except ClientError:
                if attempt == 2:
                    raise
        score = {r["id"]: r["score"] for r in ranked}
        # cross nodes: the top cross_k of each retrievable type by PPR score
        per_type: dict[str, list[str]] = {}
        for r in ranked:
            if r["label"] in RETRIEVABLE and len(per_type.setdefault(r["label"], [])) < p.cross_k:
                per_type[r["label"]].append(r["id"])
        cross = {i for ids in per_type.values() for i in ids}
        keep = list(dict.fromkeys([i for i in entry if i in similar] + sorted(cross, key=lambda i: -score[i])))
        with t.stage("fetch"):
            rows = {r["id"]: r for r in self.db.read(query("noderag.retrievable"), ids=keep)}
        items = []
        for i in sorted(rows, key=lambda i: -score.get(i, 0.0)):
            r = rows[i]
            why = (
                ("entry point (similarity search)" if i in similar else "")
                + (" + " if i in similar and i in cross else "")
                + ("cross node (PPR)" if i in cross else "")
            )
            text = f"{r['title']}\n{r['text']}" if r["label"] == "Chunk" else r["text"]
            items.append(
                ContextItem(
                    node_id=i, label=r["label"], text=text, score=score.get(i, 0.0), why=why, chunk_ids=r["chunks"]
                )
            )
        # Passages ranked by the PPR mass of the retrieved nodes taken from them: T itself, and the
        # chunk an S or R came from. A and H summarise many passages, so they rank none.
        mass: dict[str, float] = {}
        for it in items:
            if it.label in ("Chunk", "SemanticUnit", "Relation"):
                for c in it.chunk_ids:
                    mass[c] = mass.get(c, 0.0) + it.score / len(it.chunk_ids)
        notes = {
            "chunk_ranking": sorted(mass, key=lambda c: -mass[c]),
            "entities": names,
            "entry_points": len(entry),
            "similar": list(similar),
            "exact_entities": sum(r["label"] == "Entity" for r in exact),
            "overviews": sum(r["label"] == "Overview" for r in exact),
            "projection_reused": proj.reused,
        }
        return items[: p.top_k], Subgraph(nodes=list(dict.fromkeys(entry + keep))), notes
