"""The augment stages' approximate neighbour search (graphstrata/algorithms/ann.py) against brute force
and planted answers (pure numpy: no database)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.algorithms.ann import ivf_knn, ivf_pairs
from graphstrata.algorithms.knn import exact_knn


def clustered(n: int, d: int = 48, centres: int = 40, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, d))
    return (c[rng.integers(0, centres, n)] + rng.normal(scale=0.6, size=(n, d))).astype(np.float32)


def neighbour_sets(sources: np.ndarray, targets: np.ndarray) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for s, t in zip(sources.tolist(), targets.tolist(), strict=True):
        out.setdefault(s, set()).add(t)
    return out


def test_probing_every_cell_is_the_exact_top_k() -> None:
    x = clustered(1500)
    exact = exact_knn(x, 5)
    approx = ivf_knn(x, 5, cell_size=64, nprobe=10_000)  # every cell probed: no approximation left
    assert neighbour_sets(*approx[:2]) == neighbour_sets(*exact[:2])
    assert np.allclose(np.sort(approx[2]), np.sort(exact[2]), atol=1e-5)
    # each source's neighbours come most similar first, k of them, never itself
    assert (approx[0] != approx[1]).all() and np.bincount(approx[0]).max() == 5
    for s in range(0, 1500, 97):
        scores = approx[2][approx[0] == s]
        assert (np.diff(scores) <= 1e-7).all()


def test_default_probing_recalls_the_exact_neighbours() -> None:
    x = clustered(6000)
    exact = neighbour_sets(*exact_knn(x, 5)[:2])
    approx = neighbour_sets(*ivf_knn(x, 5, cell_size=64, nprobe=16)[:2])
    found = sum(len(exact[i] & approx.get(i, set())) for i in exact)
    assert found / sum(map(len, exact.values())) >= 0.95
    assert all(len(v) == 5 for v in approx.values()) and len(approx) == 6000


def test_planted_twins_are_each_others_nearest() -> None:
    rng = np.random.default_rng(11)
    base = rng.normal(size=(2000, 32)).astype(np.float32)
    twins = base + rng.normal(scale=0.05, size=base.shape).astype(np.float32)
    s, t, _ = ivf_knn(np.concatenate([base, twins]), 1, cell_size=32, nprobe=4)
    nearest = dict(zip(s.tolist(), t.tolist(), strict=True))
    assert all(nearest[i] == i + 2000 and nearest[i + 2000] == i for i in range(2000))


@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_pairs_above_a_threshold(threshold: float) -> None:
    x = clustered(3000, centres=300, seed=5)
    v = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = v @ v.T
    i, j = np.nonzero(np.triu(sims >= threshold, k=1))
    brute = set(zip(i.tolist(), j.tolist(), strict=True))
    assert brute  # the test means something
    every = ivf_pairs(x, threshold, cell_size=64, nprobe=10_000)
    assert set(zip(every[0].tolist(), every[1].tolist(), strict=True)) == brute
    assert np.allclose(every[2], sims[every[0], every[1]], atol=1e-5)
    a, b, _ = ivf_pairs(x, threshold, cell_size=64, nprobe=8)
    got = set(zip(a.tolist(), b.tolist(), strict=True))
    assert got <= brute and len(got) >= 0.97 * len(brute)


def test_small_inputs() -> None:
    assert [a.size for a in ivf_knn(np.ones((1, 4)), 5)] == [0, 0, 0]
    assert [a.size for a in ivf_pairs(np.ones((1, 4)), 0.5)] == [0, 0, 0]
    s, t, _ = ivf_knn(np.eye(3, dtype=np.float32), 5)
    assert sorted(zip(s.tolist(), t.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
