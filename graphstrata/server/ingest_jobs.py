"""Ingest over HTTP: `POST /documents` (JSON or uploaded files, validated before anything is queued),
`DELETE /documents/…`, `GET /jobs`, and the background job that ingests and augments."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from graphstrata import documents
from graphstrata.config import Settings
from graphstrata.server.documents import DocumentTracker
from graphstrata.server.errors import ApiError
from graphstrata.server.journal import lost_job
from graphstrata.server.models import _DOCUMENTS_SCHEMA, _UPLOAD_SCHEMA, DocumentsIn
from graphstrata.server.state import ServerState

# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


MAX_FILENAME_BYTES = 200  # file systems allow 255; the temporary copy must fit


def safe_filename(name: str | None) -> str:
    """The last path component of an uploaded file's name, without control characters."""
    base = _UNSAFE.sub("", (name or "").replace("\\", "/")).rsplit("/", 1)[-1].strip()
    if base in ("", ".", ".."):
        raise ApiError(400, "bad_document", f"unusable file name {name!r}")
    if len(base.encode()) > MAX_FILENAME_BYTES:
        raise ApiError(400, "bad_document", f"file name {base[:40]!r}… is over {MAX_FILENAME_BYTES} bytes")
    return base


@contextmanager
def upload_storage() -> Iterator[None]:
    """An upload that cannot be stored in the temporary folder (full, read-only, missing) is a clear
    507, not an internal error: nothing was queued or written."""
    try:
        yield
    except OSError as e:
        where = getattr(e, "filename", None) or tempfile.gettempdir()
        raise ApiError(
            507,
            "storage_unavailable",
            f"cannot store the upload in the temporary folder ({where}): {e.strerror or e}; free space there "
            "or start the server with TMPDIR set to a writable folder. Nothing was ingested.",
        ) from e


class UploadFailure:
    """A file of an upload that could not be read (corrupt, a scan with no text, not UTF-8 …): it
    becomes a ``failed`` document with the reason; the other files of the upload are ingested."""

    def __init__(self, name: str, reason: str) -> None:
        from graphstrata.ingest.load import SourceDocument

        self.doc = SourceDocument(source=f"upload:{name}", title=name, text="")
        self.reason = reason

    def to_dict(self) -> dict[str, str]:
        return {"file": self.doc.title, "id": self.doc.id, "reason": self.reason}


def read_upload(path: Path, max_bytes: int) -> list[Any]:
    """The candidates of one uploaded file; any failure to read it is a LoadError with its reason
    (a converter's own error types included: a broken file must not break the batch)."""
    from graphstrata.ingest.load import LoadError, file_candidates

    try:
        return file_candidates(path, max_bytes)
    except LoadError:
        raise
    except Exception as e:  # a converter that failed on this file in a way of its own
        raise LoadError(path.name, f"cannot be read: {type(e).__name__}: {e}") from e


def load_uploads(files: list[tuple[str, bytes]], max_bytes: int) -> tuple[list[Any], list[str], list[UploadFailure]]:
    """Documents of uploaded files (the loaders of `graphstrata ingest`), the identity notes, and the
    files that could not be read. A text file's identity is ``upload:<file name>``, so uploading a
    file of the same name again replaces it (or is a no-op); JSON/JSONL records follow the identity
    rules of every corpus."""
    from graphstrata.ingest.identity import Candidate, resolve_identities
    from graphstrata.ingest.load import CONVERTED_SUFFIXES, TEXT_SUFFIXES, LoadError

    candidates: list[Candidate] = []
    failed: list[UploadFailure] = []
    with upload_storage(), tempfile.TemporaryDirectory(prefix="graphstrata-upload-") as tmp:
        seen: set[str] = set()
        for name, data in files:
            safe = safe_filename(name)
            if safe in seen:  # both would be the document upload:<name>: one would silently replace the other
                raise ApiError(400, "bad_document", f"cannot ingest {safe}: two files of this name in one upload")
            seen.add(safe)
            path = Path(tmp) / safe
            path.write_bytes(data)
            try:
                loaded = read_upload(path, max_bytes)
            except LoadError as e:
                failed.append(UploadFailure(safe, e.reason))
                continue
            finally:
                path.unlink(missing_ok=True)
            for c in loaded:
                if path.suffix.lower() in TEXT_SUFFIXES | CONVERTED_SUFFIXES:
                    c = replace(c, doc=replace(c.doc, source=f"upload:{safe}"))
                candidates.append(c)
    docs, notes = resolve_identities(candidates)
    return docs, notes, failed


