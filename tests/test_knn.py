"""Exact top-k by cosine (graphstrata/algorithms/knn.py) against a full sort of every row."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.algorithms.knn import exact_knn


def brute_force(vectors: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Every row sorted in full: most similar first, then the lower index; itself left out."""
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = (v.astype(np.float64) @ v.T.astype(np.float64)).round(5)  # equal up to float noise = a tie
    out = []
    for i in range(len(v)):
        order = sorted((j for j in range(len(v)) if j != i), key=lambda j: (-cos[i, j], j))
        out += [(i, j) for j in order[:k]]
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 3, 10])
def test_exact_knn_is_the_full_sort_ties_by_index(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    v = rng.normal(size=(n, 6)).astype(np.float32)
    for _ in range(n // 4):  # duplicated vectors: ties the order must break by index
        v[rng.integers(n)] = v[rng.integers(n)]
    v[rng.integers(n)] *= 3.0  # same direction, other length: cosine ignores it
    sources, targets, scores = exact_knn(v, k, block=int(rng.integers(1, 9)))
    got = list(zip(sources.tolist(), targets.tolist(), strict=True))
    expected = brute_force(v, min(k, n - 1))
    # ties between equal cosines computed in float32 may differ in their last bit: compare by rank value
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert np.allclose([unit[i] @ unit[j] for i, j in got], [unit[i] @ unit[j] for i, j in expected], atol=1e-5)
    assert np.allclose(scores, [unit[i] @ unit[j] for i, j in got], atol=1e-5)
    assert all(i != j for i, j in got)


def test_duplicates_tie_by_index() -> None:
    base = np.eye(4, dtype=np.float32)
    v = np.stack([base[0], base[0], base[0], base[1], base[0] + 0.01 * base[2]])
    sources, targets, _ = exact_knn(v, 2)
    pairs = list(zip(sources.tolist(), targets.tolist(), strict=True))
    assert pairs[:2] == [(0, 1), (0, 2)]  # three equal vectors: the lower indexes first
    assert pairs[2:4] == [(1, 0), (1, 2)]
    assert exact_knn(v[:1], 3)[0].size == 0  # one node has no neighbour
