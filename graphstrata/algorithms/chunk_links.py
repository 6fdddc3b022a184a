"""DA-RAG's chunk-layer edges (§4.1, E_intra^C) as a sparse matrix product, with hub entities left out.

Chunks c_i and c_j are linked when a relation of the knowledge graph joins an entity mentioned in c_i
to one mentioned in c_j; the edge's weight counts such (mention, relation, mention) paths. With M
the chunk × entity mention incidence and R the entity × entity relation counts (a relation read in
both directions), the weights are the off-diagonal entries of ``W = M R Mᵀ``.

Departure, for scale (docs/methods.md): an entity mentioned in more than ``max_mentions`` chunks (a
hub: "United States", a corpus's own name) is left out of M. A hub joined to another hub links every
pair of their chunks — |mentions|² edges that say nothing about either chunk, and that make the layer
grow quadratically with the corpus (a 2,000-passage corpus with Zipf-distributed names: ~1,000,000
edges). With hubs capped, every chunk's edges come from entities of at most ``max_mentions`` chunks,
so the work and the edge count grow linearly with the corpus. ``max_mentions=None`` is the paper's layer.

Reference check: tests/test_chunk_links.py compares with a brute force over the paths on random graphs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp


def chunk_links(
    chunks: Sequence[str],
    mentions: Sequence[tuple[str, str]],
    relations: Sequence[tuple[str, str]],
    max_mentions: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, weight)``: chunk index pairs ``a < b`` (positions in ``chunks``) and their path counts.

    ``mentions`` are (chunk, entity) pairs (each once), ``relations`` (entity, entity) pairs, one per
    relation (a pair related twice counts twice); entities with more than ``max_mentions`` mentioning
    chunks are left out."""
    row_of = {c: i for i, c in enumerate(chunks)}
    ent_of: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for c, e in mentions:
        if c in row_of:
            rows.append(row_of[c])
            cols.append(ent_of.setdefault(e, len(ent_of)))
    n, m = len(chunks), len(ent_of)
    if not rows or not relations:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    incidence = sp.csr_matrix((np.ones(len(rows), np.int64), (rows, cols)), shape=(n, m))
    incidence.sum_duplicates()
    incidence.data[:] = 1  # a chunk mentions an entity or not
    if max_mentions is not None:
        keep = np.asarray((incidence > 0).sum(axis=0)).ravel() <= max_mentions
        incidence = incidence @ sp.diags(keep.astype(np.int64), dtype=np.int64)
    # (a relation of an entity to itself joins no two entities)
    pairs = [(ent_of[x], ent_of[y]) for x, y in relations if x != y and x in ent_of and y in ent_of]
    if not pairs:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    src, dst = np.array(pairs, dtype=np.int64).T
    related = sp.csr_matrix((np.ones(len(src), np.int64), (src, dst)), shape=(m, m))
    related = related + related.T  # a relation joins its ends in both directions
    weights = sp.triu(incidence @ related @ incidence.T, k=1).tocoo()  # each pair once, no chunk to itself
    nonzero = weights.data > 0
    return weights.row[nonzero].astype(np.int64), weights.col[nonzero].astype(np.int64), weights.data[nonzero]
