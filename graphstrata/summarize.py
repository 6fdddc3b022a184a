"""Summaries where the papers ask an LLM for one: the model when configured, else an extractive
substitute — the texts nearest the group's embedding centroid (the most central ones), in their
original order, within a token cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphstrata.embed import Embedder
from graphstrata.text.tokens import count_tokens, fit, truncate

#: Most tokens of statements one summary prompt carries (the model's context holds them and the reply).
PROMPT_TOKENS = 6000


def centrality_order(vectors: np.ndarray) -> np.ndarray:
    """Indexes of `vectors`, most central first (cosine to the centroid of the unit vectors)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.argsort(-(unit @ unit.mean(0)), kind="stable")


def prompt_statements(texts: Sequence[str], vectors: np.ndarray | None, max_tokens: int = PROMPT_TOKENS) -> list[str]:
    """What a summary prompt lists: every text, most central first when vectors are given, up to
    `max_tokens` (the least central are left out, never cut)."""
    order = centrality_order(vectors) if vectors is not None and len(texts) else np.arange(len(texts))
    lengths = [count_tokens(texts[i]) for i in order]
    return [texts[order[j]] for j in fit(lengths, max_tokens)]


def central_texts(
    texts: Sequence[str], vectors: np.ndarray, max_tokens: int = 200, max_items: int | None = 3, *, cut: bool = False
) -> list[str]:
    """Up to `max_items` texts closest to the centroid of `vectors`, within `max_tokens`, kept in input
    order. When the most central text alone is over the cap, it is kept whole, or with `cut` the
    texts that fit are kept and, if none does, the most central one cut to the cap."""
    if not len(texts):
        return []
    order = centrality_order(vectors)
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
    """(summary, extractor): the LLM's summary of the texts (most central first, up to
    :data:`PROMPT_TOKENS`), or the central texts joined (extractor 'extractive')."""
    keep = [i for i, t in enumerate(texts) if t and t.strip()]
    texts = [texts[i] for i in keep]
    vectors = vectors[keep] if vectors is not None and len(keep) else vectors
    if not texts:
        return "", "extractive"
    if llm is not None:
        body = "\n".join(f"- {t}" for t in prompt_statements(texts, vectors))
        messages = [{"role": "user", "content": f"{instruction}\n\n{body}"}]
        # the reply capped at twice the extractive cap: a summary that does not stop costs bounded time
        return llm.chat(messages, stage=stage, max_tokens=2 * max_tokens).strip(), "llm"
    vecs = vectors if vectors is not None else embedder.embed(texts)
    return " ".join(central_texts(texts, vecs, max_tokens)), "extractive"
