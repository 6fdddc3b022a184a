"""The HTTP API: ingest jobs with progress, retrieval and answers (streamed on request), methods,
health, OpenAPI docs at ``/docs``. ``create_app(settings)`` builds it; ``graphstrata serve`` runs it.

One process holds one :class:`~graphstrata.client.GraphStrata` (one Neo4j driver with its
connection pool, one embedder, one LLM client): request handlers run in the threadpool and share
them; ingests run one at a time in a background worker (:mod:`graphstrata.server.jobs`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Response
from starlette.concurrency import run_in_threadpool

from graphstrata.config import Settings, get_settings
from graphstrata.server.documents import DocumentTracker
from graphstrata.server.errors import CatchAllMiddleware, install
from graphstrata.server.middleware import AuthMiddleware, BodyLimitMiddleware, is_loopback
from graphstrata.server.security import HostOriginMiddleware, install_openapi
from graphstrata.server.state import ServerState

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

    from graphstrata.server import documents, ingest_jobs, openai_compat, openai_embeddings, questions

    app.include_router(ingest_jobs.router(state, tracker, settings))
    app.include_router(questions.router(state, settings))
    app.include_router(documents.router(state, tracker))
    app.include_router(openai_compat.router(state))
    app.include_router(openai_embeddings.router(state))
    return app
