"""Work that methods running side by side on one question share instead of repeating: the first
caller computes (the question's embedding, its entities), the others wait for that result.

Fusion runs its methods in threads at once, so a cache alone would not help (they all miss at the
same instant); once computed, the embedder's and linking's own caches serve later calls."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_running: dict[Hashable, Future] = {}


def single_flight(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, unless a call with the same `key` is under way: then its result (or error)."""
    with _lock:
        future = _running.get(key)
        owner = future is None
        if owner:
            future = _running[key] = Future()
    if not owner:
        return future.result()
    try:
        result = compute()
    except BaseException as e:
        future.set_exception(e)
        raise
    else:
        future.set_result(result)
        return result
    finally:
        with _lock:
            _running.pop(key, None)
