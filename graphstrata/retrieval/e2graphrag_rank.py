"""E2GraphRAG's rankings and output format (§3.2, "Entity-Aware Ranking", "Occurrence Ranking", and the
"entity1-entity2-…: chunks" evidence format), as pure functions over the chunk→entity index that
:mod:`graphstrata.retrieval.e2graphrag` reads from Neo4j."""

from __future__ import annotations

import math
from collections import defaultdict

from graphstrata.retrieval.base import ContextItem
from graphstrata.text.tokens import join_overlapping


def entity_weights(entities: list[dict], n_chunks: int, how: str) -> dict[str, float]:
    """Entity id → the weight of one of its occurrences: 1 (``uniform``, the paper's counts), or its
    inverse document frequency log(n_chunks / df) (``idf``; never below 0)."""
    if how == "uniform":
        return {e["id"]: 1.0 for e in entities}
    return {e["id"]: max(0.0, math.log(max(n_chunks, 1) / max(e["df"], 1))) for e in entities}


def entity_aware_rank(
    chunks: set[str],
    info: dict[str, dict],
    sim: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
) -> list[str]:
    """Entity-Aware Ranking (§3.2): distinct query entities in the chunk, then their occurrences
    (the chunk→entity index), each entity counted with its weight (default 1, the paper's counts);
    ties by similarity to the question (`sim`: the paper ranks the chunks of one book, where ties
    fall in document order; across documents that order means nothing), then in document order."""
    sim = sim or {}
    w = weights or {}

    def key(c: str) -> tuple:
        occ = info[c]["occ"]
        coverage = sum(w.get(e, 1.0) for e in occ)
        weighted = sum(n * w.get(e, 1.0) for e, n in occ.items())
        return (-coverage, -weighted, -sim.get(c, 0.0), info[c]["doc_id"] or "", info[c]["ordinal"] or 0, c)

    return sorted(chunks, key=key)


def format_local(
    chosen: list[str],
    keys: dict[str, list[str]],
    info: dict[str, dict],
    texts: dict[str, dict],
    ents: dict[str, str],
    weights: dict[str, float] | None = None,
) -> list[ContextItem]:
    """ "entity1-entity2-…: chunks": one group per entity key (the union of the pairs that selected
    the chunk), groups by coverage (entities in the key) then occurrences, each entity with its
    weight (default 1); within a group the chunks in document order (documents by their best chunk's
    rank), adjacent ones merged."""
    w = weights or {}
    rank = {c: i for i, c in enumerate(chosen)}
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for c in chosen:
        groups[tuple(keys[c])].append(c)

    def group_key(k: tuple[str, ...]) -> tuple:
        members = groups[k]
        occ = sum(info[c]["occ"].get(e, 0) * w.get(e, 1.0) for c in members for e in k)
        return (-sum(w.get(e, 1.0) for e in k), -occ, min(rank[c] for c in members))

    items: list[ContextItem] = []
    for k in sorted(groups, key=group_key):
        doc_rank: dict[str, int] = {}
        for c in groups[k]:
            d = info[c]["doc_id"]
            doc_rank[d] = min(doc_rank.get(d, rank[c]), rank[c])
        members = sorted(groups[k], key=lambda c: (doc_rank[info[c]["doc_id"]], info[c]["ordinal"]))
        runs: list[list[str]] = []
        for c in members:
            last = runs[-1][-1] if runs else None
            if (
                last is not None
                and info[last]["doc_id"] == info[c]["doc_id"]
                and info[c]["ordinal"] == info[last]["ordinal"] + 1
            ):
                runs[-1].append(c)
            else:
                runs.append([c])
        label = "-".join(ents[e] for e in k)
        for run in runs:
            first = texts[run[0]]
            body = join_overlapping([texts[c]["text"] for c in run], first["overlap"])
            covered = {e for c in run for e in info[c]["occ"]}
            occ = sum(n for c in run for n in info[c]["occ"].values())
            items.append(
                ContextItem(
                    node_id=run[0],
                    label="Chunk",
                    text=f"{label}: {first['title']}\n{body}",
                    score=len(covered) + occ / (occ + 1),
                    why=f"mentions {label} (entity pair(s) within h hops on the co-occurrence graph); "
                    f"{len(covered)} query entities, {occ} occurrences"
                    + (f"; {len(run)} adjacent chunks merged" if len(run) > 1 else ""),
                    chunk_ids=run,
                    doc_titles=[first["title"]] if first["title"] else [],
                )
            )
    return items
