"""Work that runs beside a question's main path, and work that methods running side by side on one
question share instead of repeating.

- :func:`beside` runs a call on a parked worker thread: a method embeds the question while its
  entities are parsed, fusion runs its methods at once. A question used to start a thread pool for
  each of these (four per fused question); parked workers are reused.
- :func:`single_flight`: the first caller computes (the question's embedding, its entities), the
  others wait for that result. Fusion runs its methods in threads at once, so a cache alone would not
  help (they all miss at the same instant); once computed, the embedder's and linking's own caches
  serve later calls."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, TypeVar

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


# ------------------------------------------------------------------------------------------------
# beside: parked worker threads
# ------------------------------------------------------------------------------------------------

#: a parked worker with nothing to do for this long ends
IDLE_SECONDS = 60.0

_parked: list[_Worker] = []
_parked_lock = threading.Lock()


class _Worker:
    """One thread that runs the calls handed to it, then parks until the next (or ends when idle)."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="graphstrata-beside", daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                future, context, fn, args = self.calls.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with _parked_lock:
                    if self in _parked:
                        _parked.remove(self)
                        return
                continue  # taken off the park meanwhile: its call is on the way
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(context.run(fn, *args))
                except BaseException as e:
                    future.set_exception(e)
            del future, context, fn, args  # hold nothing of a finished call while parked
            with _parked_lock:
                _parked.append(self)


def beside(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on a worker thread, in a copy of the caller's context (the request's deadline,
    :mod:`graphstrata.limits`, reaches it); a parked worker if there is one, else a new one. Never
    queues behind other calls: a call that waits for another ``beside`` call cannot deadlock."""
    future: Future[T] = Future()
    with _parked_lock:
        worker = _parked.pop() if _parked else None
    if worker is None:
        worker = _Worker()
    worker.calls.put((future, contextvars.copy_context(), fn, args))
    return future
