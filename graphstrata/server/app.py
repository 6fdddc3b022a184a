"""The HTTP API: ingest jobs with progress, retrieval and answers (streamed on request), methods,
health, OpenAPI docs at ``/docs``. ``create_app(settings)`` builds it; ``graphstrata serve`` runs it.

One process holds one :class:`~graphstrata.client.GraphStrata` (one Neo4j driver with its
connection pool, one embedder, one LLM client): request handlers run in the threadpool and share
them; ingests run one at a time in a background worker (:mod:`graphstrata.server.jobs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from graphstrata.config import Settings, get_settings
from graphstrata.server.bounded import Bounded
from graphstrata.server.documents import DocumentTracker
from graphstrata.server.errors import ApiError, CatchAllMiddleware, error_body, install
from graphstrata.server.jobs import JobQueue
from graphstrata.server.journal import JobJournal, lost_job
from graphstrata.server.middleware import AuthMiddleware, BodyLimitMiddleware, is_loopback
from graphstrata.server.security import HostOriginMiddleware, install_openapi

log = logging.getLogger("graphstrata.server")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("graphstrata")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()


class InsecureBind(RuntimeError):
    """Listening beyond loopback without an API key."""


# ------------------------------------------------------------------------------------------------
# request and response bodies
# ------------------------------------------------------------------------------------------------


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, description="the document's title")
    text: str = Field(min_length=1, description="its text")
    id: str | None = Field(None, min_length=1, description="its identity; same id = same document")
    source: str | None = Field(None, description="its identity when it has no id")


class DocumentsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn] = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict, description="ingest options (IngestOptions fields)")
    augment: bool | list[str] = Field(
        False, description="after the ingest, build the GDS layers: true for every stage, or a list of stages"
    )


class QueryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(description="the question")
    method: str = Field("vector", description="a retrieval method (GET /methods)")
    params: dict[str, Any] = Field(default_factory=dict, description="the method's parameters (GET /methods)")


class AskIn(QueryIn):
    stream: bool = Field(
        False,
        description="stream the answer as server-sent events: `retrieval`, then `token`s, then `done` "
        "(answer and citations) — or `error`",
    )


class CypherQuestion(BaseModel):
    question: str = Field(min_length=1, description="a question about the graph in plain language")


_DOCUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["documents"],
    "properties": {
        "documents": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["title", "text"],
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "minLength": 1},
                    "id": {"type": "string", "description": "identity; same id = same document"},
                    "source": {"type": "string", "description": "identity when there is no id (default: the title)"},
                },
            },
        },
        "options": {"type": "object", "description": 'IngestOptions fields, e.g. {"chunk_size": 600}'},
        "augment": {
            "description": "build the GDS layers afterwards: true, or a list of stage names",
            "oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}],
        },
    },
}
_UPLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["files"],
    "properties": {
        "files": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": ".txt, .md, .json, .jsonl, .pdf, .html or .docx files",
        },
        "options": {"type": "string", "description": "ingest options as a JSON object"},
        "augment": {"type": "string", "description": "`true`, or a JSON list of stage names"},
    },
}


# ------------------------------------------------------------------------------------------------
# state shared by the handlers
# ------------------------------------------------------------------------------------------------


class ServerState:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._gs: Any = None
        self._lock = threading.Lock()
        self._llm_health: tuple[float, dict[str, Any]] | None = None
        self.jobs = JobQueue(classify=classify_error)
        self.bounded = Bounded()
        self.journal = JobJournal(settings.data_dir / "server" / "jobs.txt")

    def start(self) -> None:
        from graphstrata.embed import get_embedder
        from graphstrata.text.nlp import get_nlp

        self.embedder = get_embedder(self.settings)
        get_nlp()  # spaCy (query entities) loads once, not inside the first question
        self.jobs.start()
        try:
            gs = self.gs()
        except Exception as e:  # serve anyway: /health says what is wrong, requests get 503
            log.warning("not connected to Neo4j yet: %s", e)
        else:
            threading.Thread(target=self._warm, args=(gs,), name="warm-noderag", daemon=True).start()

    def _warm(self, gs: Any) -> None:
        """The PPR methods' projections, built in the background at start: the first question finds them."""
        from graphstrata.retrieval.base import warm

        try:
            warm(gs.db, self.settings.gds_concurrency)
        except Exception as e:  # a question builds it on demand as before
            log.warning("PPR projections not prepared at start: %s", e)

    def gs(self) -> Any:
        """The shared GraphStrata, connected on first use (and again after a failed attempt)."""
        with self._lock:
            if self._gs is None:
                from graphstrata.client import GraphStrata
                from graphstrata.db import Database
                from graphstrata.llm import LLMClient
                from graphstrata.schema import apply_schema

                db = Database.from_settings(self.settings)
                try:
                    apply_schema(db, self.embedder.name, self.embedder.dim)
                except Exception:
                    db.close()
                    raise
                llm = LLMClient.from_settings(self.settings) if self.settings.llm_enabled else None
                self._gs = GraphStrata(self.settings, db=db, embedder=self.embedder, llm=llm)
            return self._gs

    def close(self) -> None:
        self.jobs.stop()
        with self._lock:
            if self._gs is not None:
                if self._gs._llm is not None:
                    self._gs._llm.close()
                self._gs.db.close()
                self._gs = None

    # --- health -------------------------------------------------------------------------------
    def neo4j_health(self) -> dict[str, Any]:
        from graphstrata.gds import GDS

        try:
            gs = self.gs()
            info = gs.db.driver.get_server_info()
            return {
                "reachable": True,
                "version": info.agent.partition("/")[2] or info.agent,
                "gds_version": GDS(gs.db).version(),
                # the store was found older than this server's last write (a restored backup):
                # the connection went on from the store as it is
                "store_rewound": gs.db.bookmark_resets[-5:],
            }
        except Exception as e:
            return {"reachable": False, "error": f"{type(e).__name__}: {e}"}

    def llm_health(self) -> dict[str, Any]:
        """Configured? Does the endpoint answer `GET /models`? (cached for 15 s)"""
        s = self.settings
        if not s.llm_enabled:
            return {"configured": False, "reachable": None}
        now = time.monotonic()
        if self._llm_health and now - self._llm_health[0] < 15:
            return self._llm_health[1]
        import httpx

        base = (s.openai_base_url or "https://api.openai.com/v1").rstrip("/")
        out: dict[str, Any] = {"configured": True, "model": s.chat_model}
        try:
            headers = {"Authorization": f"Bearer {s.openai_api_key}"} if s.openai_api_key else {}
            r = httpx.get(f"{base}/models", headers=headers, timeout=3.0)
            out["reachable"] = r.status_code < 500
            if r.status_code >= 400:
                out["error"] = f"GET /models answered {r.status_code}"
        except httpx.HTTPError as e:
            out.update(reachable=False, error=f"{type(e).__name__}: {e}")
        self._llm_health = (now, out)
        return out


