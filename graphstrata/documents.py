"""The document list: each document's title, source, status, chunks and the chunks whose knowledge
extraction failed, read from the graph. Used by ``graphstrata documents``, ``GET /documents`` (which
adds the documents of queued, running and failed ingest jobs) and the MCP tool ``list_documents``.

Status: ``processed`` (in the graph, every chunk extracted or deliberately skipped), ``failed``
(with the reason: some chunks' extraction failed, and the next ingest retries them; or its ingest
job failed; or the file could not be read — a ``FailedFile`` node keeps its reason until the file is
ingested readable or deleted), ``queued`` / ``processing`` (an ingest job of the server holds it).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from graphstrata.cypher import query
from graphstrata.db import Database

Status = Literal["queued", "processing", "processed", "failed"]
STATUSES: tuple[str, ...] = ("queued", "processing", "processed", "failed")


class FailedChunk(BaseModel):
    id: str
    ordinal: int


class DocumentInfo(BaseModel):
    id: str
    title: str
    source: str
    status: Status
    reason: str | None = Field(None, description="why the status is failed")
    chunks: int = 0
    failed_chunks: int = Field(0, description="chunks whose knowledge extraction failed")
    chars: int | None = None
    ingested_at: str | None = Field(None, description="when it was last (re)ingested")
    ingested_ms: int | None = Field(None, exclude=True)
    job: str | None = Field(None, description="the ingest job of a queued, processing or failed document")
    failed_chunk_list: list[FailedChunk] | None = Field(None, description="with GET /documents/{id} only")


def extraction_reason(failed: int, chunks: int) -> str:
    return f"knowledge extraction failed for {failed} of {chunks} chunks (the next ingest retries them)"


def _info(row: dict[str, Any]) -> DocumentInfo:
    failed = row["failed_chunks"]
    return DocumentInfo(
        **row,
        status="failed" if failed else "processed",
        reason=extraction_reason(failed, row["chunks"]) if failed else None,
    )


def in_graph(db: Database) -> list[DocumentInfo]:
    """Every document in the graph and every file that could not be read, by title."""
    docs = [_info(r) for r in db.read(query("documents.list"))] + failed_files(db)
    return sorted(docs, key=lambda d: (d.title, d.id))


def find(db: Database, ref: str) -> list[DocumentInfo]:
    """Documents (and unreadable files) whose id, source or title is ``ref``, with their failed chunks."""
    return [_info(r) for r in db.read(query("documents.get"), ref=ref)] + failed_files(db, ref)


def failed_files(db: Database, ref: str | None = None) -> list[DocumentInfo]:
    """Files that could not be read (``FailedFile``), unless a readable version is in the graph now;
    with ``ref``, those whose id, source or title it is."""
    failed = [DocumentInfo(**r, status="failed") for r in db.read(query("documents.failed_files"))]
    return [f for f in failed if ref is None or ref in (f.id, f.source, f.title)]


def record_failed(db: Database, failures: list[tuple[str, str, str, str]]) -> None:
    """Keep (id, title, source, reason) of files that could not be read: listed as ``failed`` documents."""
    if failures:
        rows = [dict(zip(("id", "title", "source", "reason"), f, strict=True)) for f in failures]
        db.write(query("documents.record_failed"), rows=rows)


def clear_failed(db: Database, ids: list[str]) -> None:
    """Forget the failures of these document ids (their files were read now)."""
    if ids:
        db.write(query("documents.clear_failed"), ids=ids)


def forget_failed(db: Database, ref: str) -> list[dict[str, str]]:
    """Delete the failures of the unreadable files ``ref`` names (id, source or title): ``{id, title,
    source}`` of each (what a delete answers)."""
    gone = failed_files(db, ref)
    clear_failed(db, [f.id for f in gone])
    return [{"id": f.id, "title": f.title, "source": f.source} for f in gone]


def page(docs: list[DocumentInfo], status: str | None, offset: int, limit: int) -> dict[str, Any]:
    """``{documents, total, offset, limit}``: the documents of ``status`` (all when None), one page."""
    chosen = [d for d in docs if status is None or d.status == status]
    return {
        "documents": [d.model_dump(mode="json", exclude_none=True) for d in chosen[offset : offset + limit]],
        "total": len(chosen),
        "offset": offset,
        "limit": limit,
    }
