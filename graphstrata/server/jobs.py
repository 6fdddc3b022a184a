"""Background jobs (ingests) run one at a time by a single worker thread, with progress.

One at a time because ingests write the same shared aggregates (entity descriptions, co-occurrence
weights, keyword sums): running them in sequence is what the pipeline's transactions are designed
for, and it keeps a 2-core machine responsive for queries while an ingest runs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger("graphstrata.server")

JobState = Literal["queued", "running", "succeeded", "failed"]
Progress = Callable[[str, int, int], None]
Work = Callable[[Progress], dict[str, Any]]


@dataclass
class Job:
    id: str
    kind: str
    summary: dict[str, Any]
    work: Work
    state: JobState = "queued"
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    stage: str | None = None
    progress: dict[str, dict[str, int]] = field(default_factory=dict)  # stage -> {done, total}
    result: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def report_progress(self, stage: str, done: int, total: int) -> None:
        with self.lock:
            self.stage = stage
            self.progress[stage] = {"done": done, "total": total}

    def to_dict(self) -> dict[str, Any]:
        with self.lock:
            end = self.finished_at or time.time()
            return {
                "id": self.id,
                "kind": self.kind,
                "state": self.state,
                "created_at": self.created_at,
                "started_at": self.started_at,
                "finished_at": self.finished_at,
                "seconds": round(end - self.started_at, 3) if self.started_at else None,
                "stage": self.stage,
                "progress": {k: dict(v) for k, v in self.progress.items()},
                "summary": self.summary,
                "result": self.result,
                "error": self.error,
            }


class JobQueue:
    """A FIFO of jobs, one worker thread, the last ``keep`` finished jobs remembered."""

    def __init__(
        self, max_queued: int = 100, keep: int = 500, classify: Callable[[BaseException], tuple[str, str]] | None = None
    ) -> None:
        self.max_queued = max_queued
        self.keep = keep
        self.classify = classify or (lambda e: ("internal", "internal error (details are in the server log)"))
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="graphstrata-jobs", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking jobs and wait up to `timeout` for the running one. A job still running when the
        process exits is abandoned: each document lands in one transaction, so none is half-written,
        and re-submitting the same documents finishes the work (unchanged ones are skipped)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            self._thread = None

    def submit(self, kind: str, summary: dict[str, Any], work: Work) -> Job | None:
        """The new job, or None when the queue is full."""
        with self._lock:
            if sum(1 for j in self._jobs.values() if j.state == "queued") >= self.max_queued:
                return None
            job = Job(id=uuid.uuid4().hex, kind=kind, summary=summary, work=work)
            self._jobs[job.id] = job
            self._forget_old()
        self._queue.put(job)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def list(self) -> list[Job]:
        with self._lock:
            return list(reversed(self._jobs.values()))

    def counts(self) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for j in self._jobs.values():
                out[j.state] = out.get(j.state, 0) + 1
            return out

    def _forget_old(self) -> None:
        finished = [k for k, j in self._jobs.items() if j.state in ("succeeded", "failed")]
        for k in finished[: max(0, len(finished) - self.keep)]:
            del self._jobs[k]

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with job.lock:
                job.state = "running"
                job.started_at = time.time()
            try:
                result = job.work(job.report_progress)
            except Exception as exc:  # a job's failure is its state, never the worker's death
                code, message = self.classify(exc)
                if code == "internal":
                    log.exception("job %s failed", job.id)
                with job.lock:
                    job.state, job.error, job.finished_at = "failed", {"code": code, "message": message}, time.time()
            else:
                with job.lock:
                    job.state, job.result, job.finished_at = "succeeded", result, time.time()
