"""The ids of the jobs a server accepted, kept in a file so that a later run of the server can tell
a job lost in a restart (``state: lost``) from one that never existed (404).

Jobs themselves live in memory (:mod:`graphstrata.server.jobs`); only their ids are written, one a
line, the newest ``keep`` kept.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("graphstrata.server")
_JOB_ID = re.compile(r"[0-9a-f]{32}")

LOST_MESSAGE = (
    "the server restarted after accepting this job, so its state and report are lost. Every document is "
    "written whole or not at all: submitting the same documents again finishes the work (unchanged ones are "
    "skipped)"
)


class JobJournal:
    def __init__(self, path: Path, keep: int = 10_000) -> None:
        self.path = path
        self.keep = keep
        self._lock = threading.Lock()

    def add(self, job_id: str) -> None:
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as f:
                    f.write(job_id + "\n")
                if self.path.stat().st_size > 2 * self.keep * 33:
                    ids = self.path.read_text().split()[-self.keep :]
                    self.path.write_text("".join(i + "\n" for i in ids))
            except OSError as e:  # the journal is a courtesy: the job runs anyway
                log.warning("cannot record job %s in %s: %s", job_id, self.path, e)

    def knows(self, job_id: str) -> bool:
        if not _JOB_ID.fullmatch(job_id):
            return False
        with self._lock:
            try:
                return job_id in self.path.read_text().split()
            except OSError:
                return False


def lost_job(job_id: str) -> dict[str, Any]:
    return {"id": job_id, "kind": "ingest", "state": "lost", "error": {"code": "lost", "message": LOST_MESSAGE}}
