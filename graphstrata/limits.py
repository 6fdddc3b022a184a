"""Bounds on the work one request may cause: a deadline that retrieval code checks as it goes, and
what counts as an empty text.

A deadline is set around a piece of work (``with deadline(30): ...``) and lives in a context
variable, so everything that work calls sees it without passing it along: every Neo4j read checks
it and gives the database the time that is left as its transaction timeout, and the long Python
loops (subgraph matching) check it between steps. Whoever runs the work can also cancel it (the
HTTP client went away): the next check raises. Threads started inside the work inherit it when
they are started with ``contextvars.copy_context().run`` (as fusion does).
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(RuntimeError):
    """The work ran past its deadline, or whoever waited for it is gone."""


class Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.cancelled = threading.Event()

    def remaining(self) -> float:
        return self.ends - time.monotonic()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise DeadlineExceeded("the request was cancelled (the client went away)")
        if self.remaining() <= 0:
            raise DeadlineExceeded(f"the request ran past its deadline of {self.seconds:g} s")


_budget: ContextVar[Budget | None] = ContextVar("graphstrata_budget", default=None)


def current() -> Budget | None:
    return _budget.get()


def check() -> None:
    """Raise DeadlineExceeded if the current work is past its deadline or cancelled (no deadline: no-op)."""
    budget = _budget.get()
    if budget is not None:
        budget.check()


def remaining() -> float | None:
    """Seconds left to the current deadline, None without one."""
    budget = _budget.get()
    return None if budget is None else budget.remaining()


@contextmanager
def deadline(budget: Budget | float) -> Iterator[Budget]:
    """Run the block under ``budget`` (or a new one of that many seconds)."""
    budget = budget if isinstance(budget, Budget) else Budget(budget)
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


def too_slow(seconds: float) -> str:
    """What a client is told when its work ran past the request deadline (HTTP 504, MCP, /v1)."""
    return (
        f"no answer within {seconds:g} s (GRAPHSTRATA_REQUEST_TIMEOUT); the work was stopped — "
        "try a shorter question or a cheaper method"
    )


class Running:
    """Work running in threads under a deadline, counted (``running``) until it stops: abandoned work
    — its client gone or its deadline past — counts until it reaches its next check. The HTTP API and
    the MCP server each keep one (``/health`` reports it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0

    def under(self, budget: Budget, work: Callable[[], T]) -> Callable[[], T]:
        """``work`` to run in a thread: under ``budget``, and counted while it runs."""

        def inner() -> T:
            with self._lock:
                self.running += 1
            try:
                with deadline(budget):
                    return work()
            finally:
                with self._lock:
                    self.running -= 1

        return inner


def is_blank(text: str) -> bool:
    """Nothing but white space, control and format characters (zero-width spaces and joiners, BOM)."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp") for ch in text)


def question_too_long(question: str, limit: int) -> str | None:
    """Why ``question`` is over ``limit`` characters (GRAPHSTRATA_MAX_QUESTION_CHARS), or None. The
    HTTP API, /v1 and MCP all apply it, with this message."""
    if len(question) <= limit:
        return None
    return f"the question has {len(question)} characters, over the limit of {limit} (GRAPHSTRATA_MAX_QUESTION_CHARS)"