def check_documents(docs: list[Any], max_bytes: int) -> None:
    """What the file loaders refuse, refused in JSON documents too (400 `bad_document`)."""
    from graphstrata.limits import is_blank

    for d in docs:
        if is_blank(d.text) or is_blank(d.title):
            raise ApiError(400, "bad_document", f"document {d.title[:80]!r}: empty title or text (only white space)")
        size = len(d.text.encode())
        if size > max_bytes:
            raise ApiError(
                400,
                "bad_document",
                f"document {d.title[:80]!r}: {size} bytes is over the limit of {max_bytes} "
                "(GRAPHSTRATA_MAX_DOCUMENT_BYTES)",
            )


def ingest_options(raw: dict[str, Any]) -> Any:
    from graphstrata.ingest.pipeline import IngestOptions

    unknown = sorted(set(raw) - set(IngestOptions.model_fields))
    if unknown:
        raise ApiError(400, "bad_parameters", f"unknown ingest option(s) {unknown}")
    if raw.get("extract_core_only"):
        raise ApiError(400, "bad_parameters", "extract_core_only is not available over HTTP")
    try:  # as JSON, strictly: `"chunk_size": "600"` or `true` is refused, not coerced
        return IngestOptions.model_validate_json(json.dumps(raw), strict=True)
    except ValidationError as e:
        raise ApiError(400, "bad_parameters", f"bad ingest options: {e.errors()[0]['msg']}") from e


def augment_stages(raw: bool | list[str]) -> list[str]:
    from graphstrata.augment import order

    if raw is False:
        return []
    available = order()
    if raw is True:
        return available
    unknown = [s for s in raw if s not in available]
    if unknown:
        raise ApiError(400, "bad_parameters", f"unknown augment stage(s) {unknown}; available: {available}")
    return [s for s in available if s in raw]


def run_ingest(
    state: ServerState, docs: list[Any], options: Any, stages: list[str], progress: Any, notes: list[str] | None = None
) -> dict[str, Any]:
    """The job: ingest, then the requested augment stages, reporting progress as it goes. `notes`: what
    the identity rules did to the request's documents (merged, replaced, renamed), for the report."""
    gs = state.gs()
    report = gs.ingest_documents(docs, options, on_progress=progress)
    report.identity_notes = (notes or []) + report.identity_notes
    out: dict[str, Any] = {"report": report.model_dump(mode="json")}
    if stages:
        reports = gs.augment(stages, on_stage=lambda name, i, n: progress("augment", i, n))
        progress("augment", len(stages), len(stages))
        out["augment"] = [r.model_dump(mode="json") for r in reports]
    return out


