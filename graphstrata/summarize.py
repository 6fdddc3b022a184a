"""Summaries where the papers ask an LLM for one: the model when configured, else an extractive
substitute — the texts nearest the group's embedding centroid (the most central ones), in their
original order, within a token cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphstrata.embed import Embedder
from graphstrata.text.tokens import count_tokens, fit, truncate


def central_texts(
    texts: Sequence[str], vectors: np.ndarray, max_tokens: int = 200, max_items: int | None = 3, *, cut: bool = False
) -> list[str]:
    """Up to `max_items` texts closest to the centroid of `vectors`, within `max_tokens`, kept in input
    order. When the most central text alone is over the cap, it is kept whole, or with `cut` the
    texts that fit are kept and, if none does, the most central one cut to the cap."""
    if not len(texts):
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    order = np.argsort(-(unit @ unit.mean(0)), kind="stable")
    lengths = [count_tokens(texts[i]) for i in order]
    taken = fit(lengths, max_tokens, first_always=not cut, max_items=max_items)
    if not taken:
        return [truncate(texts[order[0]], max_tokens)]
    return [texts[i] for i in sorted(int(order[j]) for j in taken)]


def summarize(
    texts: Sequence[str],
    embedder: Embedder,
    llm: Any = None,
    instruction: str = "Summarize the following statements in two or three sentences.",
    stage: str = "summary",
    max_tokens: int = 200,
    vectors: np.ndarray | None = None,
) -> tuple[str, str]:
    """(summary, extractor): the LLM's summary, or the central texts joined (extractor 'extractive')."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        return "", "extractive"
    if llm is not None:
        body = "\n".join(f"- {t}" for t in texts)
        messages = [{"role": "user", "content": f"{instruction}\n\n{body}"}]
        return llm.chat(messages, stage=stage).strip(), "llm"
    vecs = vectors if vectors is not None else embedder.embed(texts)
    return " ".join(central_texts(texts, vecs, max_tokens)), "extractive"
