"""Questions over HTTP: `POST /retrieve`, `POST /ask` (optionally streamed as server-sent events),
`POST /cypher/ask`, `GET /methods`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from graphstrata.config import Settings
from graphstrata.server.errors import ApiError, error_body
from graphstrata.server.models import AskIn, CypherQuestion, QueryIn
from graphstrata.server.state import ServerState, classify_error

log = logging.getLogger("graphstrata.server")


def check_query(q: QueryIn, settings: Settings) -> None:
    from graphstrata.limits import is_blank
    from graphstrata.retrieval.base import registered_methods

    methods = registered_methods()
    if q.method not in methods:
        raise ApiError(400, "unknown_method", f"unknown method {q.method!r}; available: {', '.join(methods)}")
    if is_blank(q.question):
        raise ApiError(400, "empty_question", "the question is empty")
    check_length(q.question, settings)
    check_params(methods[q.method], q.params)


def check_params(method: Any, params: dict[str, Any]) -> None:
    """A method's parameters as JSON, strictly (`top_k: true` is no number): 400 `bad_parameters`."""
    from pydantic import ValidationError

    try:
        method.Params.model_validate_json(json.dumps(params), strict=True)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise ApiError(400, "bad_parameters", f"bad parameters for {method.name}: {where}: {first['msg']}") from e


def check_length(question: str, settings: Settings) -> None:
    """400 `bad_parameters` for a question over GRAPHSTRATA_MAX_QUESTION_CHARS (every surface's limit)."""
    from graphstrata.limits import question_too_long

    message = question_too_long(question, settings.max_question_chars)
    if message:
        raise ApiError(400, "bad_parameters", message)


def describe_methods() -> list[dict[str, Any]]:
    """Each method with its summary and parameters (type, default, bounds, description)."""
    from graphstrata.retrieval.base import registered_methods

    out = []
    for name, cls in registered_methods().items():
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


def router(state: ServerState, settings: Settings) -> APIRouter:
    """The question routes."""
    r = APIRouter()

    @r.post("/retrieve", tags=["questions"], summary="Context for a question")
    async def retrieve(q: QueryIn, request: Request) -> dict[str, Any]:
        """The same as `GraphStrata.retrieve(question, method, **params)`, stopped after
        GRAPHSTRATA_REQUEST_TIMEOUT seconds (504 `deadline_exceeded`) or when the client leaves."""
        check_query(q, settings)
        result = await state.bounded.run(
            request, lambda: state.gs().retrieve(q.question, q.method, **q.params), settings.request_timeout
        )
        return result.model_dump(mode="json")

    @r.post(
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

    @r.post("/cypher/ask", tags=["questions"], summary="A question in plain language, as read-only Cypher")
    async def cypher_ask(q: CypherQuestion, request: Request) -> dict[str, Any]:
        """The configured model writes Cypher from the documented data model; it runs only if it is a
        plain read of the graph (allow-listed clauses, procedures and functions; the planner's `EXPLAIN`
        must agree), in a READ transaction stopped after GRAPHSTRATA_CYPHER_TIMEOUT seconds, with at
        most GRAPHSTRATA_CYPHER_MAX_ROWS rows (`capped: true` when more matched).
        `{question, cypher, explanation, keys, rows, capped, max_rows}`; 403 `write_refused` for a query
        that writes, 403 `cypher_refused` for anything else that is not a plain read (LOAD CSV, a
        procedure off the allow-list, a command), 400 `bad_cypher` for invalid Cypher (the query is in
        the message), 504 `deadline_exceeded` past the timeout, 400 `llm_unavailable` with no model
        configured (a request this server cannot serve as configured; 502 is kept for a model endpoint
        that fails)."""
        from graphstrata import text2cypher
        from graphstrata.cypher_guard import CypherRefused
        from graphstrata.limits import is_blank

        if is_blank(q.question):
            raise ApiError(400, "empty_question", "the question is empty")
        check_length(q.question, settings)
        if not settings.llm_enabled:
            raise ApiError(
                400,
                "llm_unavailable",
                "text-to-Cypher needs a language model and none is configured (OPENAI_BASE_URL/OPENAI_API_KEY and "
                "GRAPHSTRATA_CHAT_MODEL); write the query yourself: `graphstrata cypher --query '…'` or a library "
                "query",
            )
        gs = await run_in_threadpool(state.gs)
        draft = await state.bounded.run(
            request, lambda: text2cypher.draft(gs.db, gs.llm, q.question), settings.request_timeout
        )

        def work() -> dict[str, Any]:
            answer = text2cypher.run(
                gs.db,
                draft.cypher,
                q.question,
                draft.explanation,
                max_rows=settings.cypher_max_rows,
                timeout=settings.cypher_timeout,
            )
            return answer.model_dump(mode="json")

        try:
            return await state.bounded.run(request, work, settings.cypher_timeout + 5)
        except CypherRefused as e:
            raise ApiError(403, e.code, f"{e}: {draft.cypher}") from e
        except text2cypher.CypherTimeout as e:
            raise ApiError(504, "deadline_exceeded", f"{e}: {draft.cypher}") from e
        except text2cypher.CypherError as e:
            raise ApiError(400, "bad_cypher", f"{e}: {draft.cypher}") from e

    @r.get("/methods", tags=["questions"], summary="Retrieval methods and their parameters")
    def methods() -> dict[str, Any]:
        return {"methods": describe_methods()}

    return r
