"""The memory of query-time caches (graphstrata/walkgraph.py ``read_once``): an estimate of what a
cached value holds, numpy and scipy arrays by their buffers, Python objects by ``sys.getsizeof``
followed through containers and attributes (each object once)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: an object array is estimated from this many of its elements (ids: similar strings)
OBJECT_SAMPLE = 1000


def deep_bytes(x: Any, seen: set[int] | None = None) -> int:
    """Bytes held by ``x`` and what it refers to (an estimate: shared objects counted once)."""
    seen = set() if seen is None else seen
    if id(x) in seen:
        return 0
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        if x.dtype != object or x.size == 0:
            return int(x.nbytes)
        sample = x.ravel()[:OBJECT_SAMPLE]
        return int(x.nbytes) + sum(sys.getsizeof(v) for v in sample) * x.size // sample.size
    size = sys.getsizeof(x)
    if isinstance(x, str | bytes | int | float | bool | type(None)):
        return size
    if isinstance(x, dict):
        return size + sum(deep_bytes(k, seen) + deep_bytes(v, seen) for k, v in x.items())
    if isinstance(x, list | tuple | set | frozenset):
        return size + sum(deep_bytes(v, seen) for v in x)
    if hasattr(x, "__dict__"):
        size += deep_bytes(vars(x), seen)
    for slot in getattr(type(x), "__slots__", ()):
        if hasattr(x, slot):
            size += deep_bytes(getattr(x, slot), seen)
    return size
