"""HippoRAG 2 retrieval (Gutiérrez et al., "From RAG to Memory", arXiv:2502.14802, §3), read for a
graph built without an LLM as well as with one.

1. Graph (§3.1): passage nodes joined to the entities (phrase nodes) they mention, relation edges
   between entities, synonym edges from entity resolution (augment stage ``entity_synonyms``).
2. Seed nodes (§3.2–3.3):
   - phrase seeds: the question's entities linked to the KG (retrieval/linking.py), weighted by
     link score x node specificity 1/|P_i| (|P_i|: passages mentioning the entity);
   - query-to-triple (the paper's step): the ``fact_k`` facts (Relation nodes with a vector, as an
     LLM or the user's extractions give them) nearest the question seed their subject and object
     entities, each by its fact's score x specificity, as much mass in total as the linked entities
     (``feedback_weight`` x theirs). A graph whose relations have no vector (spaCy's) has no facts
     to match: the passage nearest the question stands in for them (its entities by specificity).
     The paper's LLM filter of the facts is not applied;
   - passage seeds: the ``passage_k`` passages nearest the question, by min-max normalised dense
     score x ``passage_weight`` (the paper's weight factor 0.05).
3. Personalized PageRank (damping 0.5, the paper's) over that graph, as residual pushes that leave
   a node's mass in place while it is below ``tolerance`` x its edges (algorithms/ppr.py: the walk's
   cost then follows the seeds, not the corpus); passages ranked by their probability are the context.
   The graph is small beside the store (passages, entities and their
   links), so it is held in memory as a sparse matrix per database connection and reloaded when
   the stored graph changes: the walk then costs well under a millisecond, where a GDS call costs
   a round trip and its own set-up (algorithms/ppr.py follows GDS's recurrence exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from graphstrata.retrieval.entries import PassageSeeds, entry_points
from graphstrata.retrieval.linking import LinkedEntity, link_entities, question_entities
from graphstrata.retrieval.shared import beside
from graphstrata.walkgraph import WalkGraph, walk_graph

GRAPH = "hipporag.passage_graph"
WITHOUT_RELATIONS = frozenset({"MENTIONS", "SYNONYM"})


def warm(db: Database, concurrency: int = 2) -> WalkGraph:
    """Read the passage graph now (after augment, at server start), so that the first question does not."""
    return walk_graph(db, GRAPH)[0]


class HippoRAGParams(RetrieverParams):
    top_k: int = Field(10, ge=1, le=1000, description=f"{TOP_K} (passages)")
    passage_k: int = Field(
        200, ge=1, le=2000, description="passages nearest the question that seed the walk by their dense score"
    )
    passage_weight: float = Field(
        0.05, ge=0, le=10, description="weight of the passage seeds against the entity seeds (paper: 0.05)"
    )
    feedback_weight: float = Field(
        1.0,
        ge=0,
        le=10,
        description="entities of the nearest passage: their total seed mass relative to the linked "
        "query entities' (0: query entities only)",
    )
    damping: float = Field(0.5, gt=0, lt=1, description="PPR damping factor (paper: 0.5)")
    # the paper runs PPR to convergence; at damping 0.5, 10 iterations leave under 0.1% of the mass
    iterations: int = Field(10, ge=1, le=100, description="PPR iterations (counting the start as the first)")
    tolerance: float = Field(
        1e-5,
        ge=0,
        le=0.01,
        description="PPR by residual pushes: a node passes its mass on once it holds more than this times its "
        "edges, so a step reads fewer than 1/tolerance edges whatever the corpus (0: every node, the exact "
        "iteration; 1e-5 gave the exact Recall@5 on the three dev graphs: bench/results/variants.md)",
    )
    fact_k: int = Field(
        5, ge=0, le=100, description="facts nearest the question whose entities seed the walk (paper: 5; 0: none)"
    )
    relation_edges: bool = Field(
        False,
        description="walk the entity-entity relation edges too (paper: yes; measured without them: "
        "bench/results/graphs.md)",
    )

    def entry_points(self) -> PassageSeeds:
        return PassageSeeds(self.passage_k, hnsw_candidates(self.passage_k))


def seed_weights(
    passages: Mapping[str, float],
    linked: list[LinkedEntity],
    feedback: list[dict],
    passage_weight: float,
    feedback_weight: float,
) -> tuple[dict[str, float], dict[str, float]]:
    """(passage id -> weight, entity id -> weight) of the PPR start vector, before it is normalised.

    Entity seeds sum to 1: linked query entities by score x specificity, the nearest passage's
    entities by that passage's score x specificity scaled to ``feedback_weight`` x the linked mass
    (all of it when nothing links). Passage seeds: min-max normalised dense score x passage_weight.
    """
    entities: dict[str, float] = {}
    for e in linked:
        entities[e.id] = entities.get(e.id, 0.0) + e.score * e.specificity
    linked_mass = sum(entities.values())
    fb = {f["id"]: f.get("score", 1.0) / max(1, f["chunks"]) for f in feedback}
    fb_mass = sum(fb.values())
    if fb_mass > 0 and feedback_weight > 0:
        scale = feedback_weight * (linked_mass if linked_mass > 0 else 1.0) / fb_mass
        for i, w in fb.items():
            entities[i] = entities.get(i, 0.0) + w * scale
    total = sum(entities.values())
    entities = {i: w / total for i, w in entities.items()} if total > 0 else {}
    lo, hi = (min(passages.values()), max(passages.values())) if passages else (0.0, 0.0)
    chunks = {
        i: passage_weight * ((score - lo) / (hi - lo) if hi > lo else 1.0)
        for i, score in passages.items()
        if passage_weight > 0
    }
    return {i: w for i, w in chunks.items() if w > 0}, entities


@register
class HippoRAGRetriever(Retriever):
    name = "hipporag"
    fusion_rank = 2
    summary = (
        "HippoRAG 2: personalized PageRank over passages and entities, seeded by the question's "
        "entities, the nearest passage's entities and dense passage scores."
    )
    Params = HippoRAGParams

    def _link(self, question: str) -> tuple[list[str], str, list[LinkedEntity]]:
        names, source = question_entities(question, self.settings, self.llm)
        return names, source, link_entities(self.db, names).entities

    def _retrieve(self, question: str, p: HippoRAGParams, t: Timer) -> Retrieved:
        # Query entities (spaCy or the LLM) and their linking run beside the embedding and the dense
        # search: neither needs the other, and the spaCy pass costs as much as the embedding.
        linking = beside(self._link, question)
        with t.stage("embed"):
            vector = self.embed_query(question, beside_parse=not self.settings.llm_enabled)
        with t.stage("seeds"):
            passages, feedback, _, version = entry_points(self.db, vector, p)
        facts: list[dict] = []
        if p.fact_k:
            with t.stage("facts"):
                facts = self.db.read_plain(
                    query("hipporag.query_facts"), k=p.fact_k, candidates=hnsw_candidates(p.fact_k), vector=vector
                )
        if facts:  # the facts' entities, not the nearest passage's, are the query-to-triple seeds
            feedback = facts
        with t.stage("entities"):
            names, source, linked = linking.result()
        chunks, entities = seed_weights(passages, linked, feedback, p.passage_weight, p.feedback_weight)
        notes: dict[str, Any] = {
            "entities": names,
            "entities_from": source,
            "linked": [f"{e.query_name} -> {e.name} ({e.via})" for e in linked],
            "feedback": [f["name"] for f in feedback],
            "feedback_from": "facts" if facts else "nearest passage",
            "seeds": {"passages": len(chunks), "entities": len(entities)},
        }
        with t.stage("graph"):
            graph, notes["graph_reused"] = walk_graph(self.db, GRAPH, version)
        with t.stage("ppr"):
            types = None if p.relation_edges else WITHOUT_RELATIONS
            pi = graph.ppr(chunks | entities, p.damping, p.iterations, types, tolerance=p.tolerance)
            top = graph.top(pi, p.top_k, ("Chunk",))
        if not top:
            return Retrieved([], Subgraph(), notes)
        seeded = set(chunks)
        items = [  # their texts are read after (Retriever.retrieve, or fusion for all its members at once)
            ContextItem(
                node_id=i,
                label="Chunk",
                text="",
                score=score,
                why="PPR from " + ("the question's passages and entities" if i in seeded else "the entities"),
                chunk_ids=[i],
            )
            for i, _, score in top
        ]
        return Retrieved(items, Subgraph(nodes=[i.node_id for i in items] + list(entities)), notes)
