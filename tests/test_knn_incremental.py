"""The in-place update of a top-k similarity layer (graphstrata/augment/knn_incremental.py) equals the
exact top-k of the whole layer computed from scratch (pure numpy)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.algorithms.knn import exact_knn
from graphstrata.augment.knn_incremental import update_knn


def stored_pairs(ids: list[str], vectors: np.ndarray, k: int) -> list[tuple[str, str, float]]:
    """A layer as augment stores it: each node's top-k, each pair once from the smaller id."""
    s, t, c = exact_knn(vectors, k)
    pairs: dict[tuple[str, str], float] = {}
    for a, b, x in zip(s.tolist(), t.tolist(), c.tolist(), strict=True):
        key = (min(ids[a], ids[b]), max(ids[a], ids[b]))
        pairs[key] = max(pairs.get(key, -1.0), x)
    return [(a, b, x) for (a, b), x in pairs.items()]


def as_set(ids: list[str], s: np.ndarray, t: np.ndarray) -> set[tuple[str, str]]:
    return {(ids[a], ids[b]) for a, b in zip(s.tolist(), t.tolist(), strict=True)}


@pytest.mark.parametrize(("added", "deleted"), [(6, 0), (0, 4), (8, 5)])
def test_update_equals_a_full_run(added: int, deleted: int) -> None:
    rng = np.random.default_rng(added * 10 + deleted)
    n, k = 500, 5
    vectors = rng.normal(size=(n + added, 24)).astype(np.float32)
    ids = [f"n{i:04d}" for i in range(n + added)]
    before = stored_pairs(ids[:n], vectors[:n], k)
    gone = set(rng.choice(n, size=deleted, replace=False).tolist())
    keep = [i for i in range(n + added) if i not in gone]
    now_ids, now_vectors = [ids[i] for i in keep], vectors[keep]
    got = update_knn(now_ids, now_vectors, before, k, max_share=0.2)
    assert got is not None
    full = exact_knn(now_vectors, k)
    assert as_set(now_ids, got[0], got[1]) == as_set(now_ids, full[0], full[1])
    assert np.allclose(np.sort(got[2]), np.sort(full[2]), atol=1e-5)


def test_a_changed_vector_is_seen_and_the_update_equals_a_full_run() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    ids = [f"n{i:03d}" for i in range(400)]
    before = stored_pairs(ids, vectors, 4)
    vectors[[7, 123]] = rng.normal(size=(2, 16))  # same ids, new texts
    got = update_knn(ids, vectors, before, 4, max_share=0.2)
    assert got is not None
    full = exact_knn(vectors, 4)
    assert as_set(ids, got[0], got[1]) == as_set(ids, full[0], full[1])


def test_too_many_changes_ask_for_a_full_run() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    ids = [f"n{i:03d}" for i in range(200)]
    before = stored_pairs(ids[:150], vectors[:150], 3)
    assert update_knn(ids, vectors, before, 3, max_share=0.1) is None  # 50 new of 200
    assert update_knn(ids, vectors, [], 3, max_share=0.9) is None  # nothing stored: a full run
