"""Top-k similarity layers updated in place after a small ingest (augment's incremental path for
chunk_knn's semantic half, entity_similarity and semantic_edges).

A stored layer is the union of every node's top-k list, each pair once. For a node whose stored
pairs all still exist, its own list is the top k of its stored pairs: the list is among them, and
they are all nodes of the old layer, of which the list is the best k. So after new nodes arrive only
their rows (new x all) are computed; an old node's list is its own list merged with the new nodes
that beat its k-th. A node that lost a stored pair (a neighbour deleted) has its row computed again,
and so has a node whose vector changed (its stored scores no longer match), which then also counts
as new for the others' lists.
Work: (new + changed) x n products instead of n x n. The result is the exact top-k of the whole
layer (tests/test_knn_incremental.py checks it against a full run); above ``knn_exact_max_nodes``,
the unchanged nodes keep the lists the inverted file gave them.
"""

from __future__ import annotations

import numpy as np


def unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def update_knn(
    ids: list[str], vectors: np.ndarray, stored: list[tuple[str, str, float]], k: int, max_share: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(sources, targets, cosines) of every node's top-k, as ``exact_knn`` gives them, from the stored
    pairs and the rows of the nodes that are new or lost a pair; None when more than ``max_share``
    of the nodes would need their row (a full run is then as cheap)."""
    n = len(ids)
    k = min(k, n - 1)
    if k <= 0 or not stored:
        return None
    index = {x: i for i, x in enumerate(ids)}
    a = np.array([index.get(x, -1) for x, _, _ in stored], dtype=np.int64)
    b = np.array([index.get(y, -1) for _, y, _ in stored], dtype=np.int64)
    s = np.array([float(z) if z is not None else -np.inf for _, _, z in stored], dtype=np.float32)
    alive = (a >= 0) & (b >= 0)
    changed = np.ones(n, dtype=bool)  # new: no stored pair
    changed[a[alive]] = False
    changed[b[alive]] = False
    changed[a[~alive & (a >= 0)]] = True  # lost a neighbour: its list may be short
    changed[b[~alive & (b >= 0)]] = True
    a, b, s = a[alive], b[alive], s[alive]
    v = unit(vectors)
    # a node whose vector changed (same id, new text) shows in its stored pairs' scores: both ends are
    # computed again, and the pair's ends may enter other lists like new nodes
    moved = np.abs(np.einsum("ij,ij->i", v[a], v[b]) - s) > 1e-4
    changed[a[moved]] = True
    changed[b[moved]] = True
    rows = np.flatnonzero(changed)
    if rows.size > max_share * n:
        return None
    # the own lists of unchanged nodes: top k of their stored pairs, most similar first, ties by index
    src, dst, sim = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([s, s])
    keep = ~changed[src]
    src, dst, sim = src[keep], dst[keep], sim[keep]
    order = np.lexsort((dst, -sim, src))
    src, dst, sim = src[order], dst[order], sim[order]
    first = np.searchsorted(src, np.arange(n))
    own = np.arange(src.size) - first[src] < k
    src, dst, sim = src[own], dst[own], sim[own]
    kth = np.full(n, np.inf, dtype=np.float32)  # an unchanged node's k-th score: what a new node must beat
    counts = np.bincount(src, minlength=n)
    last = np.cumsum(counts) - 1
    full = counts >= k
    kth[full] = sim[last[full]]
    kth[~full & ~changed] = -np.inf  # fewer than k stored: any new node may join
    parts_s, parts_d, parts_v = [src], [dst], [sim]
    paired = np.bincount(np.concatenate([a[~moved], b[~moved]]), minlength=n) > 0
    new_rows = set(np.flatnonzero(changed & ~paired).tolist()) | set(np.concatenate([a[moved], b[moved]]).tolist())
    for start in range(0, rows.size, 1024):
        block = rows[start : start + 1024]
        m = v[block] @ v.T
        m[np.arange(block.size), block] = -np.inf  # not its own neighbour
        top = np.argpartition(-m, k - 1, axis=1)[:, :k] if k < n else np.tile(np.arange(n), (block.size, 1))
        parts_s.append(np.repeat(block, top.shape[1]))
        parts_d.append(top.ravel())
        parts_v.append(np.take_along_axis(m, top, axis=1).ravel())
        # ties at the k-th: every entry as good as the k-th is a candidate (exact_knn does the same)
        kth_row = np.take_along_axis(m, top, axis=1).min(axis=1)
        r, c = np.nonzero(m >= kth_row[:, None])
        parts_s.append(block[r])
        parts_d.append(c)
        parts_v.append(m[r, c])
        # a new node that beats an unchanged node's k-th joins that node's list
        fresh = np.array([i in new_rows for i in block.tolist()])
        if fresh.any():
            r, c = np.nonzero((m[fresh] >= kth[None, :]) & ~changed[None, :])
            parts_s.append(c)
            parts_d.append(block[fresh][r])
            parts_v.append(m[fresh][r, c])
    src, dst, sim = (np.concatenate(p) for p in (parts_s, parts_d, parts_v))
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0, return_index=True)[1]  # a candidate once
    src, dst, sim = src[pairs], dst[pairs], sim[pairs]
    order = np.lexsort((dst, -sim, src))
    src, dst, sim = src[order], dst[order], sim[order]
    first = np.searchsorted(src, np.arange(n))
    best = np.arange(src.size) - first[src] < k
    return src[best], dst[best], sim[best].astype(np.float32)
