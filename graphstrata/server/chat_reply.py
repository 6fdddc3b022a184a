"""The text of a /v1 chat reply around the model's answer, and its token ``usage``.

* With a model: the answer, then the cited sources (front ends show only the text).
* Without one: a short evidence digest — the best few passages, each cut at a sentence, with their
  documents — bounded to about :data:`DIGEST_CHARS`, and where the full evidence is: the same request
  with ``"evidence": "full"``, or ``POST /retrieve`` with the question searched.
* Then, when the conversation changed the question, what was searched
  (:func:`graphstrata.server.conversation.searched_note`).

``usage`` is counted in cl100k tokens (the tokenizer every budget of graphstrata is counted in): the
prompt is the answer prompt the model was sent (with no model, the conversation's messages), the
completion is the reply's text. An endpoint's own count can differ by its tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from graphstrata.server.conversation import SearchQuery, searched_note

EvidenceMode = Literal["digest", "full"]

DIGEST_ITEMS = 3
DIGEST_ITEM_CHARS = 280  # a passage's first sentences: enough to see the answer
DIGEST_CHARS = 1_500  # the whole digest (note, passages, pointer): one screen of a chat window
FULL_ITEM_CHARS = 600  # per item with "evidence": "full"
NO_MODEL_SHORT = "No language model is configured; the best evidence found, with its sources:"


def cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, cut after a sentence when one ends past a third of it."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    stop = max(head.rfind(". "), head.rfind("? "), head.rfind("! "))
    return head[: stop + 1] if stop > limit // 3 else head.rstrip() + "…"


def where(item: Any) -> str:
    return ", ".join(item.doc_titles) or item.label


def sources(answer: Any) -> str:
    """The cited items as a numbered list (their document titles and node ids)."""
    lines = []
    for i, item in enumerate(answer.retrieval.items, 1):
        if item.node_id in answer.citations:
            lines.append(f"[{i}] {where(item)} ({item.label} {item.node_id})")
    return "\n\nSources:\n" + "\n".join(lines) if lines else ""


def full_evidence(answer: Any) -> str:
    """Every retrieved item, best first (``"evidence": "full"``)."""
    from graphstrata.generate import NO_MODEL

    parts = [answer.note or NO_MODEL]
    for i, item in enumerate(answer.retrieval.items, 1):
        parts.append(f"[{i}] ({where(item)}) {cut(item.text, FULL_ITEM_CHARS)}")
    if len(parts) == 1:
        parts.append("(no context was found)")
    return "\n\n".join(parts)


def digest(answer: Any, query: SearchQuery, method: str) -> str:
    """The best few items, short, and where the rest is; at most about DIGEST_CHARS characters."""
    items = answer.retrieval.items
    if not items:
        return f"{NO_MODEL_SHORT}\n\n(no context was found)"
    parts = [NO_MODEL_SHORT]
    used = len(NO_MODEL_SHORT)
    for i, item in enumerate(items[:DIGEST_ITEMS], 1):
        text = item.text.removeprefix(item.doc_titles[0] + "\n") if item.doc_titles else item.text  # title once
        line = f"[{i}] {where(item)}: {cut(text, DIGEST_ITEM_CHARS)}"
        if used + len(line) > DIGEST_CHARS - 300:  # room for the pointer below
            break
        parts.append(line)
        used += len(line) + 2
    body = json.dumps({"question": query.searched, "method": method}, ensure_ascii=False)
    if len(body) > 200:
        body = json.dumps({"question": "…", "method": method})
    parts.append(
        f'({len(items)} passages in all: the full evidence with `"evidence": "full"` in the request, '
        f"or POST /retrieve {body})"
    )
    return "\n\n".join(parts)


def reply_pieces(stream: Any, query: SearchQuery, method: str, evidence: EvidenceMode) -> Iterator[str]:
    """The model's text as it comes, then the sources (or, with no model, the evidence), then what was searched."""
    yield from stream
    answer = stream.answer
    if answer.answer is not None:
        yield sources(answer)
    else:
        yield full_evidence(answer) if evidence == "full" else digest(answer, query, method)
    yield searched_note(query)


def usage(prompt: list[dict[str, str]], text: str) -> dict[str, int]:
    """OpenAI's ``usage`` object, counted in cl100k tokens."""
    from graphstrata.text.tokens import count_tokens

    prompt_tokens = sum(count_tokens(m.get("content") or "") + 4 for m in prompt)  # +4: OpenAI's per-message framing
    completion_tokens = count_tokens(text)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def prompt_of(stream: Any, conversation: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages the answer was made from: the answer prompt when a model answered, else the conversation."""
    from graphstrata.generate import build_messages

    if stream.answer is not None and stream.answer.answer is not None:
        return build_messages(stream.question, stream.result, stream.history)
    return conversation
