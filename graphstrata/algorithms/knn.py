"""Exact k-nearest neighbours by cosine: blocked matrix products over unit vectors.

Each node's ``k`` most similar other nodes, ties broken by the lower index, so the result depends on
the vectors and their order only. ``n² · d`` multiply-adds: for the few tens of thousands of nodes a
similarity layer has in one graph this is a second of BLAS, less than an approximate method's
start-up; beyond that, graphstrata uses GDS KNN (NN-descent, Dong et al., WWW 2011), whose work
grows about as n log n (:func:`graphstrata.augment.similarity.knn_rows`).
"""

from __future__ import annotations

import numpy as np


def exact_knn(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sources, targets, cosines) of every node's top-``k`` neighbours (itself excluded), each
    source's neighbours from the most similar down."""
    n = len(vectors)
    k = min(k, n - 1)
    if k <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    v = np.asarray(vectors, dtype=np.float32)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    sources, targets, scores = [], [], []
    for start in range(0, n, block):
        sims = v[start : start + block] @ v.T
        rows = np.arange(len(sims))
        sims[rows, rows + start] = -np.inf  # not its own neighbour
        # the k-th largest similarity of each row; every entry at least as large is a candidate, so
        # ties at the boundary are all seen and then broken by index
        kth = np.partition(sims, n - k, axis=1)[:, n - k]
        r, c = np.nonzero(sims >= kth[:, None])
        s = sims[r, c]
        order = np.lexsort((c, -s, r))
        r, c, s = r[order], c[order], s[order]
        first = np.searchsorted(r, rows)
        keep = np.arange(len(r)) - first[r] < k
        sources.append(r[keep] + start)
        targets.append(c[keep])
        scores.append(s[keep])
    return np.concatenate(sources), np.concatenate(targets), np.concatenate(scores)
