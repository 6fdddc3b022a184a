"""Summaries where the papers ask an LLM for one: the model when configured, else an extractive
substitute — the texts nearest the group's embedding centroid (the most central ones), in their
original order, within a token cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphstrata.embed import Embedder
from graphstrata.ingest.chunk import count_tokens


def central_texts(texts: Sequence[str], vectors: np.ndarray, max_tokens: int = 200, max_items: int = 3) -> list[str]:
    """Up to `max_items` texts closest to the centroid of `vectors`, kept in input order, within `max_tokens`."""
    if not len(texts):
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centroid = unit.mean(0)
    order = np.argsort(-(unit @ centroid), kind="stable")
    chosen, used = [], 0
    for i in order:
        n = count_tokens(texts[i])
        if chosen and used + n > max_tokens:
            continue
        chosen.append(int(i))
        used += n
        if len(chosen) >= max_items:
            break
    return [texts[i] for i in sorted(chosen)]


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
