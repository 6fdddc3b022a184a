"""Work that runs beside a question's main path, and work that methods running side by side on one
question share instead of repeating.

- :func:`beside` runs a call on a parked worker thread: a method embeds the question while its
  entities are parsed, fusion runs its methods at once. A question used to start a thread pool for
  each of these (four per fused question); parked workers are reused.
- :func:`single_flight`: the first caller computes (the question's embedding, its entities and
  their links, the entry points' read), the others wait for that result. Fusion runs its methods in
  threads at once, so a cache alone would not help (they all miss at the same instant); within one
  fusion its results are kept until the fusion ends (:class:`FusedQuestion`), so a member that
  comes late shares them too."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from graphstrata.retrieval.base import RetrieverParams

T = TypeVar("T")


class Flights:
    """Calls by key: the first caller computes, callers meanwhile wait for its result (or error).
    ``keep``: later callers get it too, for as long as this object lives (a fusion's question)."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._calls: dict[Hashable, Future] = {}

    def __call__(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            future = self._calls.get(key)
            owner = future is None
            if owner:
                future = self._calls[key] = Future()
        if not owner:
            return future.result()
        try:
            result = compute()
        except BaseException as e:
            future.set_exception(e)
            with self._lock:  # an error is not kept: the next caller tries again
                self._calls.pop(key, None)
            raise
        future.set_result(result)
        if not self.keep:
            with self._lock:
                self._calls.pop(key, None)
        return result


@dataclass
class FusedQuestion:
    """The methods a fusion runs on one question: their parameters (a method can ask for its part of
    a read another needs, :mod:`graphstrata.retrieval.entries`), and what they computed about the
    question, kept until the fusion ends, so that a member that comes late to a shared computation
    still gets its result."""

    params: Mapping[str, RetrieverParams]
    flights: Flights = field(default_factory=lambda: Flights(keep=True))


#: the fusion the current call runs in (None outside one); fusion sets it for its members' threads
FUSED: contextvars.ContextVar[FusedQuestion | None] = contextvars.ContextVar("fused", default=None)

_flights = Flights()


def single_flight(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, unless a call with the same `key` is under way: then its result (or error).
    Inside a fusion, also the result of an earlier call of the same fusion."""
    fused = FUSED.get()
    return (fused.flights if fused is not None else _flights)(key, compute)


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
