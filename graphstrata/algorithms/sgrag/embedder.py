"""The dominance model ``M`` at query time: node, query-path and per-row path embeddings (SG-RAG §4.2–4.3).

Paper: SG-RAG §4.2 "Training of the Dominant Embedding Model" (``o(v_i)`` from the star ``g_{v_i}``,
``o(p) = [o(v_1) … o(v_k)]``), §4.3 "Path-level Retrieval" (``o(p_q) ⪯ o(p_z)``), Appendix C Eq. (16)–(17).

:class:`DominanceEmbedder` wraps a trained :class:`~graphstrata.algorithms.sgrag.gat.StarGAT` and its label
encoder.  Star embeddings are cached by the star itself (centre label + leaf label multiset), so the cache
is content-addressed: a node whose neighbourhood changed has a different star and misses the cache, and a
cached vector can never be stale for the graph it is used on.

:meth:`DominanceEmbedder.filter_rows` is the dominance filter for *wildcard* lookups (label completion,
Algorithm 5, and the wildcard pass): each candidate row is completed with its own labels at the unknown
positions and compared with ``o(p_z)``.  A query neighbour that is unknown and off the path is left out of
the query star; with a monotone model a smaller star has a dominated embedding, so the filter still never
drops a row that contains the query (and for a non-monotone model the filter is not applied there).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.sgrag.decompose import QueryPath
from graphstrata.algorithms.sgrag.dominance import DOMINANCE_ATOL, DOMINANCE_RTOL
from graphstrata.algorithms.sgrag.gat import LabelEncoder, StarGAT
from graphstrata.algorithms.sgrag.path_index import PathIndex
from graphstrata.algorithms.sgrag.query_graph import DataGraph, QueryGraph, Star

__all__ = ["DominanceEmbedder"]

NodeId = Hashable
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class DominanceEmbedder:
    """A trained :class:`StarGAT` plus the label encoder it was trained with (the model ``M``)."""

    model: StarGAT
    encode: LabelEncoder
    cache_size: int = 200_000  # stars kept; the cache is dropped whole when full (cheap, rarely hit)
    _cache: dict[Star, FloatArray] = field(default_factory=dict, init=False, repr=False)

    def embed_stars(self, stars: Sequence[Star]) -> FloatArray:
        """``o(g)`` per star (rows), computing only the stars not cached yet."""
        out = np.empty((len(stars), self.model.out_dim))
        missing: dict[Star, list[int]] = {}
        for i, star in enumerate(stars):
            vec = self._cache.get(star)
            if vec is None:
                missing.setdefault(star, []).append(i)
            else:
                out[i] = vec
        if missing:
            todo = list(missing)
            fresh = self.model.embed(todo, self.encode)
            if len(self._cache) + len(todo) > self.cache_size:
                self._cache.clear()
            for star, vec in zip(todo, fresh, strict=True):
                self._cache[star] = vec
                out[missing[star]] = vec
        return out

    def node_embeddings(self, graph: DataGraph) -> dict[NodeId, FloatArray]:
        """``o(v)`` for every data node, from its star in ``graph``."""
        emb = self.embed_stars([graph.star(v) for v in graph.nodes])
        return dict(zip(graph.nodes, emb, strict=True))

    def query_path_embedding(self, query: QueryGraph, qpath: QueryPath) -> FloatArray:
        """``o(p_q)``: concatenated embeddings of the query stars along the path (labels complete)."""
        return self.embed_stars([query.star(q) for q in qpath.nodes]).reshape(-1)

    def completed_path_embeddings(
        self, query: QueryGraph, qpath: QueryPath, label_rows: Sequence[tuple[str, ...]]
    ) -> FloatArray:
        """``o(p_q)`` of ``qpath`` completed with each label tuple (one label per path position).

        Unknown query neighbours off the path are left out of the stars (sound for a monotone model).
        """
        position = {q: i for i, q in enumerate(qpath.nodes)}
        nbrs = [list(query.neighbors(q)) for q in qpath.nodes]
        stars: list[Star] = []
        for labels in label_rows:
            for i in range(len(qpath.nodes)):
                leaves = []
                for u in nbrs[i]:
                    label = labels[position[u]] if u in position else query.labels[u]
                    if label is not None:
                        leaves.append(label)
                stars.append(Star.of(labels[i], leaves))
        return self.embed_stars(stars).reshape(len(label_rows), -1)

    def filter_rows(self, query: QueryGraph, qpath: QueryPath, index: PathIndex, rows: IntArray) -> IntArray:
        """Rows of a wildcard lookup whose ``o(p_z)`` dominates the query path completed with the row's
        own labels (rows unchanged when the index has no embeddings or the model is not monotone)."""
        if len(rows) == 0 or index.embedding_dim is None or not self.model.monotone:
            return rows
        length = qpath.length
        codes = index.row_codes(length, rows)
        uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
        names = index.label_names()
        q = self.completed_path_embeddings(query, qpath, [tuple(names[c] for c in row) for row in uniq.tolist()])
        q = q[inverse.reshape(-1)]
        thr = q - (DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(q))  # the dominance region's corner (Eq. 5)
        return rows[(index.row_embeddings(length, rows) >= thr).all(axis=1)]
