"""Whole-graph stages deferred on a small increment.

NodeRAG's important entities (k-core and betweenness over all of G1), its communities (Leiden) and
its semantic matching (K-means over S/A/H) are functions of the whole graph: no part of them can be
updated for a few new documents without running them again, and together they are half of a full
augment. DA-RAG's chunk layer (§4.1) is one too: a new relation between two old entities changes
the weight of old chunk pairs, and an entity that crosses ``darag_hub_mentions`` leaves every pair
it made. Entity synonyms compare every pair of names (string rules and embeddings).

After an ingest that changed under ``defer_share`` of the chunks their last full run saw, each keeps
what that run wrote and says so in its report (``deferred``): the new documents' entities are not yet
candidates for important entities, members of a community or a K-means group, or linked to their
synonyms, and their chunks have no DA-RAG chunk edges, until the next full run — which comes by itself
once the changes since pass the share (or at once with ``graphstrata augment --full``,
``defer_share=0``). The top-k layers, descriptions, core chunks and summary trees are updated for the
new documents on every run. bench/scale.py measures what a deferred state costs in Recall@5.

A run records, per stage, the chunk count it saw, the database's clock at its start and a
fingerprint of the parameters that shape its layer: a change of those (or of LLM) means a full run.
The record says ``writing`` while the stage runs, so a run that stopped half-way is never kept.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphstrata.augment.params import AugmentParams
from graphstrata.cypher import query

if TYPE_CHECKING:  # the package imports this module when it runs a stage
    from graphstrata.augment import AugmentContext

#: the stages that run whole or not at all (graphstrata/augment/noderag.py), and the parameters that
#: shape each one's layer
WHOLE_GRAPH = {
    "entity_synonyms": ("synonym_threshold", "knn_exact_max_nodes", "ann_cell_size", "ann_nprobe"),
    "important_entities": ("betweenness_samples",),
    "communities": ("min_community_texts", "max_high_level"),
    "semantic_matching": ("kmeans_sample",),
    "darag_chunk_edges": ("darag_hub_mentions", "darag_chunk_links"),
}


@dataclass(frozen=True)
class Seen:
    """What a full run of a stage saw: the chunks then, when it started, the parameters' fingerprint."""

    chunks: int
    since_ms: int
    fingerprint: str

    def state(self) -> str:
        return f"full:{self.chunks}:{self.since_ms}:{self.fingerprint}"

    @classmethod
    def parse(cls, state: str | None) -> Seen | None:
        parts = (state or "").split(":")
        if len(parts) != 4 or parts[0] != "full":
            return None
        return cls(int(parts[1]), int(parts[2]), parts[3])


def fingerprint(name: str, params: AugmentParams, llm: bool) -> str:
    shaping = {k: getattr(params, k) for k in WHOLE_GRAPH[name]}
    return hashlib.sha256(json.dumps([shaping, llm], sort_keys=True, default=str).encode()).hexdigest()[:12]


def _layer(name: str) -> str:
    return f"full_{name}"


def deferred(ctx: AugmentContext, name: str) -> dict[str, Any] | None:
    """The report (counts, notes) of a deferred stage when its last full run saw nearly this corpus, else
    None (run it)."""
    p = ctx.params
    assert isinstance(p, AugmentParams)
    if name not in WHOLE_GRAPH or p.defer_share <= 0:
        return None
    row = ctx.db.read_one(query("augment.layer_state"), layer=_layer(name))
    seen = Seen.parse(row["state"] if row else None)
    if seen is None or seen.chunks == 0 or seen.fingerprint != fingerprint(name, p, ctx.llm is not None):
        return None
    now = ctx.db.read_one(query("augment.corpus_change"), since=seen.since_ms)
    removed = max(0, seen.chunks + now["fresh"] - now["chunks"])  # chunks of deleted or replaced documents
    changed = now["fresh"] + removed
    if changed > p.defer_share * seen.chunks:
        return None
    return {
        "counts": {"changed_chunks": changed, "chunks_at_full_run": seen.chunks},
        "notes": {
            "deferred": f"{changed} of {seen.chunks} chunks changed since the last full run "
            f"(defer_share {p.defer_share}): its layer is kept until then"
        },
    }


def starting(ctx: AugmentContext, name: str) -> Seen | None:
    """Mark a whole-graph stage as being written; returns what to record when it has finished."""
    if name not in WHOLE_GRAPH:
        return None
    p = ctx.params
    assert isinstance(p, AugmentParams)
    now = ctx.db.read_one(query("augment.corpus_now"))
    ctx.db.write(query("augment.set_layer_state"), layer=_layer(name), state="writing")
    return Seen(now["chunks"], now["now"], fingerprint(name, p, ctx.llm is not None))


def finished(ctx: AugmentContext, name: str, seen: Seen | None) -> None:
    if seen is not None:
        ctx.db.write(query("augment.set_layer_state"), layer=_layer(name), state=seen.state())
