"""DA-RAG's layers and communities as arrays (§4): the chunk layer (whole, in memory per graph
version) and the two fine layers of a working subgraph as local-index edge lists with embeddings,
the EACS communities found on them as candidates, and the extractive text of a community that its
report (§5.1) starts from.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from graphstrata.algorithms.eacs import TrussIndex, density_bound, diameter_bound, pairwise_similarity
from graphstrata.algorithms.qpeel import Community
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.walkgraph import read_once

Layer = Literal["kg", "similarity"]
LAYER_TITLE = {"chunk": "Semantic chunk layer", "kg": "Knowledge graph layer", "similarity": "Similarity layer"}
REL_TYPE = {"chunk": "CHUNK_RELATED", "kg": "RELATED", "similarity": "SIMILAR"}
MAX_RENDER_ITEMS = 60  # entities / relation lines shown per community (report prompt and no-LLM rendering)
MAX_DESCRIPTION_CHARS = 400


@dataclass
class LayerGraph:
    """One layer's subgraph as arrays: ``ids[i]`` is the node id of local node ``i``."""

    ids: list[str]
    emb: np.ndarray
    edges: np.ndarray  # (m, 2) local ids


@dataclass
class Candidate:
    layer: str
    community: Community
    members: list[str]  # node ids
    key: str
    duplicate_of: int | None = None  # a higher k of the same layer with the same nodes
    llm_score: float | None = None
    report: str | None = None
    rendering: str = ""
    selected: bool = False
    chunk_ids: list[str] = field(default_factory=list)
    avg_similarity: float = 0.0

    @property
    def score(self) -> float:
        """S of §5.1: the LLM's relevance score when there is one, else QRScore."""
        return self.llm_score if self.llm_score is not None else self.community.qrscore

    def metrics(self) -> dict[str, Any]:
        c = self.community
        n = int(c.nodes.size)
        return {
            "layer": self.layer,
            "k": c.k,
            "size": n,
            "n_edges": len(c.edges),
            "qrscore": round(c.qrscore, 4),
            "density": round(c.density, 4),
            "density_bound": round(density_bound(n, c.k), 4),
            "diameter": c.diameter,
            "diameter_bound": diameter_bound(n, c.k),
            "avg_similarity": round(self.avg_similarity, 4),
        }


def as_matrix(vectors: list[Any], dim: int) -> np.ndarray:
    """Embeddings as an (n, dim) float matrix; a missing embedding is a zero row (cosine 0)."""
    out = np.zeros((len(vectors), dim), dtype=np.float64)
    for i, v in enumerate(vectors):
        if v is not None and len(v) == dim:
            out[i] = v
    return out


def community_key(layer: str, k: int, members: list[str]) -> str:
    digest = hashlib.sha1("\n".join(sorted(members)).encode()).hexdigest()[:12]
    return f"eacs:{layer}:k{k}:{digest}"


