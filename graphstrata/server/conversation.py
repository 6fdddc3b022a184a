"""What retrieval searches for in a conversation: the last user message made to stand on its own.

A chat front end sends the whole conversation, and a follow-up ("Who directed it?") names nothing
that retrieval could find. So the question retrieval sees carries the conversation's subject:

* with a language model configured, the model rewrites the last user message into a standalone
  question from the earlier turns (the usual "condense question" step of conversational RAG);
* without one (or when that call fails), the names that the graph's entity recognition finds in the
  earlier user turns (the same recognition retrieval uses on a question: spaCy's named entities and
  runs of proper nouns) are added to the last message, most recent turn first.

The first message of a conversation is searched as it is. The reply says what was searched when it
is not the last message itself (:func:`searched_note`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    from graphstrata.config import Settings
    from graphstrata.llm import LLMClient

log = logging.getLogger("graphstrata.server")

LLM_STAGE = "condense_question"
#: earlier names added offline: enough for a subject, few enough not to drown the question
MAX_NAMES = 6
#: earlier turns the model sees for a rewrite, and characters of each (long answers are cut)
MAX_TURNS = 8
TURN_CHARS = 1_000

REWRITE_PROMPT = (
    "You rewrite the last user message of a conversation into a standalone question that can be "
    "understood without the conversation: replace pronouns and references ('it', 'he', 'that film') "
    "by the names they refer to, and keep every name the message itself uses. Do not answer it. "
    "Reply with the question only."
)


class SearchQuery(BaseModel):
    """The question retrieval saw, and how it came from the conversation."""

    question: str = Field(description="the last user message")
    searched: str = Field(description="what retrieval searched for")
    how: Literal["last_message", "rewritten", "earlier_entities"]
    entities: list[str] = Field(default_factory=list, description="names added from earlier turns")


def _transcript(history: list[dict[str, str]]) -> str:
    lines = []
    for turn in history[-MAX_TURNS:]:
        text = " ".join(turn["content"].split())
        text = text if len(text) <= TURN_CHARS else text[: TURN_CHARS - 1] + "…"
        lines.append(f"{turn['role']}: {text}")
    return "\n".join(lines)


def rewrite(question: str, history: list[dict[str, str]], llm: LLMClient) -> str | None:
    """The model's standalone question; None when the call fails or says nothing usable."""
    from graphstrata.llm import LLMError

    messages = [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": f"Conversation:\n{_transcript(history)}\n\nLast user message: {question}"},
    ]
    try:
        text = llm.chat(messages, stage=LLM_STAGE)
    except LLMError as e:
        log.warning("the question was not rewritten (%s); searching with the earlier turns' names", e)
        return None
    text = " ".join(text.split()).strip().strip('"')
    # a rewrite is one question: a reply much longer than the conversation is not one
    return text if text and len(text) <= 4 * (len(question) + 200) else None


def earlier_entities(question: str, history: list[dict[str, str]]) -> list[str]:
    """Names in the earlier user turns (most recent first) that the last message does not already name."""
    from graphstrata.retrieval.linking import spacy_query_entities

    have = normalize_name(question)
    names: list[str] = []
    seen: set[str] = set()
    for turn in reversed(history):
        if turn["role"] != "user":
            continue  # the assistant's turns are our own evidence or answer: they would echo it
        for name in spacy_query_entities(turn["content"]):
            key = normalize_name(name)
            if key and key not in seen and key not in have:
                seen.add(key)
                names.append(name)
    return names[:MAX_NAMES]


def search_query(
    question: str, history: list[dict[str, str]], settings: Settings, llm: LLMClient | None
) -> SearchQuery:
    """What retrieval searches for, given the last user message and the earlier turns."""
    if not any(t["role"] == "user" for t in history):
        return SearchQuery(question=question, searched=question, how="last_message")
    if settings.llm_enabled and llm is not None:
        rewritten = rewrite(question, history, llm)
        if rewritten is not None:
            return SearchQuery(question=question, searched=rewritten, how="rewritten")
    names = earlier_entities(question, history)
    if not names:
        return SearchQuery(question=question, searched=question, how="last_message")
    return SearchQuery(
        question=question,
        searched=f"{question} ({', '.join(names)})",
        how="earlier_entities",
        entities=names,
    )


def searched_note(query: SearchQuery) -> str:
    """The reply's last line when the search differs from the last message."""
    if query.how == "last_message":
        return ""
    how = "rewritten from the conversation" if query.how == "rewritten" else "with names from earlier turns"
    return f'\n\nSearched ({how}): "{query.searched}"'
