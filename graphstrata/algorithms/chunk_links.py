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
so no pair comes from a hub; but a chunk's edges still grow with the corpus until every capped entity
is mentioned ``max_mentions`` times (a synthetic corpus: 271 edges per chunk at 2,000 passages, 571 at
10,000). ``max_links`` bounds them: each chunk keeps its heaviest links. ``max_mentions=None`` and
``max_links=None`` is the paper's layer.

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
    max_links: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, weight)``: chunk index pairs ``a < b`` (positions in ``chunks``) and their path counts.

    ``mentions`` are (chunk, entity) pairs (each once), ``relations`` (entity, entity) pairs, one per
    relation (a pair related twice counts twice); entities with more than ``max_mentions`` mentioning
    chunks are left out. ``max_links``: a pair is kept only if it is among the ``max_links`` heaviest
    links of one of its two chunks (ties: the lower chunk index first) — at most ``max_links`` edges
    per chunk of the corpus, however many chunks the capped entities still join."""
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
    full = (incidence @ related @ incidence.T).tocoo()
    off = (full.row != full.col) & (full.data > 0)  # no chunk to itself
    row, col, data = full.row[off].astype(np.int64), full.col[off].astype(np.int64), full.data[off]
    if max_links is None:
        keep = row < col  # W is symmetric: each pair once
    else:
        order = np.lexsort((col, -data, row))  # each chunk's links, heaviest first
        row, col, data = row[order], col[order], data[order]
        first = np.searchsorted(row, np.arange(n))  # where each chunk's links start
        keep = np.arange(row.size) - first[row] < max_links
    a, b, w = np.minimum(row, col)[keep], np.maximum(row, col)[keep], data[keep]
    _, once = np.unique(a * n + b, return_index=True)  # a pair both its chunks kept: once
    return a[once], b[once], w[once].astype(np.int64)
