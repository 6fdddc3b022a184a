"""DA-RAG's layers and communities as arrays (§4): the chunk layer (whole, in memory per graph
version) and the two fine layers of a working subgraph as local-index edge lists with embeddings,
the EACS communities found on them as candidates, and the extractive text of a community that its
report (§5.1) starts from.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

import numpy as np

from graphstrata.algorithms.eacs import TrussIndex, density_bound, diameter_bound, pairwise_similarity
from graphstrata.algorithms.ktruss import csr_gather
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


def as_matrix(vectors: list[Any], dim: int, dtype: type = np.float64) -> np.ndarray:
    """Embeddings as an (n, dim) float matrix; a missing embedding is a zero row (cosine 0)."""
    out = np.zeros((len(vectors), dim), dtype=dtype)
    for i, v in enumerate(vectors):
        if v is not None and len(v) == dim:
            out[i] = v
    return out


def community_key(layer: str, k: int, members: list[str]) -> str:
    digest = hashlib.sha1("\n".join(sorted(members)).encode()).hexdigest()[:12]
    return f"eacs:{layer}:k{k}:{digest}"


@lru_cache(maxsize=8192)  # a working subgraph's communities render the same descriptions again
def clip(text: str | None, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class ChunkLayer:
    """The Semantic Chunk Layer L_C (§4.1) in memory: every chunk's text embedding, its attribute
    (the embedding of its title + description; the text's where augment made none), the
    CHUNK_RELATED edges as neighbour lists — read once per graph version and shared by every
    question. The truss decomposition of the whole layer is made only if a question searches the
    whole layer (``coarse_candidates=None``); a question's own search range is decomposed per
    question, at a cost bounded by the range (:meth:`search_range`)."""

    ids: list[str]
    text: np.ndarray  # (n, dim) float32, as stored
    attribute: np.ndarray  # (n, dim) float32
    described: np.ndarray  # (n,) bool: the chunk has an attribute of its own
    doc_titles: list[str | None]
    edges: np.ndarray  # (m, 2) local ids, each pair once
    nbr_ptr: np.ndarray  # (n + 1,) CSR: the neighbours of i are nbr[nbr_ptr[i]:nbr_ptr[i + 1]]
    nbr: np.ndarray

    @cached_property
    def truss(self) -> TrussIndex:
        """The whole layer's truss index (kept with the layer once made)."""
        return TrussIndex(self.edges)

    @cached_property
    def text_norms(self) -> np.ndarray:
        """The norm of every text vector (kept: a question then costs one matrix-vector product)."""
        return np.linalg.norm(self.text, axis=1)

    def text_cosines(self, q: np.ndarray) -> np.ndarray:
        """Cosine of every chunk's text vector to ``q`` (float32 product, float64 result; zero
        vectors score 0), without copying the layer."""
        dots = (self.text @ np.asarray(q, dtype=np.float32)).astype(np.float64)
        norms = self.text_norms.astype(np.float64) * float(np.linalg.norm(q))
        return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)

    def nbytes(self) -> int:
        """The layer's arrays in bytes (what :func:`load_chunk_layer` keeps per graph version)."""
        arrays = (self.text, self.attribute, self.described, self.edges, self.nbr_ptr, self.nbr)
        return int(sum(a.nbytes for a in arrays)) + 100 * len(self.ids)  # ids and titles: ~100 B each

    def nearest(self, cos: np.ndarray, n: int) -> np.ndarray:
        """The ``n`` rows of highest ``cos``, best first (ties by row): O(layer) with no full sort."""
        n = min(n, cos.size)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        top = np.argpartition(-cos, n - 1)[:n] if n < cos.size else np.arange(cos.size)
        return top[np.lexsort((top, -cos[top]))]

    def search_range(
        self, cos: np.ndarray, seeds: int | None, limit: int, max_edges: int | None = None
    ) -> tuple[np.ndarray, TrussIndex]:
        """The coarse search range for a question whose cosine to every chunk is ``cos``: the ``seeds``
        chunks nearest to it and their neighbours in L_C, at most ``limit`` chunks (the nearest kept)
        and at most ``max_edges`` edges among them (the farthest chunks dropped until it fits; the
        seeds always stay), with the truss index of the layer induced on them; the whole layer and
        its kept index when ``seeds`` is None. The work is that of the range's own edges, not the layer's."""
        if seeds is None:
            return np.arange(len(self.ids)), self.truss
        first = self.nearest(cos, seeds)
        members = np.unique(np.concatenate([first, csr_gather(self.nbr_ptr, self.nbr, first)]))
        if members.size > limit:  # the nearest first: the seeds always stay (limit >= seeds)
            keep = np.lexsort((members, -cos[members]))[:limit]
            members = np.unique(np.concatenate([first, members[keep]]))
        if max_edges is None:
            pairs = self._pairs_among(members)
        else:
            # members ranked nearest first, the seeds before all: an edge is in a prefix of that order
            # when its farther end is, so the longest prefix holding at most max_edges edges ends
            # before the (max_edges + 1)-th smallest farther-end rank
            seed = np.isin(members, first)
            order = members[np.lexsort((members, -cos[members], ~seed))]  # the seeds, then nearest first
            rank = np.full(len(self.ids), members.size, dtype=np.int64)
            rank[order] = np.arange(members.size)
            rank[first] = -1
            # prefixes of doubling length until one holds more than max_edges edges: the cut lies in
            # it, and the work is that of at most twice the kept prefix, not of the whole range
            size = min(members.size, max(first.size, 64))
            while True:
                pairs = self._pairs_among(order[:size])
                if len(pairs) > max_edges or size == members.size:
                    break
                size = min(2 * size, members.size)
            members = np.sort(order[:size])
            if len(pairs) > max_edges:
                far = rank[pairs].max(axis=1)
                cut = max(int(np.partition(far, max_edges)[max_edges]), 0)  # 0: the seeds alone, all their edges
                members = members[rank[members] < cut]
                pairs = pairs[far < cut]  # the range's edges among the members kept
        local = np.full(len(self.ids), -1, dtype=np.int64)
        local[members] = np.arange(members.size)
        return members, TrussIndex(local[pairs].reshape(-1, 2))

    def _pairs_among(self, members: np.ndarray) -> np.ndarray:
        """The layer's edges with both ends in ``members`` (chunk indices), each once from its smaller end."""
        inside = np.zeros(len(self.ids), dtype=bool)
        inside[members] = True
        degree = self.nbr_ptr[members + 1] - self.nbr_ptr[members]
        pairs = np.stack([np.repeat(members, degree), csr_gather(self.nbr_ptr, self.nbr, members)], axis=1)
        pairs = pairs[pairs[:, 0] < pairs[:, 1]]
        return pairs[inside[pairs].all(axis=1)]


