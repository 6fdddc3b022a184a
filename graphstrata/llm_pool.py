"""Running many LLM calls at once: a thread pool bounded like the client's HTTP requests."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_threads(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    *,
    progress: Callable[[int, int], None] | None = None,
    return_exceptions: bool = False,
) -> list[R | BaseException]:
    """``[fn(item) ...]`` over a pool of ``workers`` threads, results in input order.

    ``progress(done, total)`` is called from the calling thread after each item. With
    ``return_exceptions`` a failing item yields its exception in place of a result, so one bad
    chunk does not abort a corpus (the caller reports it); otherwise the first error is raised.
    """
    items = list(items)
    results: list[Any] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="llm") as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                i = futures[future]
                try:
                    results[i] = future.result()
                except Exception as exc:
                    if not return_exceptions:
                        raise
                    results[i] = exc
                if progress:
                    progress(done, len(items))
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return results
