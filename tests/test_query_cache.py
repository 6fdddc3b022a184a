"""The bound on query-time caches (graphstrata/walkgraph.py read_once, GRAPHSTRATA_QUERY_CACHE_MB) and
the memory estimate behind it (graphstrata/cache_memory.py). No database: read_once keys its cache by
the connection object and calls ``load`` itself."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from graphstrata import config, walkgraph
from graphstrata.cache_memory import deep_bytes


class Connection:  # stands for a Database: read_once only uses it as a (weak) key
    pass


def bound(monkeypatch: pytest.MonkeyPatch, mb: int | None) -> None:
    settings = config.get_settings().model_copy(update={"query_cache_mb": mb})
    monkeypatch.setattr(config, "get_settings", lambda: settings)


def test_estimate_counts_arrays_and_containers() -> None:
    a = np.zeros((1000, 100), dtype=np.float32)
    assert deep_bytes(a) == 400_000
    ids = [f"chunk-{i:06d}" for i in range(1000)]
    held = {"a": a, "ids": ids, "again": a}  # the same array twice counts once
    expected = 400_000 + sys.getsizeof(ids) + sum(map(sys.getsizeof, ids))
    assert expected < deep_bytes(held) < expected + 2_000


def test_values_stay_under_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    bound(monkeypatch, 3)  # 3 MiB
    db = Connection()
    mib = lambda: np.zeros(2**18, dtype=np.float32)  # noqa: E731 - 1 MiB
    _, cached = walkgraph.read_once(db, "one", 1, mib)  # type: ignore[arg-type]
    assert not cached and walkgraph.read_once(db, "one", 1, mib)[1]  # type: ignore[arg-type]
    walkgraph.read_once(db, "two", 1, mib)  # type: ignore[arg-type]
    walkgraph.read_once(db, "three", 1, lambda: np.zeros(2**19, dtype=np.float32))  # type: ignore[arg-type]
    # 1 + 1 + 2 MiB > 3: the oldest ("one") made room
    assert set(walkgraph._CACHE[db]) == {"two", "three"}
    assert sum(walkgraph.cache_bytes(db).values()) <= 3 * 2**20  # type: ignore[arg-type]
    big = lambda: np.zeros(2**20, dtype=np.float32)  # noqa: E731 - 4 MiB: more than the whole bound
    assert walkgraph.read_once(db, "big", 1, big)[1] is False  # type: ignore[arg-type]
    assert walkgraph.read_once(db, "big", 1, big)[1] is False  # read again each time, never kept
    assert "big" not in walkgraph._CACHE[db]


def test_no_bound_keeps_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    bound(monkeypatch, None)
    db = Connection()
    for name in ("a", "b", "c"):
        walkgraph.read_once(db, name, 1, lambda: np.zeros(2**20, dtype=np.float32))  # type: ignore[arg-type]
    assert set(walkgraph._CACHE[db]) == {"a", "b", "c"}
    assert walkgraph.read_once(db, "a", 2, lambda: 0) == (0, False)  # another version: read again
