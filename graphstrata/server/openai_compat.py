"""An OpenAI-compatible face of the API, so chat front ends (Open WebUI, LibreChat) and any OpenAI
SDK can talk to the graph: ``GET /v1/models`` lists one model per retrieval method
(``graphstrata-<method>``), ``POST /v1/chat/completions`` answers the conversation's last user
message from that method's context, streamed (server-sent ``chat.completion.chunk``s, then
``[DONE]``) or not.

Earlier turns of the conversation go to the model as conversation history, and retrieval searches
for the last user message made standalone from them (:mod:`graphstrata.server.conversation`); the
reply says what was searched when that differs. The answer's ``[n]`` citations are resolved into a
"Sources" list appended to the text (front ends show only the text). With no model configured the
reply is a short digest of the evidence (:mod:`graphstrata.server.chat_reply`). Responses carry
``usage`` (streamed: a last chunk with it when ``stream_options.include_usage``). Routes sit behind
the same API-key middleware as the rest of the API.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from graphstrata.server.chat_reply import EvidenceMode, prompt_of, reply_pieces, usage
from graphstrata.server.conversation import SearchQuery, search_query
from graphstrata.server.errors import ApiError, error_body

log = logging.getLogger("graphstrata.server")

PREFIX = "graphstrata-"
HISTORY_QUESTIONS = 4  # earlier turns kept: at most this many questions' worth of text


class ContentPart(BaseModel):
    """One part of a message's content list; only ``text`` parts carry text (images are ignored)."""

    model_config = ConfigDict(extra="allow", strict=True)
    type: str
    text: str | None = None

    @model_validator(mode="after")
    def _text_part_has_text(self) -> ContentPart:
        if self.type == "text" and self.text is None:
            raise ValueError("a text part needs `text` (a string)")
        return self


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The text of a message; OpenAI's content-part lists keep their ``text`` parts."""
        if isinstance(self.content, list):
            return "\n".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatCompletionIn(BaseModel):
    # clients send sampling options (temperature, top_p, …) that graphstrata does not use; the fields
    # it does use are strict: `"stream": "yes"` is refused, not read as true
    model_config = ConfigDict(extra="allow", strict=True)
    model: str = Field(description="graphstrata-<method> (GET /v1/models)")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    evidence: EvidenceMode = Field(
        "digest", description="with no model configured: a short digest of the evidence, or all of it (`full`)"
    )


def method_names() -> list[str]:
    from graphstrata.retrieval.base import registered_methods

    return list(registered_methods())


def model_card(method: str) -> dict[str, Any]:
    return {"id": PREFIX + method, "object": "model", "created": 0, "owned_by": "graphstrata"}


def method_of(model: str) -> str:
    method = model.removeprefix(PREFIX)
    if method not in method_names():
        available = ", ".join(PREFIX + m for m in method_names())
        raise ApiError(404, "not_found", f"no model {model!r}; available: {available}")
    return method


def conversation(messages: list[ChatMessage], max_chars: int) -> tuple[str, list[dict[str, str]]]:
    """(the question: the last user message, the earlier user/assistant turns as history). The
    question is held to the HTTP API's rules: not blank (zero-width characters count as blank), at
    most ``max_chars`` (GRAPHSTRATA_MAX_QUESTION_CHARS). The history is the most recent turns whose
    text fits :data:`HISTORY_QUESTIONS` × ``max_chars`` together (as a chat model's context window
    would keep them)."""
    from graphstrata.limits import is_blank, question_too_long

    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last is None or is_blank(messages[last].text()):
        raise ApiError(400, "empty_question", "no user message with text")
    question = messages[last].text()
    too_long = question_too_long(question, max_chars)
    if too_long:
        raise ApiError(400, "bad_parameters", too_long)
    history: list[dict[str, str]] = []
    budget = HISTORY_QUESTIONS * max_chars  # the model's context and the rewrite's prompt stay bounded
    for m in reversed(messages[:last]):  # the most recent turns that fit; older ones are dropped
        text = m.text()
        if m.role not in ("user", "assistant") or is_blank(text):
            continue
        if len(text) > budget:
            break
        budget -= len(text)
        history.append({"role": m.role, "content": text})
    return question, history[::-1]


def completion(
    cid: str, model: str, content: str, usage: dict[str, int], query: SearchQuery, finish: str = "stop"
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": usage,
        "graphstrata": {"searched": query.model_dump()},  # what retrieval saw (clients ignore unknown keys)
    }


def chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


async def stream_reply(stream: Any, reply: Reply, cid: str, model: str, include_usage: bool) -> AsyncIterator[bytes]:
    """``chat.completion.chunk`` events; a failure after the first byte (the model's stream broke)
    becomes an ``{"error": …}`` event, as OpenAI sends it, since the status line is gone. With
    ``include_usage`` a last chunk with no choices carries the ``usage``, as OpenAI sends it."""
    from graphstrata.server.state import classify_error

    pieces = reply.pieces(stream)
    try:
        yield chunk(cid, model, {"role": "assistant", "content": ""})
        try:
            async for piece in iterate_in_threadpool(pieces):
                if piece:
                    yield chunk(cid, model, {"content": piece})
        except Exception as e:
            code, message = classify_error(e)
            if code == "internal":
                log.exception("chat completion stream failed")
                message = "the answer stream failed"
            yield f"data: {json.dumps(error_body(code, message))}\n\n".encode()
            return
        yield chunk(cid, model, {}, "stop")
        if include_usage:
            final = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
            body = final | {"choices": [], "usage": reply.usage(stream)}
            yield f"data: {json.dumps(body)}\n\n".encode()
        yield b"data: [DONE]\n\n"
    finally:
        pieces.close()  # a client gone mid-answer: closes the model's stream now


class Reply:
    """One reply's text pieces and, once they are all out, its usage."""

    def __init__(self, query: SearchQuery, method: str, evidence: EvidenceMode, messages: list[dict[str, str]]):
        self.query, self.method, self.evidence, self.messages = query, method, evidence, messages
        self.text: list[str] = []

    def pieces(self, stream: Any) -> Iterator[str]:
        for piece in reply_pieces(stream, self.query, self.method, self.evidence):
            self.text.append(piece)
            yield piece

    def usage(self, stream: Any) -> dict[str, int]:
        return usage(prompt_of(stream, self.messages), "".join(self.text))


def router(state: Any) -> APIRouter:
    """The /v1 routes over the server's shared :class:`~graphstrata.server.state.ServerState`."""
    api = APIRouter(prefix="/v1", tags=["openai-compatible"])

    @api.get("/models", summary="One model per retrieval method (graphstrata-<method>)")
    def list_models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card(m) for m in method_names()]}

    @api.get("/models/{model}", summary="One model")
    def get_model(model: str) -> dict[str, Any]:
        return model_card(method_of(model))

    @api.post(
        "/chat/completions",
        summary="Answer the last user message from the graph (OpenAI chat completions)",
        responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}},
    )
    async def chat_completions(body: ChatCompletionIn, request: Request) -> Any:
        """The last user message is the question, earlier turns its context; the answer cites
        `[n]` and ends with the sources. `stream: true` sends `chat.completion.chunk` events.
        Retrieval (and, not streamed, the whole answer) is bounded like `/ask`: 504
        `deadline_exceeded` after GRAPHSTRATA_REQUEST_TIMEOUT seconds, stopped when the client leaves."""
        from graphstrata.generate import AnswerStream

        method = method_of(body.model)
        question, history = conversation(body.messages, state.settings.max_question_chars)
        gs = await run_in_threadpool(state.gs)
        timeout = state.settings.request_timeout
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        searched: list[SearchQuery] = []

        def answer_stream() -> AnswerStream:
            # what retrieval searches for carries the conversation's subject (a follow-up's "it")
            query = search_query(question, history, state.settings, gs.llm)
            searched.append(query)
            result = gs.retrieve(query.searched, method)
            return AnswerStream(question, result, state.settings, client=gs.llm, history=history)

        said = [{"role": m.role, "content": m.text()} for m in body.messages]
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        if body.stream:
            stream = await state.bounded.run(request, answer_stream, timeout)
            reply = Reply(searched[0], method, body.evidence, said)
            return StreamingResponse(
                stream_reply(stream, reply, cid, body.model, include_usage),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )

        def whole() -> tuple[str, dict[str, int]]:
            stream = answer_stream()
            reply = Reply(searched[0], method, body.evidence, said)
            text = "".join(reply.pieces(stream))
            return text, reply.usage(stream)

        text, counted = await state.bounded.run(request, whole, timeout)
        return completion(cid, body.model, text, counted, searched[0])

    return api