def router(state: ServerState, tracker: DocumentTracker, settings: Settings) -> APIRouter:
    """`POST /documents`, `DELETE /documents/{ref}`, `GET /jobs`, `GET /jobs/{id}`."""
    r = APIRouter()

    @r.post(
        "/documents",
        status_code=202,
        tags=["documents"],
        summary="Ingest documents (a background job)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": _DOCUMENTS_SCHEMA},
                    "multipart/form-data": {"schema": _UPLOAD_SCHEMA},
                },
            }
        },
    )
    async def post_documents(request: Request, response: Response) -> dict[str, Any]:
        """JSON `{documents: [{title, text}], options?, augment?}` or a multipart upload of `files`
        (.txt, .md, .json, .jsonl, .pdf, .html, .docx). Everything is validated before the job is queued. A
        file that cannot be read (corrupt, a scanned PDF with no text) becomes a `failed` document with
        its reason (GET /documents; the job's `summary.failed_files`) and the other files are ingested;
        when no file can be read the request fails (400 `bad_document`) and nothing is written.
        Returns the job (202); poll `GET /jobs/{id}` for its progress and report."""
        from graphstrata.ingest.identity import Candidate, resolve_identities
        from graphstrata.ingest.load import SourceDocument

        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "multipart/form-data":
            # the form spools large files to the temporary folder: a full or read-only one is a clear 507
            with upload_storage():
                async with request.form(max_files=1000, max_fields=100) as form:  # closing deletes spooled files
                    uploads = [f for f in [*form.getlist("files"), *form.getlist("file")] if not isinstance(f, str)]
                    if not uploads:
                        raise ApiError(400, "bad_parameters", "no files: send them in the form field `files`")
                    files = [(f.filename or "", await f.read()) for f in uploads]
                    raw_options = form.get("options")
                    raw_augment = form.get("augment")
            try:
                options_dict = json.loads(raw_options) if isinstance(raw_options, str) and raw_options else {}
                augment = json.loads(raw_augment) if isinstance(raw_augment, str) and raw_augment else False
            except ValueError as e:
                raise ApiError(400, "bad_parameters", f"options/augment must be JSON: {e}") from e
            if not isinstance(options_dict, dict) or not isinstance(augment, bool | list):
                raise ApiError(400, "bad_parameters", "options must be a JSON object, augment true/false or a list")
            options = ingest_options(options_dict)
            docs, notes, failed = await run_in_threadpool(load_uploads, files, options.max_document_bytes)
            tracker.failed(failed)
            # listed by GET /documents as `failed`, with the reason, until read or deleted
            db = state.gs().db
            await run_in_threadpool(
                documents.record_failed, db, [(f.doc.id, f.doc.title, f.doc.source, f.reason) for f in failed]
            )
            await run_in_threadpool(documents.clear_failed, db, [d.id for d in docs])
            if not docs:
                reasons = "; ".join(f"{f.doc.title}: {f.reason}" for f in failed)
                raise ApiError(400, "bad_document", f"cannot ingest {reasons}")
        elif ctype in ("application/json", ""):
            try:
                body = DocumentsIn.model_validate_json(await request.body())
            except ValidationError as e:
                msg = "; ".join(f"{'.'.join(map(str, x['loc'])) or '(body)'}: {x['msg']}" for x in e.errors()[:10])
                raise ApiError(400, "bad_parameters", msg) from e
            options = ingest_options(body.options)
            augment = body.augment
            # the identity rules of every input (graphstrata/ingest/identity.py): two documents with one
            # title and different texts are two documents, never one holding both versions' chunks
            docs, notes = resolve_identities(
                Candidate(
                    SourceDocument(source=d.id or d.source or d.title, title=d.title, text=d.text),
                    bool(d.id or d.source),
                    f"documents[{i}]",
                )
                for i, d in enumerate(body.documents)
            )
            check_documents(docs, options.max_document_bytes)
            failed = []
        else:
            raise ApiError(415, "unsupported_media", "send application/json or multipart/form-data")
        stages = augment_stages(augment)
        if options.extractor == "llm" and not settings.llm_enabled:
            raise ApiError(400, "llm_unavailable", "extractor 'llm' needs a configured model (OPENAI_*)")
        summary = {"documents": len(docs), "titles": [d.title for d in docs[:20]], "augment": stages}
        if failed:
            summary["failed_files"] = [f.to_dict() for f in failed]
        job = state.jobs.submit(
            "ingest",
            summary,
            lambda progress: run_ingest(state, docs, options, stages, progress, notes),
        )
        if job is None:
            raise ApiError(429, "too_many_jobs", "the ingest queue is full; try again later")
        tracker.track(job, docs)
        await run_in_threadpool(state.journal.add, job.id)
        response.headers["Location"] = f"/jobs/{job.id}"
        return job.to_dict()

    @r.delete("/documents/{ref:path}", tags=["documents"], summary="Delete a document")
    def delete_document(ref: str, all: bool = False) -> dict[str, Any]:
        """Delete a document by id, source or title, and whatever only it supported. When a title
        or source names several documents nothing is deleted (409 `ambiguous`, listing their ids)
        unless `all=true`."""
        from graphstrata.ingest.parts import ambiguity, find_documents

        gs = state.gs()
        found = find_documents(gs.db, ref)
        if not found and (gone := documents.forget_failed(gs.db, ref)):  # files that could not be read
            return {"deleted": gone}
        if not found:
            raise ApiError(404, "not_found", f"no document with id, source or title {ref!r}")
        if not all and (why := ambiguity(found, ref)):
            raise ApiError(409, "ambiguous", why + " with ?all=true")
        return {"deleted": [d for f in found for d in gs.delete(f["id"])]}

    @r.get("/jobs/{job_id}", tags=["documents"], summary="An ingest job: state, progress, report")
    def get_job(job_id: str) -> dict[str, Any]:
        """A job of an earlier run of the server answers `state: lost` (error code `lost`)."""
        job = state.jobs.get(job_id)
        if job is None:
            if state.journal.knows(job_id):
                return lost_job(job_id)
            raise ApiError(404, "not_found", f"no job {job_id!r}")
        return job.to_dict()

    @r.get("/jobs", tags=["documents"], summary="Recent jobs, newest first")
    def list_jobs() -> dict[str, Any]:
        return {"jobs": [j.to_dict() for j in state.jobs.list()]}

    return r