def clip(text: str | None, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class ChunkLayer:
    """The Semantic Chunk Layer L_C (§4.1) in memory: every chunk's text embedding, its attribute
    (the embedding of its title + description; the text's where augment made none), the
    CHUNK_RELATED edges, and their truss decomposition — read once per graph version and shared by
    every question, so the coarse EACS can search the whole layer as the paper does."""

    ids: list[str]
    text: np.ndarray  # (n, dim)
    attribute: np.ndarray  # (n, dim)
    described: np.ndarray  # (n,) bool: the chunk has an attribute of its own
    truss: TrussIndex

    def search_range(self, order: np.ndarray, n: int | None) -> tuple[np.ndarray, TrussIndex]:
        """The first ``n`` chunks of ``order`` and the truss index of the layer induced on them;
        the whole layer (and its kept index) when ``n`` is None or covers it."""
        if n is None or n >= len(self.ids):
            return np.arange(len(self.ids)), self.truss
        members = np.sort(order[:n])
        edges = self.truss.edges
        inside = np.isin(edges, members).all(axis=1)
        return members, TrussIndex(np.searchsorted(members, edges[inside]))


def load_chunk_layer(db: Database, version: Any) -> tuple[ChunkLayer, bool]:
    """L_C at ``version`` (see :func:`graphstrata.walkgraph.read_once`), and whether it was cached."""

    def load() -> ChunkLayer:
        rows = db.read(query("darag.chunk_layer_nodes"))
        ids = [r["id"] for r in rows]
        dim = len(rows[0]["embedding"]) if rows else 0
        text = as_matrix([r["embedding"] for r in rows], dim)
        described = np.array([r["attribute"] is not None and len(r["attribute"]) == dim for r in rows], dtype=bool)
        attribute = text.copy()
        for i in np.flatnonzero(described):
            attribute[i] = rows[i]["attribute"]
        index = {c: i for i, c in enumerate(ids)}
        edges = [
            (index[r["a"]], index[r["b"]])
            for r in db.read(query("darag.chunk_layer_edges"))
            if r["a"] in index and r["b"] in index  # a chunk newer than the node list waits for the next read
        ]
        truss = TrussIndex(np.asarray(edges, dtype=np.int64).reshape(-1, 2))
        return ChunkLayer(ids, text, attribute, described, truss)

    return read_once(db, "darag:chunk_layer", version, load)


def build_fine_graphs(ents: list[dict], dim: int, layers: list[Layer]) -> dict[str, LayerGraph]:
    ids = [e["id"] for e in ents]
    index = {x: i for i, x in enumerate(ids)}
    emb = as_matrix([e["embedding"] for e in ents], dim)
    out: dict[str, LayerGraph] = {}
    if "kg" in layers:
        kg = [(index[e["id"]], index[r["b"]]) for e in ents for r in e["related"] if r["b"] in index]
        out["kg"] = LayerGraph(ids, emb, np.asarray(kg, dtype=np.int64).reshape(-1, 2))
    if "similarity" in layers:
        # an entity's k_neighbor list, read in both directions, may name a pair twice: keep it once
        sim = sorted(
            {
                (min(index[e["id"]], index[s["b"]]), max(index[e["id"]], index[s["b"]]))
                for e in ents
                for s in e["similar"]
                if s["b"] in index
            }
        )
        out["similarity"] = LayerGraph(ids, emb, np.asarray(sim, dtype=np.int64).reshape(-1, 2))
    return out


def make_candidate(layer: str, c: Community, g: LayerGraph) -> Candidate:
    members = [g.ids[i] for i in c.nodes.tolist()]
    return Candidate(
        layer=layer,
        community=c,
        members=members,
        key=community_key(layer, c.k, members),
        avg_similarity=pairwise_similarity(g.emb[c.nodes]),
    )


def community_note(c: Candidate, ids: list[str]) -> dict[str, Any]:
    """One community of notes["communities"]: B.3 metrics, A.1/A.2 bounds, its nodes and edges."""
    out = c.metrics()
    out["selected"] = c.selected
    if c.duplicate_of is not None:
        out["duplicate_of_k"] = c.duplicate_of
    if c.llm_score is not None:
        out["llm_score"] = c.llm_score
    out["id"] = c.key
    out["nodes"] = c.members
    out["edges"] = [[ids[a], ids[b]] for a, b in c.community.edges.tolist()]
    return out


# --- a community's text --------------------------------------------------------------------------
def relation_lines(ents: list[dict]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """RELATED edges of the working subgraph: (a, b) → [(predicate, description)]."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for e in ents:
        for r in e["related"]:
            out.setdefault((e["id"], r["b"]), []).append((r["predicate"] or "related to", r["description"] or ""))
    return out


def render_community(
    c: Candidate, info: dict[str, dict], rel_lines: dict[tuple[str, str], list[tuple[str, str]]]
) -> str:
    """The extractive community text: its entities (with descriptions) and the KG relations among
    them, a sentence shared by several relations given once."""
    members = set(c.members)
    names = {m: info[m]["name"] or m for m in c.members}
    lines = [
        f"{LAYER_TITLE[c.layer]} community (k={c.community.k}): "
        + ", ".join(sorted(names.values(), key=str.lower)[:MAX_RENDER_ITEMS])
    ]
    described = [m for m in c.members if info[m].get("description")][:MAX_RENDER_ITEMS]
    for m in sorted(described, key=lambda m: names[m].lower()):
        kind = info[m].get("type")
        label = f"{names[m]} ({kind})" if kind and kind != "UNKNOWN" else names[m]
        lines.append(f"- {label}: {clip(info[m]['description'])}")
    by_text: dict[str, list[str]] = {}
    for (a, b), rels in rel_lines.items():
        if a in members and b in members:
            for predicate, description in rels:
                by_text.setdefault(clip(description), []).append(f"{names[a]} -[{predicate}]-> {names[b]}")
    if by_text:
        lines.append("Relations:")
        for text, triples in list(by_text.items())[:MAX_RENDER_ITEMS]:
            lines.append(f"- {'; '.join(dict.fromkeys(triples))}" + (f": {text}" if text else ""))
    return "\n".join(lines)


def community_chunks(members: list[str], info: dict[str, dict], cos: dict[str, float]) -> list[str]:
    """Chunks of H_C that mention the community's entities: most members mentioned first, then by
    cosine to the question (for provenance and Recall@k)."""
    count: dict[str, int] = {}
    for m in members:
        for ch in info[m]["chunks"]:
            count[ch] = count.get(ch, 0) + 1
    return sorted(count, key=lambda ch: (-count[ch], -cos.get(ch, 0.0)))
