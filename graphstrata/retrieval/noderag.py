"""NodeRAG retrieval (Xu et al., arXiv:2504.11544, §2.5, Appendix C.4): dual search for entry points,
shallow personalized PageRank for cross nodes, then the filter to retrievable node types.

1. Dual search: accurate search of the query's entities N^q on entity names (N) and overview
   titles (O); similarity search: the top-k of semantic units (S), attributes (A), high-level
   elements (H) and text chunks (T) together, as one HNSW over all of them would rank them.
2. Shallow PPR from the entry points on the heterograph, the paper's recurrence exactly:
   pi(0) = p, pi(k) = alpha*p + (1 - alpha) P^T pi(k-1), alpha = 0.5, t = 2; the top-k nodes of each
   type are the cross nodes. The heterograph is walked in memory (graphstrata/walkgraph.py,
   algorithms/ppr.py with ``from_seeds``), read again when the stored graph changes.
3. Entry points and cross nodes of the retrievable types T, S, A, H, R form the context.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.base import (
    TOP_K,
    ContextItem,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    hnsw_candidates,
    register,
)
from graphstrata.retrieval.baselines import MAX_CLAUSE_WORDS
from graphstrata.retrieval.entries import SimilaritySearch, entry_points
from graphstrata.retrieval.linking import Linked, LinkedEntity, link_entities, question_entities
from graphstrata.retrieval.shared import beside
from graphstrata.schema import VECTOR_INDEXES as ALL_VECTOR_INDEXES
from graphstrata.walkgraph import WalkGraph, walk_graph

RETRIEVABLE = ("Chunk", "SemanticUnit", "Attribute", "HighLevel", "Relation")
VECTOR_INDEXES = {label: ALL_VECTOR_INDEXES[label] for label in ("SemanticUnit", "Attribute", "HighLevel", "Chunk")}
GRAPH = "noderag.heterograph"
#: the edges from a semantic unit or relation to the chunk it was read from
PROVENANCE = frozenset({"HAS_UNIT", "HAS_RELATION"})
#: the KG's provenance (chunk -> entity): read for the feedback entities, not walked
CHUNK_MENTIONS = frozenset({"CHUNK_MENTIONS"})
#: the heterograph's edges, which PPR walks
WALKED = frozenset(
    {"HAS_UNIT", "MENTIONS", "SUBJECT_OF", "OBJECT", "HAS_ATTRIBUTE", "GROUPS", "TITLES", "SEMANTIC", "SYNONYM"}
    | {"HAS_RELATION"}
)


def warm(db: Database, concurrency: int = 2) -> WalkGraph:
    """Read the heterograph now (after augment, at server start), so that the first question does not."""
    return walk_graph(db, GRAPH)[0]


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
    tolerance: float = Field(
        0.0,
        ge=0,
        le=0.01,
        description="PPR by residual pushes: a node passes its mass on once it holds more than this times its "
        "edges (algorithms/ppr.py; 0: every node, the paper's recurrence exactly)",
    )
    top_k: int | None = Field(None, ge=1, le=1000, description=f"{TOP_K} (default: every entry and cross node)")
    fact_k: int = Field(
        0,
        ge=0,
        le=100,
        description="relations nearest to the question as extra entry points (HippoRAG 2 fact matching)",
    )
    # 1.0: hipporag's feedback_weight, not tuned for NodeRAG (0.5 measured the same on all three graphs)
    feedback: float = Field(
        1.0,
        ge=0,
        le=10,
        description="entities of the best similarity entry point's passage as accurate-search hits, their total "
        "weight relative to the linked query entities' (HippoRAG 2's fact entities; 0: off)",
    )
    exact_share: float = Field(
        0.5, ge=0, le=1, description="`weighted`: share of the start vector on the accurate-search hits"
    )
    personalization: Literal["uniform", "weighted"] = Field(
        "weighted",
        description="PPR start vector: `uniform` over the entry points (the paper, §2.5), or `weighted`: "
        "similarity entry points by their cosine, linked entities by specificity (1/chunks, HippoRAG 2)",
    )

    def entry_points(self) -> SimilaritySearch:
        return SimilaritySearch(
            tuple(VECTOR_INDEXES.values()),
            self.entry_k,
            hnsw_candidates(self.entry_k),
            self.fact_k,
            hnsw_candidates(self.fact_k),
        )


def personalization(
    similar: dict[str, float],
    linked: list[LinkedEntity],
    overviews: dict[str, float],
    how: str,
    facts: dict[str, float] | None = None,
    exact_share: float = 0.5,
    feedback: dict[str, float] | None = None,
) -> dict[str, float]:
    """Entry point -> its share of the PPR start vector (sums to 1).

    ``uniform``: every entry point alike (NodeRAG §2.5). ``weighted``: ``1 - exact_share`` of the mass
    on the similarity entry points in proportion to their cosine, ``exact_share`` on the accurate-search
    hits (linked entities in
    proportion to link score x specificity, overview titles alike; matched facts by their cosine,
    scaled to the best linked entity); all of it on one side when the other found nothing.
    """
    exact: dict[str, float] = {e.id: e.score * e.specificity for e in linked}
    top = max(exact.values(), default=1.0)
    for i, cos in (facts or {}).items():
        exact[i] = exact.get(i, 0.0) + top * max(cos, 0.0)
    for i, w in (feedback or {}).items():
        exact[i] = exact.get(i, 0.0) + w
    for i in overviews:
        exact.setdefault(i, max(exact.values(), default=1.0))
    if how == "uniform":
        ids = list(dict.fromkeys([*exact, *similar]))
        return {i: 1.0 / len(ids) for i in ids} if ids else {}
    out: dict[str, float] = {}
    sides = [(w, share) for w, share in ((similar, 1 - exact_share), (exact, exact_share)) if w and sum(w.values()) > 0]
    mass = sum(share for _, share in sides)
    for side, share in sides:
        total = sum(side.values())
        for i, w in side.items():
            out[i] = out.get(i, 0.0) + w / total * share / mass
    return out


def feedback_entities(graph: WalkGraph, entry: str) -> dict[str, float]:
    """Entity -> specificity (1 / passages mentioning it) for the entities of `entry`'s passage (the
    entry point itself when it is a chunk, else the chunk it was read from)."""
    n = graph.index.get(entry)
    if n is None:  # newer than the walked graph
        return {}
    passages = [entry] if graph.labels[n] == "Chunk" else graph.neighbours(entry, PROVENANCE, "Chunk")
    out: dict[str, float] = {}
    for c in passages[:1]:
        for e in graph.neighbours(c, CHUNK_MENTIONS, "Entity"):
            out[e] = 1.0 / max(1, len(graph.neighbours(e, CHUNK_MENTIONS, "Chunk")))
    return out


@register
class NodeRAGRetriever(Retriever):
    name = "noderag"
    fusion_rank = 3
    summary = "NodeRAG: dual search (exact N/O, vector S/A/H/T) + shallow personalized PageRank on the heterograph."
    Params = NodeRAGParams

    def _accurate(self, question: str) -> tuple[list[str], str, Linked]:
        """Query entities, their links to N and the overview titles (O) that match them: one round trip
        after the parse (retrieval/linking.py)."""
        names, source = question_entities(question, self.settings, self.llm)
        names = names[:MAX_CLAUSE_WORDS]  # within Lucene's clause limit however long the question
        return names, source, link_entities(self.db, names)

    def _retrieve(self, question: str, p: NodeRAGParams, t: Timer) -> Retrieved:
        # The accurate search (query entities from spaCy or the LLM, linked to N, matched on O) runs
        # beside the similarity search (embedding, vector indexes): neither needs the other.
        accurate = beside(self._accurate, question)
        with t.stage("embed"):
            vector = self.embed_query(question, beside_parse=not self.settings.llm_enabled)
        with t.stage("similarity_search"):
            *_, similarity_rows, version = entry_points(self.db, vector, p)
        with t.stage("accurate_search"):
            names, source, (linked, exact_rows) = accurate.result()
        rows = similarity_rows + exact_rows
        overviews = {r["id"]: r["score"] for r in rows if r["via"] == "exact"}
        similar = {r["id"]: r["score"] for r in sorted(rows, key=lambda r: -r["score"]) if r["via"] == "similarity"}
        facts = {r["id"]: r["score"] for r in rows if r["via"] == "fact"}
        with t.stage("graph"):
            graph, reused = walk_graph(self.db, GRAPH, version)
        fb: dict[str, float] = {}
        if p.feedback > 0 and similar:
            fb = feedback_entities(graph, next(iter(similar)))
            if fb:  # as much weight in all as the linked query entities (all of the exact side without them)
                linked_mass = sum(e.score * e.specificity for e in linked) or 1.0
                scale = p.feedback * linked_mass / sum(fb.values())
                fb = {i: w * scale for i, w in fb.items()}
        seeds = personalization(similar, linked, overviews, p.personalization, facts, p.exact_share, fb)
        entry = list(seeds)
        if not entry:
            return Retrieved([], Subgraph(), {"entities": names, "entities_from": source, "entry_points": 0})
        with t.stage("ppr"):
            pi = graph.ppr(seeds, 1 - p.alpha, p.iterations + 1, WALKED, from_seeds=True, tolerance=p.tolerance)
            ranked = [{"id": i, "label": label, "score": s} for i, label, s in graph.top(pi, max(200, 20 * p.cross_k))]
        score = {r["id"]: r["score"] for r in ranked}
        # cross nodes: the top cross_k of each retrievable type by PPR score
        per_type: dict[str, list[str]] = {}
        for r in ranked:
            if r["label"] in RETRIEVABLE and len(per_type.setdefault(r["label"], [])) < p.cross_k:
                per_type[r["label"]].append(r["id"])
        cross = {i for ids in per_type.values() for i in ids}
        keep = list(
            dict.fromkeys([i for i in entry if i in similar] + sorted(cross, key=lambda i: (-round(score[i], 12), i)))
        )
        with t.stage("items"):
            items = self._items(graph, keep, score, similar, cross)
        notes = {
            "entities": names,
            "entities_from": source,
            "linked": [f"{e.query_name} -> {e.name} ({e.via})" for e in linked],
            "entry_points": len(entry),
            "similar": list(similar),
            "overviews": len(overviews),
            "graph_reused": reused,
        }
        return Retrieved(items[: p.top_k], Subgraph(nodes=list(dict.fromkeys(entry + keep))), notes)

    def _items(
        self, graph: WalkGraph, keep: list[str], score: dict[str, float], similar: dict, cross: set
    ) -> list[ContextItem]:
        """The context, best first. A passage (T) ranks by the PPR mass of itself and of the semantic
        units and relations taken from it; those units and relations are then read in the passage
        (their text is its text, or a lemma-level triple of it) rather than as items of their own.
        Attributes and high-level elements stand alone only when a model wrote them: the no-LLM
        substitutes copy text a passage or unit already holds. Which is which, and each unit's
        passage, the walked graph already knows: only texts are read."""

        def why(i: str) -> str:
            parts = (["entry point (similarity search)"] if i in similar else []) + (
                ["cross node (PPR)"] if i in cross else []
            )
            return " + ".join(parts)

        mass: dict[str, float] = {}
        via: dict[str, list[str]] = {}
        own: list[str] = []
        for i in keep:
            n = graph.index.get(i)
            if n is None:
                continue
            label, s = graph.labels[n], score.get(i, 0.0)
            if graph.own_text[n]:
                own.append(i)
                continue
            if label == "Chunk":
                chunks = [i]
            elif label in ("SemanticUnit", "Relation"):
                chunks = graph.neighbours(i, PROVENANCE, "Chunk")[:5]
            else:  # an Attribute or HighLevel no model wrote
                continue
            for c in chunks:
                mass[c] = mass.get(c, 0.0) + s / len(chunks)
                via.setdefault(c, []).append(f"{label} {why(i)}")
        items: list[ContextItem] = []
        if own:
            for r in self.db.read_plain(query("noderag.retrievable"), ids=own):
                items.append(
                    ContextItem(
                        node_id=r["id"],
                        label=r["label"],
                        text=r["text"],
                        score=score.get(r["id"], 0.0),
                        why=why(r["id"]),
                        chunk_ids=r["chunks"],
                    )
                )
        for c, m in mass.items():  # texts read after (Retriever.retrieve, or fusion for all its members)
            why_c = "; ".join(dict.fromkeys(via[c]))
            items.append(ContextItem(node_id=c, label="Chunk", text="", score=m, why=why_c, chunk_ids=[c]))
        return sorted(
            items, key=lambda it: (-round(it.score, 12), it.node_id)
        )  # ties by id: store order must not matter
