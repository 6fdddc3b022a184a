"""Progress of long stages: a terminal bar with count, rate and time left, and/or a callback
``on_progress(stage, done, total)`` (the HTTP server's job progress)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

Advance = Callable[[int], None]


def _rate_column():
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second over rich's recent-speed window (blank until it has two samples)."""

        def render(self, task) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")

    return RateColumn()


class Tracker:
    """``with tracker.stage(name, total) as advance: ... advance(n)``; a no-op when neither shown nor observed.

    A stage entered again (ingest's next batch) continues its bar and its counts: its total grows by
    the new ``total``. ``seconds`` holds the time spent in each stage."""

    def __init__(self, show: bool = False, on_progress: Callable[[str, int, int], None] | None = None) -> None:
        self.show = show
        self.on_progress = on_progress
        self.bar = None
        self.tasks: dict[str, object] = {}
        self.counts: dict[str, list[int]] = {}  # stage -> [done, total]
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()  # ingest's stages run on three threads

    def _start(self) -> None:
        if self.show and self.bar is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description:<22}"),
                BarColumn(),
                MofNCompleteColumn(),
                _rate_column(),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.bar.start()

    @contextlib.contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[Advance]:
        with self._lock:
            self._start()
            counts = self.counts.setdefault(name, [0, 0])
            counts[1] += total or 0
            task = None
            if self.bar is not None and total != 0:
                if name in self.tasks:
                    task = self.tasks[name]
                    self.bar.update(task, total=counts[1])
                else:
                    task = self.tasks[name] = self.bar.add_task(name, total=total)
            now = counts[0], counts[1]
        if self.on_progress is not None and total:
            self.on_progress(name, *now)

        def advance(n: int = 1) -> None:
            with self._lock:
                counts[0] += n
                if task is not None:
                    self.bar.advance(task, n)
                now = counts[0], counts[1]
            if self.on_progress is not None and now[1]:
                self.on_progress(name, *now)

        started = time.perf_counter()
        try:
            yield advance
        finally:
            with self._lock:
                self.seconds[name] += time.perf_counter() - started
            if task is not None and total is None:
                self.bar.update(task, total=1, completed=1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
