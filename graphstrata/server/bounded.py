"""Questions run under a server-side deadline and stop when their client leaves.

The work runs in the threadpool inside :func:`graphstrata.limits.deadline`; meanwhile the request
waits for it, watching the clock and the connection. Past the deadline the client gets 504
``deadline_exceeded`` at once; when the client disconnects the work is cancelled. Either way the
work itself stops at its next check (each Neo4j read, each step of the long Python loops), and Neo4j
is told the time left as the transaction timeout, so a long query is stopped by the database too.
``running`` counts the work still going on in threads (``/health`` reports it): it falls back to
zero once abandoned work has stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from graphstrata import limits
from graphstrata.server.errors import ApiError

T = TypeVar("T")
POLL_S = 0.25  # how often a waiting request looks at its connection


class Bounded(limits.Running):
    async def run(self, request: Request, work: Callable[[], T], seconds: float) -> T:
        budget = limits.Budget(seconds)
        task = asyncio.ensure_future(run_in_threadpool(self.under(budget, work)))
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=max(min(POLL_S, budget.remaining()), 0.01))
                if task.done():
                    break
                if budget.remaining() <= 0:
                    raise deadline_error(seconds)
                if await request.is_disconnected():
                    raise ApiError(499, "client_closed", "the client closed the connection")
        except BaseException:
            budget.cancelled.set()  # the thread stops at its next check
            task.add_done_callback(_quiet)
            raise
        try:
            return task.result()
        except limits.DeadlineExceeded as e:
            raise deadline_error(seconds) from e
        except Exception as e:  # e.g. Neo4j's own transaction timeout, raised as the deadline passed
            if budget.remaining() <= 0:
                raise deadline_error(seconds) from e
            raise


def deadline_error(seconds: float) -> ApiError:
    return ApiError(504, "deadline_exceeded", limits.too_slow(seconds))


def _quiet(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: abandoned work's error is expected, not "never retrieved"
