"""Answers from retrieved context, in ONE prompt format for every method (NodeRAG §4 insists on
it, so methods are compared on retrieval alone), citing the node ids the answer rests on."""

from __future__ import annotations

import re

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


def build_messages(question: str, result: RetrievalResult) -> list[dict[str, str]]:
    context = "\n\n".join(f"[{i}] {item.text}" for i, item in enumerate(result.items, 1))
    user = f"Context:\n{context or '(no context was found)'}\n\nQuestion: {question}\nAnswer:"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def cited_ids(text: str, result: RetrievalResult) -> list[str]:
    ids: list[str] = []
    for n in re.findall(r"\[(\d+)\]", text):
        i = int(n) - 1
        if 0 <= i < len(result.items) and result.items[i].node_id not in ids:
            ids.append(result.items[i].node_id)
    return ids


def answer(question: str, result: RetrievalResult, settings: Settings | None = None) -> Answer:
    settings = settings or get_settings()
    if not settings.llm_enabled:
        return Answer(question=question, method=result.method, answer=None, note=NO_MODEL, retrieval=result)
    from graphstrata.llm import LLMClient

    with LLMClient.from_settings(settings) as client:
        text = client.chat(build_messages(question, result), stage="answer")
    return Answer(
        question=question,
        method=result.method,
        answer=text,
        citations=cited_ids(text, result),
        model=settings.chat_model,
        retrieval=result,
    )
