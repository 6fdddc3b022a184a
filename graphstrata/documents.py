"""The document list: each document's title, source, status, chunks and the chunks whose knowledge
extraction failed, read from the graph. Used by ``graphstrata documents``, ``GET /documents`` (which
adds the documents of queued, running and failed ingest jobs) and the MCP tool ``list_documents``.

Status: ``processed`` (in the graph, every chunk extracted or deliberately skipped), ``failed``
(with the reason: some chunks' extraction failed, and the next ingest retries them; or its ingest
job failed), ``queued`` / ``processing`` (an ingest job of the server holds it).
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
    """Every document in the graph, by title."""
    return [_info(r) for r in db.read(query("documents.list"))]


def find(db: Database, ref: str) -> list[DocumentInfo]:
    """Documents whose id, source or title is ``ref``, with their failed chunks."""
    return [_info(r) for r in db.read(query("documents.get"), ref=ref)]


def page(docs: list[DocumentInfo], status: str | None, offset: int, limit: int) -> dict[str, Any]:
    """``{documents, total, offset, limit}``: the documents of ``status`` (all when None), one page."""
    chosen = [d for d in docs if status is None or d.status == status]
    return {
        "documents": [d.model_dump(mode="json", exclude_none=True) for d in chosen[offset : offset + limit]],
        "total": len(chosen),
        "offset": offset,
        "limit": limit,
    }