def classify_error(exc: BaseException) -> tuple[str, str]:
    """A failed job's error as (stable code, message)."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired

    from graphstrata.db import ConnectionError_
    from graphstrata.ingest.pipeline import IngestWriteError
    from graphstrata.llm import CacheWriteError, LLMError
    from graphstrata.schema import SchemaError

    if isinstance(exc, ConnectionError_ | ServiceUnavailable | SessionExpired):
        return "neo4j_unavailable", str(exc)
    if isinstance(exc, IngestWriteError):  # the message names the documents and says what was written
        return ("neo4j_unavailable" if exc.unavailable else "write_failed"), str(exc)
    if isinstance(exc, CacheWriteError):
        return "write_failed", str(exc)
    if isinstance(exc, LLMError):
        return "llm_unavailable", str(exc)
    if isinstance(exc, SchemaError):
        return "schema_mismatch", str(exc)
    if isinstance(exc, ApiError):
        return exc.code, exc.message
    return "internal", "internal error (details are in the server log)"


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


def load_uploads(files: list[tuple[str, bytes]], max_bytes: int) -> tuple[list[Any], list[str]]:
    """Documents of uploaded files (the loaders of `graphstrata ingest`) and the identity notes. A
    text file's identity is ``upload:<file name>``, so uploading a file of the same name again
    replaces it (or is a no-op); JSON/JSONL records follow the identity rules of every corpus."""
    from graphstrata.ingest.identity import Candidate, resolve_identities
    from graphstrata.ingest.load import CONVERTED_SUFFIXES, TEXT_SUFFIXES, LoadError, file_candidates

    candidates: list[Candidate] = []
    errors: list[str] = []
    with upload_storage(), tempfile.TemporaryDirectory(prefix="graphstrata-upload-") as tmp:
        seen: set[str] = set()
        for name, data in files:
            safe = safe_filename(name)
            if safe in seen:  # both would be the document upload:<name>: one would silently replace the other
                errors.append(f"{safe}: two files of this name in one upload")
                continue
            seen.add(safe)
            path = Path(tmp) / safe
            path.write_bytes(data)
            try:
                loaded = file_candidates(path, max_bytes)
            except LoadError as e:
                errors.append(f"{safe}: {e.reason}")
                continue
            finally:
                path.unlink(missing_ok=True)
            for c in loaded:
                if path.suffix.lower() in TEXT_SUFFIXES | CONVERTED_SUFFIXES:
                    c = replace(c, doc=replace(c.doc, source=f"upload:{safe}"))
                candidates.append(c)
    if errors:
        raise ApiError(400, "bad_document", "cannot ingest " + "; ".join(errors))
    return resolve_identities(candidates)


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
    try:
        return IngestOptions(**raw)
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


def check_query(q: QueryIn, settings: Settings) -> None:
    from graphstrata.limits import is_blank
    from graphstrata.retrieval.base import METHODS, _load_methods

    _load_methods()
    if q.method not in METHODS:
        raise ApiError(400, "unknown_method", f"unknown method {q.method!r}; available: {', '.join(sorted(METHODS))}")
    if is_blank(q.question):
        raise ApiError(400, "empty_question", "the question is empty")
    if len(q.question) > settings.max_question_chars:
        raise ApiError(
            400,
            "bad_parameters",
            f"the question has {len(q.question)} characters, over the limit of {settings.max_question_chars} "
            "(GRAPHSTRATA_MAX_QUESTION_CHARS)",
        )


def describe_methods() -> list[dict[str, Any]]:
    """Each method with its summary and parameters (type, default, bounds, description)."""
    from graphstrata.retrieval.base import METHODS, _load_methods

    _load_methods()
    out = []
    for name in sorted(METHODS):
        cls = METHODS[name]
        schema = cls.Params.model_json_schema()
        props = schema.get("properties", {})
        params: dict[str, Any] = {}
        for pname, fld in cls.Params.model_fields.items():
            prop = props.get(pname, {})
            entry: dict[str, Any] = {"default": fld.get_default(call_default_factory=True)}
            if "type" in prop:
                entry["type"] = prop["type"]
            elif "anyOf" in prop:
                entry["type"] = [a.get("type", "object") for a in prop["anyOf"]]
            for key in ("description", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum"):
                if key in prop:
                    entry[key] = prop[key]
            params[pname] = entry
        out.append({"name": name, "summary": cls.summary, "parameters": params})
    return out


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


async def stream_answer(stream: Any, result: Any) -> AsyncIterator[bytes]:
    """Server-sent events: ``retrieval`` (the context), ``token`` … , then ``done`` (answer,
    citations) or ``error``. The model's stream is read by a thread; when the client goes away
    (this generator is cancelled) the thread stops at the next piece and closes the model's stream."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancelled = threading.Event()

    def put(kind: str, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone (server shutting down)
            loop.call_soon_threadsafe(pieces.put_nowait, (kind, value))

    def produce() -> None:
        iterator = iter(stream)
        try:
            for piece in iterator:
                if cancelled.is_set():
                    break
                put("token", piece)
            else:
                put("done", stream.answer)
        except Exception as e:
            code, message = classify_error(e)
            if code == "internal":
                log.exception("answer stream failed")
            put("error", error_body(code, message if code != "internal" else "the answer stream failed"))
        finally:
            iterator.close()  # stops the model's HTTP stream if we left early
            put("end", None)

    thread = threading.Thread(target=produce, name="answer-stream", daemon=True)
    try:
        yield sse("retrieval", result.model_dump(mode="json"))
        thread.start()
        while True:
            kind, value = await pieces.get()
            if kind == "token":
                yield sse("token", {"text": value})
            elif kind == "done":
                yield sse(
                    "done",
                    {
                        "answer": value.answer,
                        "citations": value.citations,
                        "model": value.model,
                        "note": value.note,
                        "method": value.method,
                    },
                )
            elif kind == "error":
                yield sse("error", value)
            else:
                return
    finally:
        cancelled.set()


# ------------------------------------------------------------------------------------------------
# the app
# ------------------------------------------------------------------------------------------------

DESCRIPTION = """graphstrata over HTTP: one layered knowledge graph in Neo4j, the retrieval methods of
NodeRAG, KET-RAG, E2GraphRAG, DA-RAG and SG-RAG over it, fused or routed automatically.

Authentication: `Authorization: Bearer <key>` or `X-API-Key: <key>` (GRAPHSTRATA_API_KEY). Errors are
always `{"error": {"code", "message"}}` with a stable code."""


def create_app(settings: Settings | None = None, *, host: str | None = None) -> FastAPI:
    """The FastAPI app. ``host``: the address the server will listen on; without an API key only a
    loopback address is accepted (:class:`InsecureBind` otherwise)."""
    settings = settings or get_settings()
    key = (settings.api_key.get_secret_value() if settings.api_key else "") or None  # "" is no key
    if host is not None and not is_loopback(host) and not key:
        raise InsecureBind(
            f"refusing to listen on {host} without an API key: set GRAPHSTRATA_API_KEY (or listen on 127.0.0.1)"
        )
    state = ServerState(settings)
    tracker = DocumentTracker()  # which job holds which document, for GET /documents

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(state.start)
        try:
            yield
        finally:
            await run_in_threadpool(state.close)

    app = FastAPI(
        title="graphstrata",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.graphstrata = state
    install(app)
    install_openapi(app, key_required=key is not None)
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    if key is None:
        app.add_middleware(HostOriginMiddleware, allowed_hosts=settings.allowed_host_names)
    app.add_middleware(AuthMiddleware, api_key=key)  # outermost: refuse before anything else is read

    # --- documents ----------------------------------------------------------------------------
    @app.post(
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
        (.txt, .md, .json, .jsonl, .pdf, .html, .docx). Everything is validated before the job is queued: an unreadable
        file rejects the whole request (400 `bad_document`) and nothing is written. Returns the job
        (202); poll `GET /jobs/{id}` for its progress and report."""
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
            docs, notes = await run_in_threadpool(load_uploads, files, options.max_document_bytes)
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
        else:
            raise ApiError(415, "unsupported_media", "send application/json or multipart/form-data")
        stages = augment_stages(augment)
        if options.extractor == "llm" and not settings.llm_enabled:
            raise ApiError(400, "llm_unavailable", "extractor 'llm' needs a configured model (OPENAI_*)")
        job = state.jobs.submit(
            "ingest",
            {"documents": len(docs), "titles": [d.title for d in docs[:20]], "augment": stages},
            lambda progress: run_ingest(state, docs, options, stages, progress, notes),
        )
        if job is None:
            raise ApiError(429, "too_many_jobs", "the ingest queue is full; try again later")
        tracker.track(job, docs)
        await run_in_threadpool(state.journal.add, job.id)
        response.headers["Location"] = f"/jobs/{job.id}"
        return job.to_dict()

    @app.delete("/documents/{ref:path}", tags=["documents"], summary="Delete a document")
    def delete_document(ref: str, all: bool = False) -> dict[str, Any]:
        """Delete a document by id, source or title, and whatever only it supported. When a title
        or source names several documents nothing is deleted (409 `ambiguous`, listing their ids)
        unless `all=true`."""
        from graphstrata.cypher import query

        gs = state.gs()
        found = gs.db.read(query("ingest.find_documents"), ref=ref)
        if not found:
            raise ApiError(404, "not_found", f"no document with id, source or title {ref!r}")
        if len(found) > 1 and not all:
            ids = ", ".join(f"{d['id']} ({d['source']})" for d in found[:20])
            raise ApiError(
                409,
                "ambiguous",
                f"{len(found)} documents match {ref!r}: {ids}; delete one by id, or all with ?all=true",
            )
        return {"deleted": [d for f in found for d in gs.delete(f["id"])]}

    @app.get("/jobs/{job_id}", tags=["documents"], summary="An ingest job: state, progress, report")
    def get_job(job_id: str) -> dict[str, Any]:
        """A job of an earlier run of the server answers `state: lost` (error code `lost`)."""
        job = state.jobs.get(job_id)
        if job is None:
            if state.journal.knows(job_id):
                return lost_job(job_id)
            raise ApiError(404, "not_found", f"no job {job_id!r}")
        return job.to_dict()

    @app.get("/jobs", tags=["documents"], summary="Recent jobs, newest first")
    def list_jobs() -> dict[str, Any]:
        return {"jobs": [j.to_dict() for j in state.jobs.list()]}

    # --- questions ----------------------------------------------------------------------------
    @app.post("/retrieve", tags=["questions"], summary="Context for a question")
    async def retrieve(q: QueryIn, request: Request) -> dict[str, Any]:
        """The same as `GraphStrata.retrieve(question, method, **params)`, stopped after
        GRAPHSTRATA_REQUEST_TIMEOUT seconds (504 `deadline_exceeded`) or when the client leaves."""
        check_query(q, settings)
        result = await state.bounded.run(
            request, lambda: state.gs().retrieve(q.question, q.method, **q.params), settings.request_timeout
        )
        return result.model_dump(mode="json")

    @app.post(
        "/ask",
        tags=["questions"],
        summary="An answer with citations (optionally streamed)",
        responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}},
    )
    async def ask(q: AskIn, request: Request) -> Any:
        """The same as `GraphStrata.ask(question, method, **params)`. With `stream: true` the
        answer comes as server-sent events: `retrieval` (the context), `token` (`{"text"}`) …, then
        `done` (`{"answer", "citations", "model"}`) or `error` (`{"error": {"code", "message"}}`)."""
        from graphstrata.generate import AnswerStream

        check_query(q, settings)
        gs = await run_in_threadpool(state.gs)
        if not q.stream:
            answer = await state.bounded.run(
                request, lambda: gs.ask(q.question, q.method, **q.params), settings.request_timeout
            )
            return answer.model_dump(mode="json")
        result = await state.bounded.run(
            request, lambda: gs.retrieve(q.question, q.method, **q.params), settings.request_timeout
        )
        stream = AnswerStream(q.question, result, settings, client=gs.llm)
        return StreamingResponse(
            stream_answer(stream, result),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.post("/cypher/ask", tags=["questions"], summary="A question in plain language, as read-only Cypher")
    def cypher_ask(q: CypherQuestion) -> dict[str, Any]:
        """The configured model writes Cypher from the documented data model; it is run read-only
        (`EXPLAIN` + a READ transaction). `{question, cypher, explanation, keys, rows}`; 403
        `write_refused` for a query that writes, 400 `bad_cypher` for invalid Cypher (the query is in
        the message), 400 `llm_unavailable` with no model configured (a request this server cannot
        serve as configured; 502 is kept for a model endpoint that fails)."""
        from graphstrata import text2cypher
        from graphstrata.cypher.queries import WriteRefused

        if not q.question.strip():
            raise ApiError(400, "empty_question", "the question is empty")
        if not settings.llm_enabled:
            raise ApiError(
                400,
                "llm_unavailable",
                "text-to-Cypher needs a language model and none is configured (OPENAI_BASE_URL/OPENAI_API_KEY and "
                "GRAPHSTRATA_CHAT_MODEL); write the query yourself: `graphstrata cypher --query '…'` or a library "
                "query",
            )
        gs = state.gs()
        draft = text2cypher.draft(gs.db, gs.llm, q.question)
        try:
            return text2cypher.run(gs.db, draft.cypher, q.question, draft.explanation).model_dump(mode="json")
        except WriteRefused as e:
            raise ApiError(403, "write_refused", f"{e}: {draft.cypher}") from e
        except text2cypher.CypherError as e:
            raise ApiError(400, "bad_cypher", f"{e}: {draft.cypher}") from e

    @app.get("/methods", tags=["questions"], summary="Retrieval methods and their parameters")
    def methods() -> dict[str, Any]:
        return {"methods": describe_methods()}

    # --- the service ----------------------------------------------------------------------------
    @app.get("/health", tags=["service"], summary="Neo4j, GDS and LLM reachability (no key needed)")
    async def health(response: Response) -> dict[str, Any]:
        neo4j = await run_in_threadpool(state.neo4j_health)
        llm = await run_in_threadpool(state.llm_health)
        if not neo4j["reachable"]:
            status = "unavailable"
            response.status_code = 503
        else:
            status = "degraded" if llm.get("configured") and not llm.get("reachable") else "ok"
        return {
            "status": status,
            "version": __version__,
            "neo4j": neo4j,
            "llm": llm,
            "auth": key is not None,
            "jobs": state.jobs.counts(),
            "questions": {
                "running": state.bounded.running,
                "deadline_s": settings.request_timeout,
                "max_chars": settings.max_question_chars,
            },
        }

    @app.get("/stats", tags=["service"], summary="Nodes per label and relationships per type")
    def stats() -> dict[str, Any]:
        return state.gs().stats()

    from graphstrata.server import documents, openai_compat

    app.include_router(documents.router(state, tracker))
    app.include_router(openai_compat.router(state))
    return app


def run_ingest(
    state: ServerState, docs: list[Any], options: Any, stages: list[str], progress: Any, notes: list[str] | None = None
) -> dict[str, Any]:
    """The job: ingest, then the requested augment stages, reporting progress as it goes. `notes`: what
    the identity rules did to the request's documents (merged, replaced, renamed), for the report."""
    from graphstrata.cypher import query
    from graphstrata.ingest.pipeline import Ingestor

    gs = state.gs()
    llm = gs.llm if options.extractor in ("auto", "llm") else None
    report = Ingestor(gs.db, gs.embedder, options, False, llm=llm, on_progress=progress).ingest_documents(docs)
    report.identity_notes = (notes or []) + report.identity_notes
    out: dict[str, Any] = {"report": report.model_dump(mode="json")}
    if stages:
        from graphstrata.augment import AugmentContext, run

        ctx = AugmentContext(gs.db, gs.embedder, state.settings, llm=gs.llm)
        reports = []
        for i, name in enumerate(stages):
            progress("augment", i, len(stages))
            reports += run(ctx, [name])
        progress("augment", len(stages), len(stages))
        gs.db.write(query("meta.touch"))
        from graphstrata.retrieval.base import warm

        warm(gs.db, state.settings.gds_concurrency)  # the first PPR question finds its projection built
        out["augment"] = [r.model_dump(mode="json") for r in reports]
    return out
