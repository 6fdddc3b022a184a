"""Answers from retrieved context, in ONE prompt format for every method (NodeRAG §4 insists on
it, so methods are compared on retrieval alone), citing the node ids the answer rests on."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from graphstrata.config import Settings, get_settings
from graphstrata.retrieval.base import RetrievalResult

NO_MODEL = (
    "No language model is configured (set OPENAI_BASE_URL and/or OPENAI_API_KEY, and GRAPHSTRATA_CHAT_MODEL); "
    "here is the retrieved evidence, best first."
)

SYSTEM = (
    "You answer questions using only the numbered context passages you are given. "
    "Cite the passages you use as [n] right after the statement they support. "
    "If the context does not contain the answer, say that you do not know. Be concise."
)


class Answer(BaseModel):
    question: str
    method: str
    answer: str | None = Field(description="the model's answer; None when no model is configured")
    citations: list[str] = Field(default_factory=list, description="node ids the answer cites")
    model: str | None = None
    note: str | None = None
    retrieval: RetrievalResult


def build_messages(
    question: str, result: RetrievalResult, history: list[dict[str, str]] | None = None
) -> list[dict[str, str]]:
    """The answer prompt. ``history``: earlier turns of a conversation (``role`` user/assistant,
    ``content``), placed before the question so a follow-up can refer to them."""
    context = "\n\n".join(f"[{i}] {item.text}" for i, item in enumerate(result.items, 1))
    user = f"Context:\n{context or '(no context was found)'}\n\nQuestion: {question}\nAnswer:"
    return [{"role": "system", "content": SYSTEM}, *(history or []), {"role": "user", "content": user}]


def cited_ids(text: str, result: RetrievalResult) -> list[str]:
    ids: list[str] = []
    for n in re.findall(r"\[(\d+)\]", text):
        i = int(n) - 1
        if 0 <= i < len(result.items) and result.items[i].node_id not in ids:
            ids.append(result.items[i].node_id)
    return ids


EMPTY_ANSWER = "The model returned an empty answer; the retrieved evidence follows."
UNCITED = (
    "The answer cites none of the context passages ([n]): it may not rest on the retrieved evidence, which follows."
)


def answer_note(text: str, citations: list[str], result: RetrievalResult) -> str | None:
    """What a reader must know about an answer a (small) model got wrong: empty, or citing nothing."""
    if not text.strip():
        return EMPTY_ANSWER
    if result.items and not citations:
        return UNCITED
    return None


def answer(question: str, result: RetrievalResult, settings: Settings | None = None, client: Any = None) -> Answer:
    """``client``: the caller's shared LLM client (by default one is opened for the call)."""
    settings = settings or get_settings()
    if not settings.llm_enabled:
        return Answer(question=question, method=result.method, answer=None, note=NO_MODEL, retrieval=result)
    from graphstrata.llm import LLMClient

    with contextlib.nullcontext(client) if client is not None else LLMClient.from_settings(settings) as llm:
        text = llm.chat(build_messages(question, result), stage="answer")
    citations = cited_ids(text, result)
    return Answer(
        question=question,
        method=result.method,
        answer=text,
        citations=citations,
        model=settings.chat_model,
        note=answer_note(text, citations, result),
        retrieval=result,
    )


class AnswerStream:
    """An answer as the model writes it: iterate for text pieces; once the iteration ends, ``answer``
    holds the whole :class:`Answer` (text, citations). Same prompt and cache as :func:`answer`.

    With no model configured the iteration yields nothing and ``answer`` carries the evidence note.
    ``client``: an :class:`~graphstrata.llm.LLMClient` to use (one shared by a server); by default a
    client for ``settings`` is opened and closed around the iteration. ``history``: earlier turns of a
    conversation (see :func:`build_messages`). Closing the iterator early
    (``close()``, a reader gone) stops the model's stream; ``answer`` then stays None.
    """

    def __init__(
        self,
        question: str,
        result: RetrievalResult,
        settings: Settings | None = None,
        client: Any = None,
        history: list[dict[str, str]] | None = None,
    ) -> None:
        self.question = question
        self.history = history
        self.result = result
        self.settings = settings or get_settings()
        self.client = client
        self.answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        if not self.settings.llm_enabled:
            self.answer = Answer(
                question=self.question, method=self.result.method, answer=None, note=NO_MODEL, retrieval=self.result
            )
            return
        from graphstrata.llm import LLMClient

        client = self.client or LLMClient.from_settings(self.settings)
        upstream = client.chat_stream(build_messages(self.question, self.result, self.history), stage="answer")
        try:
            pieces: list[str] = []
            for piece in upstream:
                pieces.append(piece)
                yield piece
            text = "".join(pieces)
            citations = cited_ids(text, self.result)
            self.answer = Answer(
                question=self.question,
                method=self.result.method,
                answer=text,
                citations=citations,
                model=getattr(client, "chat_model", None) or self.settings.chat_model,
                note=answer_note(text, citations, self.result),
                retrieval=self.result,
            )
        finally:
            upstream.close()  # left early: closes the model's HTTP stream now, not at garbage collection
            if self.client is None:
                client.close()
