"""SG-RAG's context (§4.4 "Generate Answer"): the matched subgraphs — or, with no exact match, the
1-hop subgraph around the question's entities (Algorithm 1 lines 19–24) — as the LLM's prompt.

The paper's prompt holds each subgraph's "semantic labels and descriptions" (Appendix I: a relation
paragraph). Its knowledge graph is written by an LLM from the text (Table 9), so a description there
paraphrases the passage it came from. An offline graph's descriptions are one sentence (spaCy) or
none, so the passages themselves stand in for what the paper's descriptions carry: after the labels
and descriptions come the **source passages** of the listed entities and relations (``passages``),
the ones nearest the question first, while the budget lasts. The subgraph decides which passages;
the question's vector only orders them (``passages=False``: the labels and descriptions alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphstrata.algorithms.sgrag import Edge
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.base import ContextItem, hnsw_candidates
from graphstrata.retrieval.baselines import chunk_items
from graphstrata.retrieval.shared import beside

#: source passages read for one answer (the nearest the question): enough to fill any sensible
#: budget, bounded for an entity mentioned in thousands of chunks
MAX_PASSAGES = 50
#: fewest tokens a passage is counted for when the budget bounds how many are read
PASSAGE_TOKENS = 50
#: the question's nearest chunks whose cosines order the citations (the rest follow, in id order)
NEAR_CHUNKS = 100


def subgraph_items(
    db: Database,
    entities: list[str],
    edges: list[Edge],
    info: dict[str, dict[str, Any]],
    edge_info: dict[tuple, dict[str, Any]],
    *,
    answer_k: int,
    n_matches: int = 0,
    support: dict[str, int] | None = None,
    fallback: bool = False,
    nearby: Nearby | None = None,
    budget: int = 4000,
) -> list[ContextItem]:
    """The answer entities (or, on the fallback, the anchors) with their descriptions, then the
    relations as ``(subject; predicate; object): description``, then — given the question's
    ``nearby`` chunks — their source passages nearest the question first. Each item cites its
    source chunks, the question's nearest first."""
    support = support or {}
    edges = edges[: max(answer_k * 4, 20)]
    # the fallback's g'' describes its anchors and their neighbours, as many as its edges
    entities = entities[: len(edges) + answer_k] if fallback else entities[:answer_k]
    # two independent round trips: the relations' sources are read beside the entities'
    keyed = [{"key": i, "src": e.src, "dst": e.dst, "predicate": e.relation} for i, e in enumerate(edges)]
    edge_read = beside(lambda: db.read(query("sgrag.relation_chunks"), edges=keyed))
    ent_rows = {r["id"]: r for r in db.read(query("sgrag.entity_chunks"), ids=entities)}
    edge_rows = {r["key"]: r for r in edge_read.result()}
    near = nearby.cosines if nearby is not None else {}

    def cited(row: dict[str, Any]) -> list[str]:  # the question's nearest source first (stable otherwise)
        return sorted(row.get("chunks", []), key=lambda c: -near.get(c, -2.0))

    items: list[ContextItem] = []
    for rank, eid in enumerate(entities):
        e = info[eid]
        head = f"{e['name']} ({e['type']})" if e["type"] else e["name"]
        text = f"{head}: {e['description']}" if e["description"] else head
        src = ent_rows.get(eid, {})
        items.append(
            ContextItem(
                node_id=eid,
                label="Entity",
                text=("Answer: " if not fallback else "") + text,
                score=(support.get(eid, 0) / max(n_matches, 1)) if not fallback else 1.0 / (rank + 1),
                why="query entity (no exact match; 1-hop fallback)"
                if fallback
                else f"bound to the UNK target in {support.get(eid, 0)} of {n_matches} exact subgraph match(es)",
                chunk_ids=cited(src),
                doc_titles=src.get("titles", []),
            )
        )
    for i, e in enumerate(edges):
        d = edge_info.get((e.src, e.dst, e.relation), {})
        text = f"({info[e.src]['name']}; {e.relation}; {info[e.dst]['name']})"  # a triple, not prose
        if d.get("description"):
            text += f": {d['description']}"
        src = edge_rows.get(i, {})
        rel_ids = src.get("relations", [])
        items.append(
            ContextItem(
                node_id=rel_ids[0] if rel_ids else f"{e.src}|{e.relation}|{e.dst}",
                label="Relation",
                text=text,
                score=1.0 / (i + 2),
                why=(
                    "edge incident to a query entity (1-hop fallback)"
                    if fallback
                    else "edge of an exact subgraph match"
                ),
                chunk_ids=cited(src),
                doc_titles=src.get("titles", []),
            )
        )
    if nearby is not None:
        cites = list(dict.fromkeys(c for it in items for c in it.chunk_ids))
        # no more passages than the budget could hold at PASSAGE_TOKENS each
        limit = min(MAX_PASSAGES, max(1, budget // PASSAGE_TOKENS))
        items += source_passages(db, sorted(cites, key=lambda c: -near.get(c, -2.0))[:limit], nearby.vector)
    return items


@dataclass(frozen=True)
class Nearby:
    """The question's vector and the NEAR_CHUNKS chunks the vector index finds nearest it, as
    cosines: how a subgraph's sources are ordered without scoring each (an entity may be in thousands)."""

    vector: list[float]
    cosines: dict[str, float]

    @classmethod
    def of(cls, db: Database, vector: list[float]) -> Nearby:
        rows = db.read(
            query("sgrag.near_chunks"), k=NEAR_CHUNKS, candidates=hnsw_candidates(NEAR_CHUNKS), vector=vector
        )
        return cls(vector, {r["id"]: r["cosine"] for r in rows})


def source_passages(db: Database, chunk_ids: list[str], vector: list[float]) -> list[ContextItem]:
    """The chunks ``chunk_ids`` name, as passages, nearest the question first (exact cosines)."""
    rows = db.read(query("sgrag.source_passages"), ids=chunk_ids, vector=vector, limit=len(chunk_ids))
    return chunk_items(
        rows, "source passage of the subgraph's entities and relations (ordered by similarity to the question)"
    )