def load_chunk_layer(db: Database, version: Any) -> tuple[ChunkLayer, bool]:
    """L_C at ``version`` (see :func:`graphstrata.walkgraph.read_once`), and whether it was cached."""

    def load() -> ChunkLayer:
        rows = db.read_rows(query("darag.chunk_layer_nodes"), ["id", "doc_title", "embedding", "attribute"])
        ids = [r[0] for r in rows]
        dim = len(rows[0][2]) if rows else 0
        text = as_matrix([r[2] for r in rows], dim, np.float32)
        described = np.array([r[3] is not None and len(r[3]) == dim for r in rows], dtype=bool)
        attribute = text.copy()
        for i in np.flatnonzero(described):
            attribute[i] = rows[i][3]
        index = {c: i for i, c in enumerate(ids)}
        edges = [
            (index[a], index[b])
            for a, b in db.read_rows(query("darag.chunk_layer_edges"), ["a", "b"])
            if a in index and b in index  # a chunk newer than the node list waits for the next read
        ]
        pairs = np.unique(np.sort(np.asarray(edges, dtype=np.int64).reshape(-1, 2), axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        both = np.concatenate([pairs, pairs[:, ::-1]])
        both = both[np.lexsort((both[:, 1], both[:, 0]))]
        ptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.add.at(ptr, both[:, 0] + 1, 1)
        return ChunkLayer(
            ids, text, attribute, described, [r[1] for r in rows], pairs, np.cumsum(ptr), both[:, 1].copy()
        )

    return read_once(db, "darag:chunk_layer", version, load)


@dataclass(frozen=True)
class EntityLayer:
    """The entities in memory, read once per graph version like :class:`ChunkLayer`: their name
    embeddings (float32, as stored, so nothing is rounded), the chunks that mention them (E_inter),
    the KG layer L_KG (RELATED) and the similarity layer L_S (SIMILAR {kind: 'semantic'}). §4's
    working subgraph is cut from it per question with array operations (:meth:`working`)."""

    ids: list[str]
    id_array: np.ndarray  # ``ids`` as an object array (fancy indexing)
    index: dict[str, int]
    names: list[str | None]
    types: list[str | None]
    descriptions: list[str | None]
    emb: np.ndarray  # (n, dim) float32; a missing embedding is a zero row (cosine 0)
    mentioned_by: dict[str, np.ndarray]  # chunk id -> the rows of the entities it mentions
    related: np.ndarray  # (m, 2) rows of every RELATED edge, start first
    related_text: list[tuple[str, str]]  # (predicate, description) of each row of ``related``
    similar: np.ndarray  # (p, 2) entity, neighbour: each stored pair from both ends, by entity row
    similar_ptr: np.ndarray  # (n + 1,) row i's neighbours, by descending score then id: similar[ptr[i]:ptr[i + 1]]

    def working(self, chunks: list[str], k_neighbor: int, layers: list[Layer], dim: int) -> Working:
        """§4 working subgraph: V_work = the entities mentioned by ``chunks`` (the chunks of H_C), and
        the fine layers induced on it — every RELATED edge among V_work, and each entity's
        ``k_neighbor`` most similar entities that are in V_work (a pair named from both ends kept once).
        Embeddings of another dimension than the question's ``dim`` count as missing."""
        present = [c for c in chunks if c in self.mentioned_by]
        mentioned = [self.mentioned_by[c] for c in present]
        mention_rows = np.concatenate(mentioned) if present else np.zeros(0, dtype=np.int64)
        mention_chunks = np.repeat(np.arange(len(present)), [m.size for m in mentioned])
        by_row = np.argsort(mention_rows, kind="stable")  # an entity's chunks stay in the order of ``chunks``
        rows = np.unique(mention_rows)
        local = np.full(len(self.ids), -1, dtype=np.int64)
        local[rows] = np.arange(rows.size)
        graphs: dict[str, LayerGraph] = {}
        ids = self.id_array[rows].tolist()
        emb = self.emb[rows].astype(np.float64) if self.emb.shape[1] == dim else np.zeros((rows.size, dim))
        kg_rows = np.zeros(0, dtype=np.int64)
        if "kg" in layers:
            ends = local[self.related]
            kg_rows = np.flatnonzero((ends >= 0).all(axis=1))
            graphs["kg"] = LayerGraph(ids, emb, ends[kg_rows])
        if "similarity" in layers:
            # the first k_neighbor neighbours of each entity of V_work, kept when they are in V_work too
            starts = self.similar_ptr[rows]
            counts = np.minimum(self.similar_ptr[rows + 1] - starts, k_neighbor)
            offsets = np.cumsum(counts) - counts
            at = np.arange(counts.sum()) - np.repeat(offsets - starts, counts)
            ends = local[self.similar[at]]
            low_high = np.sort(ends[ends[:, 1] >= 0], axis=1)
            codes = np.unique(low_high[:, 0] * rows.size + low_high[:, 1])  # each pair once, in (low, high) order
            graphs["similarity"] = LayerGraph(ids, emb, np.stack([codes // rows.size, codes % rows.size], axis=1))
        relations: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for i in kg_rows.tolist():
            a, b = self.related[i].tolist()
            relations.setdefault((self.ids[a], self.ids[b]), []).append(self.related_text[i])
        return Working(self, ids, emb, present, mention_rows[by_row], mention_chunks[by_row], graphs, relations)


@dataclass(frozen=True)
class Working:
    """A question's working subgraph (§4): V_work, its fine layers, the KG relations among its
    entities, (start id, end id) -> [(predicate, description)], and which chunks of H_C mention
    each entity (:meth:`chunks_of`)."""

    layer: EntityLayer
    ids: list[str]
    emb: np.ndarray  # V_work's embeddings (float64): the rows of every fine layer's graph
    hc: list[str]  # the chunks of H_C that mention an entity
    mention_rows: np.ndarray  # the entity row of each (chunk, entity) mention, ascending
    mention_chunks: np.ndarray  # the position in ``hc`` of each mention's chunk
    graphs: dict[str, LayerGraph]
    relations: dict[tuple[str, str], list[tuple[str, str]]]

    def chunks_of(self, entity: str) -> list[str]:
        """The chunks of H_C that mention ``entity``, in H_C's order."""
        row = self.layer.index[entity]
        lo, hi = np.searchsorted(self.mention_rows, [row, row + 1])
        return [self.hc[i] for i in self.mention_chunks[lo:hi].tolist()]


def load_entity_layer(db: Database, version: Any) -> tuple[EntityLayer, bool]:
    """The entity layer at ``version`` (see :func:`graphstrata.walkgraph.read_once`), and whether it was cached."""

    def load() -> EntityLayer:
        rows = db.read_rows(query("darag.entity_layer_nodes"), ["id", "name", "type", "description", "embedding"])
        ids = [r[0] for r in rows]
        index = {x: i for i, x in enumerate(ids)}
        dim = next((len(r[4]) for r in rows if r[4]), 0)
        emb = as_matrix([r[4] for r in rows], dim, np.float32)  # float32 as stored: exact
        mentioned: dict[str, list[int]] = {}
        for chunk, entity in db.read_rows(query("darag.entity_layer_mentions"), ["chunk", "entity"]):
            if entity in index:  # an entity newer than the node list waits for the next read
                mentioned.setdefault(chunk, []).append(index[entity])
        related = [
            r
            for r in db.read_rows(query("darag.entity_layer_related"), ["a", "b", "predicate", "description"])
            if r[0] in index and r[1] in index
        ]
        neighbours: dict[int, list[tuple[float, str]]] = {}
        for a, b, score in db.read_rows(query("darag.entity_layer_similar"), ["a", "b", "score"]):
            if a in index and b in index:
                score = score if score is not None else float("inf")  # Cypher: null first in DESC
                neighbours.setdefault(index[a], []).append((score, b))
                neighbours.setdefault(index[b], []).append((score, a))
        similar: list[tuple[int, int]] = []
        similar_ptr = np.zeros(len(ids) + 1, dtype=np.int64)
        for a in sorted(neighbours):
            ns = neighbours[a]
            ns.sort(key=lambda s: (-s[0], s[1]))  # the order the layer's KNN lists are read in
            similar += [(a, index[b]) for _, b in ns]
            similar_ptr[a + 1] = len(ns)
        return EntityLayer(
            ids=ids,
            id_array=np.asarray(ids, dtype=object),
            index=index,
            names=[r[1] for r in rows],
            types=[r[2] for r in rows],
            descriptions=[r[3] for r in rows],
            emb=emb,
            mentioned_by={c: np.asarray(m, dtype=np.int64) for c, m in mentioned.items()},
            related=np.asarray([(index[r[0]], index[r[1]]) for r in related], dtype=np.int64).reshape(-1, 2),
            related_text=[(r[2] or "related to", r[3] or "") for r in related],
            similar=np.asarray(similar, dtype=np.int64).reshape(-1, 2),
            similar_ptr=np.cumsum(similar_ptr),
        )

    return read_once(db, "darag:entity_layer", version, load)


def make_candidate(layer: str, c: Community, g: LayerGraph) -> Candidate:
    members = [g.ids[i] for i in c.nodes.tolist()]
    return Candidate(
        layer=layer,
        community=c,
        members=members,
        key=community_key(layer, c.k, members),
        avg_similarity=pairwise_similarity(g.emb[c.nodes]),
    )


#: a community's edges are listed in the notes up to this many (``n_edges`` always counts them): the
#: lists of a few large coarse communities were a tenth of a question's time on a dense chunk layer
NOTE_MAX_EDGES = 500


def community_note(c: Candidate, ids: np.ndarray) -> dict[str, Any]:
    """One community of notes["communities"]: B.3 metrics, A.1/A.2 bounds, its nodes, and its edges
    when it has at most NOTE_MAX_EDGES (else ``edges_listed`` is false)."""
    out = c.metrics()
    out["selected"] = c.selected
    if c.duplicate_of is not None:
        out["duplicate_of_k"] = c.duplicate_of
    if c.llm_score is not None:
        out["llm_score"] = c.llm_score
    out["id"] = c.key
    out["nodes"] = c.members
    if len(c.community.edges) <= NOTE_MAX_EDGES:
        out["edges"] = ids[c.community.edges].tolist()  # ids: the layer's node ids as an object array
    else:
        out["edges_listed"] = False
    return out


# --- a community's text --------------------------------------------------------------------------
def render_community(c: Candidate, w: Working) -> str:
    """The extractive community text: its entities (with descriptions) and the KG relations among
    them, a sentence shared by several relations given once."""
    layer = w.layer
    members = set(c.members)
    rows = {m: layer.index[m] for m in c.members}
    names = {m: layer.names[r] or m for m, r in rows.items()}
    lines = [
        f"{LAYER_TITLE[c.layer]} community (k={c.community.k}): "
        + ", ".join(sorted(names.values(), key=str.lower)[:MAX_RENDER_ITEMS])
    ]
    described = [m for m in c.members if layer.descriptions[rows[m]]][:MAX_RENDER_ITEMS]
    for m in sorted(described, key=lambda m: names[m].lower()):
        kind = layer.types[rows[m]]
        label = f"{names[m]} ({kind})" if kind and kind != "UNKNOWN" else names[m]
        lines.append(f"- {label}: {clip(layer.descriptions[rows[m]])}")
    by_text: dict[str, list[str]] = {}
    for (a, b), rels in w.relations.items():
        if a in members and b in members:
            for predicate, description in rels:
                by_text.setdefault(clip(description), []).append(f"{names[a]} -[{predicate}]-> {names[b]}")
    if by_text:
        lines.append("Relations:")
        for text, triples in list(by_text.items())[:MAX_RENDER_ITEMS]:
            lines.append(f"- {'; '.join(dict.fromkeys(triples))}" + (f": {text}" if text else ""))
    return "\n".join(lines)


def community_chunks(members: list[str], w: Working, cos: dict[str, float]) -> list[str]:
    """Chunks of H_C that mention the community's entities: most members mentioned first, then by
    cosine to the question (for provenance and Recall@k)."""
    count: dict[str, int] = {}
    for m in members:
        for ch in w.chunks_of(m):
            count[ch] = count.get(ch, 0) + 1
    return sorted(count, key=lambda ch: (-count[ch], -cos.get(ch, 0.0)))
