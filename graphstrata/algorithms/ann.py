"""Approximate neighbour search by cosine for the augment stages' similarity layers above a size:
an inverted file (IVF, Jégou et al., TPAMI 2011) in numpy, seeded, so a run depends on the vectors,
their order and the seed only.

The vectors are split into cells of about ``cell_size`` by spherical k-means (trained on a sample);
each vector is compared exactly with the vectors of its ``nprobe`` nearest cells only. The work is
``n · nprobe · cell_size · d`` multiply-adds for the comparisons — linear in n at a fixed cell size —
plus ``n · (n / cell_size) · d`` to find each vector's nearest cells, which is ``cell_size`` times
smaller than the exact all-pairs product (:mod:`graphstrata.algorithms.knn`).

- :func:`ivf_knn`: each node's top-k (as :func:`graphstrata.algorithms.knn.exact_knn` returns them).
- :func:`ivf_pairs`: the pairs of cosine >= a threshold (entity synonyms).

Quality against the exact computation: tests/test_ann.py (planted answers and brute force) and, on
the three dev graphs, bench/scale.py --approx-check (docs/scaling.md).
"""

from __future__ import annotations

import numpy as np

#: vectors per cell and cells probed: the defaults measured against the exact layers (docs/scaling.md)
CELL_SIZE, NPROBE = 256, 16
KMEANS_ITERATIONS, KMEANS_SAMPLE_PER_CELL = 8, 32


def _unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def _cells(v: np.ndarray, cell_size: int, nprobe: int, seed: int, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(each vector's cell, each vector's ``nprobe`` nearest cells, nearest first)."""
    n = len(v)
    nlist = max(1, n // cell_size)
    rng = np.random.default_rng(seed)
    sample = v[np.sort(rng.choice(n, size=min(n, nlist * KMEANS_SAMPLE_PER_CELL), replace=False))]
    centroids = sample[np.sort(rng.choice(len(sample), size=nlist, replace=False))].copy()
    for _ in range(KMEANS_ITERATIONS):  # spherical k-means on the sample: enough to split the space
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        filled = np.bincount(assign, minlength=nlist) > 0  # an empty cell keeps its centroid
        centroids[filled] = _unit(sums[filled])
    nprobe = min(nprobe, nlist)
    probes = np.empty((n, nprobe), dtype=np.int64)
    for start in range(0, n, block):
        sims = v[start : start + block] @ centroids.T
        top = (
            np.argpartition(-sims, nprobe - 1, axis=1)[:, :nprobe]
            if nprobe < nlist
            else np.tile(np.arange(nlist), (len(sims), 1))
        )
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        probes[start : start + block] = np.take_along_axis(top, order, axis=1)
    return probes[:, 0], probes


def _groups(keys: np.ndarray, values: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` grouped by ``keys`` (CSR: group g is out[ptr[g]:ptr[g + 1]], values ascending)."""
    order = np.lexsort((values, keys))
    ptr = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=n_keys))])
    return values[order], ptr


def _probe_lists(v: np.ndarray, cell_size: int, nprobe: int, seed: int):
    cell, probes = _cells(v, cell_size, nprobe, seed)
    nlist = int(probes.max()) + 1 if len(probes) else 1
    members, mptr = _groups(cell, np.arange(len(v)), nlist)
    flat = probes.ravel()
    queries, qptr = _groups(flat, np.repeat(np.arange(len(v)), probes.shape[1]), nlist)
    return nlist, members, mptr, queries, qptr


def ivf_knn(
    vectors: np.ndarray, k: int, cell_size: int = CELL_SIZE, nprobe: int = NPROBE, seed: int = 42
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sources, targets, cosines) of every node's approximate top-``k`` neighbours (itself
    excluded), each source's from the most similar down, ties by the lower index."""
    n = len(vectors)
    k = min(k, n - 1)
    if k <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    v = _unit(vectors)
    nlist, members, mptr, queries, qptr = _probe_lists(v, cell_size, nprobe, seed)
    src, dst, sim = [], [], []
    for c in range(nlist):
        xs, qs = members[mptr[c] : mptr[c + 1]], queries[qptr[c] : qptr[c + 1]]
        if xs.size == 0 or qs.size == 0:
            continue
        s = v[qs] @ v[xs].T
        kk = min(k + 1, xs.size)  # one more: a node's own cell holds itself, dropped below
        top = np.argpartition(-s, kk - 1, axis=1)[:, :kk] if kk < xs.size else np.tile(np.arange(xs.size), (qs.size, 1))
        src.append(np.repeat(qs, kk))
        dst.append(xs[top].ravel())
        sim.append(np.take_along_axis(s, top, axis=1).ravel())
    r, c_, s_ = np.concatenate(src), np.concatenate(dst), np.concatenate(sim)
    keep = r != c_  # not its own neighbour
    r, c_, s_ = r[keep], c_[keep], s_[keep]
    order = np.lexsort((c_, -s_, r))
    r, c_, s_ = r[order], c_[order], s_[order]
    first = np.searchsorted(r, np.arange(n))
    best = np.arange(len(r)) - first[r] < k
    return r[best], c_[best], s_[best].astype(np.float32)


def ivf_pairs(
    vectors: np.ndarray, threshold: float, cell_size: int = CELL_SIZE, nprobe: int = NPROBE, seed: int = 42
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, cosine) with i < j of the pairs of cosine >= ``threshold`` that the probed cells hold
    (each pair once)."""
    n = len(vectors)
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    v = _unit(vectors)
    nlist, members, mptr, queries, qptr = _probe_lists(v, cell_size, nprobe, seed)
    found: list[np.ndarray] = []
    for c in range(nlist):
        xs, qs = members[mptr[c] : mptr[c + 1]], queries[qptr[c] : qptr[c + 1]]
        if xs.size == 0 or qs.size == 0:
            continue
        s = v[qs] @ v[xs].T
        a, b = np.nonzero(s >= threshold)
        found.append(np.stack([qs[a], xs[b]], axis=1))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    i, j = pairs[:, 0], pairs[:, 1]
    return i, j, np.einsum("ij,ij->i", v[i], v[j])
