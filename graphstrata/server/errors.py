"""Every error the API returns has one shape, ``{"error": {"code": ..., "message": ...}}``, with a
stable machine-readable code (clients branch on the code, people read the message):

==================  ======  =======================================================================
code                status  meaning
==================  ======  =======================================================================
unauthorized        401     no API key, or a wrong one
forbidden           403     a keyless server refused a foreign Host or a cross-origin state change
not_found           404     no such route, job or document
method_not_allowed  405     the route exists, the HTTP method does not
bad_parameters      400     the request body or a method parameter does not validate
unknown_method      400     no retrieval method of that name (the message lists the available ones)
empty_question      400     the question is empty or only whitespace
bad_document        400     an uploaded file or document cannot be ingested (the message names it)
ambiguous           409     a title or source names several documents; delete by id, or pass all=true
bad_cypher          400     the Cypher a model wrote for POST /cypher/ask is not valid (the message has it)
write_refused       403     the Cypher a model wrote for POST /cypher/ask would write (nothing is run)
cypher_refused      403     the Cypher a model wrote for POST /cypher/ask is not a plain read of the graph
                            (LOAD CSV, a command, a procedure or function off the allow-list): not run
too_large           413     the request body is over the limit (GRAPHSTRATA_MAX_BODY_BYTES)
unsupported_media   415     neither JSON nor multipart/form-data where one of them is needed
too_many_jobs       429     the ingest queue is full
client_closed       499     the client went away before the answer (it never sees this)
deadline_exceeded   504     a question ran past GRAPHSTRATA_REQUEST_TIMEOUT; its work was stopped
storage_unavailable 507     the server's temporary folder (TMPDIR) is full or not writable: the upload
                            could not be stored, nothing was queued or written
llm_unavailable     502     the language model endpoint failed or is not configured for the request
neo4j_unavailable   503     Neo4j does not answer (or refuses our credentials)
schema_mismatch     500     the database was built with another embedding model
write_failed        500     an ingest job could not write: Neo4j refused the transaction (disk full,
                            memory limit) or the LLM cache folder is not writable; the message names
                            the documents or folder (a refused document is never half-written)
internal            500     anything else (details in the server log, never in the response)
==================  ======  =======================================================================
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("graphstrata.server")

STATUS_CODES = {
    400: "bad_parameters",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous",
    413: "too_large",
    415: "unsupported_media",
    422: "bad_parameters",
    429: "too_many_jobs",
}


class ApiError(HTTPException):
    """An error with a stable code. An HTTPException, so FastAPI re-raises it unchanged from body parsing."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)
        self.code = code
        self.message = message


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, "too_large", f"the request body is over the limit of {limit} bytes")


def error_body(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:10]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc or '(body)'}: {err.get('msg')}")
    return "; ".join(parts) or "invalid request"


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into the JSON error shape."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired

    from graphstrata.db import ConnectionError_
    from graphstrata.ingest.pipeline import IngestWriteError
    from graphstrata.llm import LLMError
    from graphstrata.retrieval.base import RetrievalError
    from graphstrata.schema import SchemaError

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status_code, exc.code, exc.message, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = STATUS_CODES.get(exc.status_code, f"http_{exc.status_code}")
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no route {request.method} {request.url.path}"
        return error_response(exc.status_code, code, detail, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "bad_parameters", _validation_message(exc))

    @app.exception_handler(RetrievalError)
    async def _retrieval(request: Request, exc: RetrievalError) -> JSONResponse:
        return error_response(400, "bad_parameters", str(exc))

    async def _neo4j(request: Request, exc: Exception) -> JSONResponse:
        log.warning("Neo4j unavailable: %s", exc)
        return error_response(503, "neo4j_unavailable", f"Neo4j does not answer: {exc}")

    for cls in (ConnectionError_, ServiceUnavailable, SessionExpired):
        app.add_exception_handler(cls, _neo4j)

    @app.exception_handler(SchemaError)
    async def _schema(request: Request, exc: SchemaError) -> JSONResponse:
        return error_response(500, "schema_mismatch", str(exc))

    @app.exception_handler(IngestWriteError)
    async def _write(request: Request, exc: IngestWriteError) -> JSONResponse:
        log.warning("write failed: %s", exc)
        if exc.unavailable:
            return error_response(503, "neo4j_unavailable", str(exc))
        return error_response(500, "write_failed", str(exc))

    @app.exception_handler(LLMError)
    async def _llm(request: Request, exc: LLMError) -> JSONResponse:
        log.warning("LLM failure: %s", exc)
        return error_response(502, "llm_unavailable", str(exc))


class CatchAllMiddleware:
    """Any other exception becomes a 500 ``internal`` answer on a connection that stays usable.

    (A handler for ``Exception`` registered with FastAPI runs in Starlette's outermost middleware,
    which re-raises after answering, and uvicorn then drops the keep-alive connection: the client's
    next, unrelated request fails. This sits inside it and swallows the error once it is answered.)"""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            if started:  # mid-stream: nothing sensible can be sent any more
                raise
            response = error_response(500, "internal", "internal error (details are in the server log)")
            await response(scope, receive, send)
