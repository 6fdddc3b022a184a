"""graphstrata as an MCP server (the official ``mcp`` SDK), for agents and MCP-aware chat clients.

Tools: ``retrieve``, ``ask``, ``methods``, ``list_documents``, ``ingest_text``, ``delete_document``
and ``cypher`` (the named read queries of the analysts' library only, run in a READ transaction —
never free Cypher). Resources: the data model (docs/data-model.md) and one description per
retrieval method.

The tools hold the HTTP API's limits: a question is at most GRAPHSTRATA_MAX_QUESTION_CHARS characters
and not blank; `retrieve` and `ask` run under GRAPHSTRATA_REQUEST_TIMEOUT (the deadline of
:mod:`graphstrata.limits`, checked by every Neo4j read and the long loops) and stop when the client
cancels the call or goes away; `ingest_text` refuses a blank title or text; `delete_document`
refuses a title or source that names several documents unless ``all`` is true.

``graphstrata mcp`` speaks stdio (a client starts it as a subprocess) or streamable HTTP (``--http``:
at ``/mcp``, behind the same API-key and body-size middleware as ``graphstrata serve``).
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from graphstrata import limits
from graphstrata.config import Settings, get_settings

DATA_MODEL = Path(__file__).resolve().parents[1] / "docs" / "data-model.md"
MAX_ROWS = 500  # rows of a cypher tool call: an agent's context is small
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def reported(fn: F) -> F:
    """The caller's mistakes (unknown method or query, bad parameter, a refused write) reach the
    client as a tool error with our message; the SDK would replace any other exception's text by a
    generic one."""
    from graphstrata.analysts import LibraryError, WriteRefused
    from graphstrata.limits import DeadlineExceeded
    from graphstrata.retrieval.base import RetrievalError

    caller_errors = (LibraryError, WriteRefused, RetrievalError, ValueError, DeadlineExceeded)
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except caller_errors as e:
                raise ToolError(str(e)) from e

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except caller_errors as e:
            raise ToolError(str(e)) from e

    return wrapper  # type: ignore[return-value]


class Work(limits.Running):
    """Tool calls still running in threads (``running``): abandoned work is counted until it
    reaches its next deadline check and stops."""

    async def run(self, work: Callable[[], T], seconds: float) -> T:
        """``work()`` in a thread under a deadline of ``seconds`` (:mod:`graphstrata.limits`, the HTTP
        API's mechanism). Past the deadline, or when the call is cancelled (the client sent
        `notifications/cancelled` or went away), the caller stops waiting at once and the thread
        stops at its next check: no work runs on for a client that gave up."""
        budget = limits.Budget(seconds)
        try:
            with anyio.fail_after(seconds):
                return await anyio.to_thread.run_sync(self.under(budget, work), abandon_on_cancel=True)
        except (TimeoutError, limits.DeadlineExceeded) as e:  # our wait ended, or the work's own check came first
            raise limits.DeadlineExceeded(limits.too_slow(seconds)) from e
        finally:
            budget.cancelled.set()  # finished: no effect; abandoned: the thread stops at its next check


WORK = Work()


def check_question(question: str, settings: Settings) -> None:
    """The HTTP API's rules for a question: not blank, at most GRAPHSTRATA_MAX_QUESTION_CHARS."""
    from graphstrata.limits import is_blank, question_too_long

    if is_blank(question):
        raise ValueError("the question is empty")
    too_long = question_too_long(question, settings.max_question_chars)
    if too_long:
        raise ValueError(too_long)


