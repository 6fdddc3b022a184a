"""``GET /documents`` and ``GET /documents/{ref}``: the graph's documents (graphstrata/documents.py)
plus those the server's ingest jobs hold: ``queued`` / ``processing`` while their job waits or runs,
``failed`` with the job's error when it failed before writing them; an uploaded file that could not
be read (corrupt, a scanned PDF with no text) is a ``failed`` document of the graph's own
(graphstrata/documents.py, ``FailedFile``), kept across restarts. A job's report also gives the
reason a chunk's extraction failed, which the graph does not keep.
"""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter, Query

from graphstrata import documents
from graphstrata.documents import DocumentInfo
from graphstrata.server.errors import ApiError

MAX_TRACKED = 10_000  # documents of finished jobs remembered (the graph is the truth for the rest)


class DocumentTracker:
    """Which ingest job holds which document (the last job that was given it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, tuple[Any, Any]] = {}  # document id -> (job, SourceDocument)

    def track(self, job: Any, docs: list[Any]) -> None:
        with self._lock:
            for d in docs:
                self._docs.pop(d.id, None)  # re-inserted: the dict stays in submission order
                self._docs[d.id] = (job, d)
            while len(self._docs) > MAX_TRACKED:
                self._docs.pop(next(iter(self._docs)))

    def failed(self, failures: list[Any]) -> None:
        """Uploaded files that could not be read: no job holds them (the graph keeps their failure)."""
        with self._lock:
            for f in failures:
                self._docs.pop(f.doc.id, None)

    def overlay(self, graph: list[DocumentInfo]) -> list[DocumentInfo]:
        """The graph's documents, with the status the jobs give them; documents only a job knows first."""
        with self._lock:
            held = list(self._docs.values())
        by_id = {d.id: d for d in graph}
        pending: list[DocumentInfo] = []
        for job, doc in held:
            with job.lock:
                state, error, created = job.state, job.error, job.created_at
                failed_chunks = (job.result or {}).get("report", {}).get("failed_chunks", [])
            known = by_id.get(doc.id)
            written = known is not None and known.ingested_ms is not None and known.ingested_ms >= created * 1000
            if state in ("queued", "running"):
                info = DocumentInfo(
                    id=doc.id,
                    title=doc.title,
                    source=doc.source,
                    status="queued" if state == "queued" else "processing",
                    job=job.id,
                )
            elif state == "failed" and not written:
                reason = (error or {}).get("message", "the ingest job failed")
                info = DocumentInfo(
                    id=doc.id, title=doc.title, source=doc.source, status="failed", reason=reason, job=job.id
                )
            else:
                if known is not None and known.status == "failed" and written:
                    errors = [f["error"] for f in failed_chunks if f.get("title") == doc.title and f.get("error")]
                    if errors:
                        known.reason = f"{known.reason}: {errors[0]}"
                continue
            if known is not None:
                info = info.model_copy(
                    update={
                        k: getattr(known, k) for k in ("chunks", "failed_chunks", "chars", "ingested_at", "ingested_ms")
                    }
                )
                by_id[doc.id] = info
            else:
                pending.append(info)
        return pending + [by_id[d.id] for d in graph]


def router(state: Any, tracker: DocumentTracker) -> APIRouter:
    api = APIRouter(tags=["documents"])

    @api.get("/documents", summary="Documents: status, chunks, failed chunks, last ingest (paged)")
    def list_documents(
        status: str | None = Query(None, description="queued, processing, processed or failed"),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=1000),
    ) -> dict[str, Any]:
        """Documents of the graph and of the server's ingest jobs, documents that only a job holds
        first, then by title. `failed` documents carry the `reason`."""
        if status is not None and status not in documents.STATUSES:
            raise ApiError(400, "bad_parameters", f"status must be one of {', '.join(documents.STATUSES)}")
        docs = tracker.overlay(documents.in_graph(state.gs().db))
        return documents.page(docs, status, offset, limit)

    @api.get("/documents/{ref:path}", summary="One document by id, source or title")
    def get_document(ref: str) -> dict[str, Any]:
        """The document with the chunks whose extraction failed (`failed_chunk_list`)."""
        found = documents.find(state.gs().db, ref)
        overlaid = {d.id: d for d in tracker.overlay(found)}
        in_graph = {d.id for d in found}
        held = [d for d in tracker.overlay([]) if ref in (d.id, d.source, d.title) and d.id not in in_graph]
        docs = [overlaid[d.id] for d in found] + held
        if not docs:
            raise ApiError(404, "not_found", f"no document with id, source or title {ref!r}")
        for d in docs:  # the overlay's copy keeps the list of failed chunks
            d.failed_chunk_list = next((f.failed_chunk_list for f in found if f.id == d.id), None)
        return docs[0].model_dump(mode="json", exclude_none=True) | (
            {"others": [d.model_dump(mode="json", exclude_none=True) for d in docs[1:]]} if len(docs) > 1 else {}
        )

    return api