class Graph:
    """One GraphStrata for the server's life, connected on first use (a client may only list tools)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._gs: Any = None
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        with self._lock:
            if self._gs is None:
                from graphstrata.client import GraphStrata

                self._gs = GraphStrata(self.settings)
            return self._gs

    def close(self) -> None:
        with self._lock:
            if self._gs is not None:
                self._gs.close()
                self._gs = None


def _items(result: Any) -> list[dict[str, Any]]:
    return [
        {
            "n": i,
            "node_id": it.node_id,
            "label": it.label,
            "score": round(it.score, 4),
            "documents": it.doc_titles,
            "text": it.text,
            "why": it.why,
        }
        for i, it in enumerate(result.items, 1)
    ]


def method_text(name: str) -> str:
    """A method's summary and parameters with defaults, as Markdown."""
    from graphstrata.server.questions import describe_methods

    info = next(m for m in describe_methods() if m["name"] == name)
    lines = [
        f"# {name}",
        "",
        info["summary"],
        "",
        "| parameter | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for pname, p in info["parameters"].items():
        lines.append(f"| {pname} | {p.get('type', '')} | {json.dumps(p['default'])} | {p.get('description', '')} |")
    return "\n".join(lines) + "\n"


def build(settings: Settings | None = None) -> tuple[MCPServer, Graph]:
    """The MCP server and the graph handle its tools share."""
    from graphstrata import analysts as lib
    from graphstrata.retrieval.base import registered_methods

    settings = settings or get_settings()
    graph = Graph(settings)
    methods = list(registered_methods())
    from graphstrata import __version__

    server = MCPServer(
        name="graphstrata",
        version=__version__,  # clients show and log it (serverInfo.version)
        instructions=(
            "A knowledge graph of the user's documents in Neo4j. `retrieve` gives ranked evidence with node ids "
            "(try method 'auto'); `ask` a cited answer; `cypher` runs the analysts' named read queries "
            "(`methods` and the resources describe the retrieval methods and the data model)."
        ),
    )

    @server.tool()
    @reported
    async def retrieve(
        question: str, method: str = "auto", budget: int = 2000, top_k: int | None = None
    ) -> dict[str, Any]:
        """Evidence for a question from the graph: ranked passages/nodes, each with its node id,
        documents and why it was chosen. `method`: one of the retrieval methods (tool `methods`)."""
        check_question(question, settings)
        params: dict[str, Any] = {"budget": budget} | ({"top_k": top_k} if top_k else {})
        r = await WORK.run(lambda: graph().retrieve(question, method, **params), settings.request_timeout)
        return {"method": r.method, "tokens": r.tokens, "items": _items(r), "notes": r.notes}

    @server.tool()
    @reported
    async def ask(question: str, method: str = "auto") -> dict[str, Any]:
        """An answer citing its evidence ([n] = item n, `citations` = node ids). With no language
        model configured: the evidence and a note saying so."""
        check_question(question, settings)
        a = await WORK.run(lambda: graph().ask(question, method), settings.request_timeout)
        return {
            "answer": a.answer,
            "citations": a.citations,
            "note": a.note,
            "model": a.model,
            "evidence": _items(a.retrieval),
        }

    @server.tool(name="methods")
    @reported
    def list_methods() -> list[dict[str, Any]]:
        """The retrieval methods with their summaries and parameters (with defaults)."""
        from graphstrata.server.questions import describe_methods

        return describe_methods()

    @server.tool()
    @reported
    def list_documents(status: str | None = None, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """Documents in the graph: title, source, status (processed, or failed with the reason),
        chunks, chunks whose extraction failed, when last ingested. `status` filters."""
        from graphstrata import documents

        if status is not None and status not in documents.STATUSES:
            raise ValueError(f"status must be one of {documents.STATUSES}")
        if offset < 0 or not 1 <= limit <= 500:
            raise ValueError(f"offset must be 0 or more and limit from 1 to 500 (got offset {offset}, limit {limit})")
        return documents.page(documents.in_graph(graph().db), status, offset, limit)

    @server.tool()
    @reported
    def ingest_text(title: str, text: str, source: str | None = None) -> dict[str, Any]:
        """Add (or replace) one document. `source` is its identity (default: the title): the same
        source again replaces the document, unchanged text is a no-op."""
        from graphstrata.ingest.load import SourceDocument
        from graphstrata.limits import is_blank

        # a blank text would be written as a Document with no chunks: refuse it as the HTTP API does
        if is_blank(title):
            raise ValueError("the title is empty")
        if is_blank(text):
            raise ValueError("the text is empty (or only white space and invisible characters)")
        if source is not None and is_blank(source):
            raise ValueError("the source is empty; leave it out to use the title")
        gs = graph()
        doc = SourceDocument(source=source or title, title=title, text=text)
        report = gs._ingestor(None, False).ingest_documents([doc])
        return report.model_dump(
            mode="json",
            include={"documents_new", "documents_replaced", "documents_unchanged", "chunks", "failed_chunks"},
        )

    @server.tool()
    @reported
    def delete_document(ref: str, all: bool = False) -> dict[str, Any]:
        """Delete a document by id, source or title, with whatever only it supported. A title or
        source naming several documents deletes nothing (the error lists their ids) unless `all`."""
        from graphstrata import documents
        from graphstrata.ingest.parts import ambiguity, find_documents

        gs = graph()
        found = find_documents(gs.db, ref)
        if not found and (gone := documents.forget_failed(gs.db, ref)):  # files that could not be read
            return {"deleted": gone}
        if not found:
            raise ValueError(f"no document with id, source or title {ref!r}")
        if not all and (why := ambiguity(found, ref)):
            raise ValueError(why + " with all=true")
        return {"deleted": [d for f in found for d in gs.delete(f["id"])]}

    library = lib.library()
    catalogue = "\n".join(f"- {q.name}({q.signature()}): {q.summary}" for q in library.values())

    @reported
    def cypher(name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        s = get_settings()
        result = lib.run_library(
            graph().db, name, params or {}, timeout=s.cypher_timeout, max_rows=min(MAX_ROWS, s.cypher_max_rows)
        )
        return {"columns": result.keys, "rows": result.rows, "truncated": result.capped}

    server.add_tool(
        cypher,
        name="cypher",
        description="Run a named read query of graphstrata's analysts' library (read-only; no free Cypher). "
        f"`params` maps parameter names to values. Queries:\n{catalogue}",
    )

    @server.resource("graphstrata://data-model", name="data-model", mime_type="text/markdown")
    def data_model() -> str:
        """graphstrata's graph: every label, property and relationship type, and which paper each serves."""
        if not DATA_MODEL.exists():
            return "docs/data-model.md is not installed with this copy of graphstrata."
        return DATA_MODEL.read_text()

    def describe(name: str) -> Any:
        def read() -> str:
            return method_text(name)

        return read

    for name in methods:
        server.resource(
            f"graphstrata://methods/{name}",
            name=f"method-{name}",
            description=f"the retrieval method {name}: summary and parameters",
            mime_type="text/markdown",
        )(describe(name))

    return server, graph


def http_app(server: MCPServer, settings: Settings, host: str) -> Any:
    """The streamable-HTTP app at /mcp behind the HTTP API's auth and body limit."""
    from graphstrata.server import InsecureBind
    from graphstrata.server.middleware import AuthMiddleware, BodyLimitMiddleware, is_loopback

    key = (settings.api_key.get_secret_value() if settings.api_key else "") or None
    if not is_loopback(host) and not key:
        raise InsecureBind(
            f"refusing to listen on {host} without an API key: set GRAPHSTRATA_API_KEY (or listen on 127.0.0.1)"
        )
    app = server.streamable_http_app(host=host)
    return AuthMiddleware(BodyLimitMiddleware(app, limit=settings.max_body_bytes), api_key=key)
